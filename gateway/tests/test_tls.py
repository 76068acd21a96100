"""TLS between the gateway and a service, as the chart's `tls` option sets it up: the service serves
HTTPS through granian's command line (`GRANIAN_SSL_*`, as the image runs it), the gateway calls it at
`https://` trusting a private CA (`security.tls_ca`) and sends the internal credential."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lore_common.testing.processes import ServerProcess, free_port

TOKEN = "tls-internal-token"
# The image's command line (deploy/docker/Dockerfile), which reads GRANIAN_SSL_* from the environment.
GRANIAN = [sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--ws"]


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A private CA and a certificate it signs for 127.0.0.1: (ca.crt, tls.crt, tls.key)."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("lore test CA"))
        .issuer_name(name("lore test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("lore-gen"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.crt", folder / "tls.crt", folder / "tls.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def _answers(url: str, trusted: ssl.SSLContext) -> bool:
    try:
        return httpx.get(url, verify=trusted, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def tls_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, ssl.SSLContext]]:
    work = tmp_path_factory.mktemp("tls")
    ca, cert, key = _certificates(work)
    gen_port, gateway_port = free_port(), free_port()
    common = {"LORE_CONFIG_DIR": str(work), "LORE__SECURITY__INTERNAL_TOKEN": TOKEN}
    gen = ServerProcess(
        [*GRANIAN, "--host", "127.0.0.1", "--port", str(gen_port), "lore_gen.app:build_app"],
        env=common
        | {
            "GRANIAN_SSL_CERTIFICATE": str(cert),
            "GRANIAN_SSL_KEYFILE": str(key),
            "LORE__GEN__SERVER__DATA_DIR": str(work / "gen"),
        },
        log_path=work / "gen.log",
    )
    gateway = ServerProcess(
        [sys.executable, "-m", "lore_gateway"],
        env=common
        | {
            "LORE__GATEWAY__PORT": str(gateway_port),
            "LORE__GATEWAY__GEN_URL": f"https://127.0.0.1:{gen_port}",
            "LORE__SECURITY__TLS_CA": str(ca),
        },
        log_path=work / "gateway.log",
    )
    try:
        gateway.wait_healthy(f"http://127.0.0.1:{gateway_port}/", timeout=60)
        gen_url = f"https://127.0.0.1:{gen_port}"
        trusted = ssl.create_default_context(cafile=str(ca))
        deadline = time.monotonic() + 60
        while not _answers(f"{gen_url}/livez", trusted):
            assert time.monotonic() < deadline, gen.log_tail()
            time.sleep(0.1)
        yield f"http://127.0.0.1:{gateway_port}", gen_url, trusted
    finally:
        gateway.stop()
        gen.stop()


def test_the_gateway_reaches_a_service_over_tls_with_the_credential(
    tls_stack: tuple[str, str, ssl.SSLContext],
) -> None:
    gateway, _, _ = tls_stack
    health = httpx.get(f"{gateway}/health", timeout=10).json()
    assert health["services"]["gen"]["status"] == "up", health
    # gen itself answers (its own 404 for an unknown task): the call went over TLS with the token.
    answer = httpx.get(f"{gateway}/api/v1/gen/pipeline/status/no-such-task", timeout=10)
    assert answer.status_code == 404 and "no-such-task" in answer.text, answer.text


def test_the_service_over_tls_still_refuses_a_caller_without_the_credential(
    tls_stack: tuple[str, str, ssl.SSLContext],
) -> None:
    _, gen, trusted = tls_stack
    response = httpx.get(f"{gen}/api/v1/gen/pipeline/status/no-such-task", verify=trusted, timeout=10)
    assert response.status_code == 401
    with pytest.raises(httpx.ConnectError):  # and it speaks only TLS, with the CA's certificate
        httpx.get(f"{gen}/livez", timeout=10)
