"""The outbound guard: URLs a user names never reach loopback, private or metadata addresses."""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from lore_core.errors import LoreError
from lore_core.outbound import DestinationRefused, check_url, guarded_client, refusal
from lore_core.settings import load_settings


class _Site(BaseHTTPRequestHandler):
    """A loopback site: `/secret` answers a secret, `/hop` redirects to the cloud's metadata address."""

    def do_GET(self) -> None:
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/iam/security-credentials/")
            self.end_headers()
            return
        if self.path == "/hop-local":
            self.send_response(302)
            port = self.server.server_address[1]  # type: ignore[index]  # an (host, port) tuple for AF_INET
            self.send_header("Location", f"http://127.0.0.1:{port}/secret")
            self.end_headers()
            return
        body = b"loopback-secret-7f3a"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def loopback_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.5",
        "192.168.1.1",
        "100.64.0.1",  # shared address space (CGNAT)
        "169.254.169.254",  # AWS, GCP, Azure metadata
        "100.100.100.200",  # Alibaba metadata
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "::1",
        "fd00:ec2::254",  # AWS metadata over IPv6
        "fe80::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:169.254.169.254",
        "2002:a9fe:a9fe::",  # 6to4 around 169.254.169.254
        "64:ff9b::a9fe:a9fe",  # NAT64 around 169.254.169.254
        "ff02::1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_metadata_address_is_named_in_the_refusal() -> None:
    assert "metadata" in (refusal(ipaddress.ip_address("169.254.169.254")) or "")
    assert "metadata" in (refusal(ipaddress.ip_address("fd00:ec2::254")) or "")


async def test_check_url_refuses_literal_and_resolved_loopback_with_a_client_error() -> None:
    for url in ("http://127.0.0.1:9/x", "http://localhost/", "http://[::1]/", "http://[::ffff:7f00:1]/"):
        with pytest.raises(DestinationRefused) as caught:
            await check_url(url)
        assert isinstance(caught.value, LoreError)
        assert caught.value.status_code == 400


async def test_check_url_refuses_other_schemes_and_hides_credentials() -> None:
    for url in ("file:///etc/passwd", "gopher://example.com/", "ftp://example.com/"):
        with pytest.raises(DestinationRefused):
            await check_url(url)
    with pytest.raises(DestinationRefused) as caught:
        await check_url("http://user:hunter2@127.0.0.1/")
    assert "hunter2" not in caught.value.message


async def test_an_allowed_range_opens_exactly_that_range() -> None:
    assert str(await check_url("http://10.1.2.3/", ["10.0.0.0/8"])) == "10.1.2.3"
    with pytest.raises(DestinationRefused):
        await check_url("http://192.168.1.1/", ["10.0.0.0/8"])
    with pytest.raises(DestinationRefused):
        await check_url("http://169.254.169.254/", ["10.0.0.0/8"])


async def test_guarded_client_refuses_a_loopback_site_and_reads_it_once_allowed(loopback_site: str) -> None:
    async with guarded_client() as client:
        with pytest.raises(DestinationRefused):
            await client.get(f"{loopback_site}/secret")
    async with guarded_client(["127.0.0.0/8"]) as client:
        response = await client.get(f"{loopback_site}/secret")
    assert response.text == "loopback-secret-7f3a"


async def test_a_redirect_to_the_metadata_address_is_refused_even_from_an_allowed_site(
    loopback_site: str,
) -> None:
    async with guarded_client(["127.0.0.0/8"]) as client:
        with pytest.raises(DestinationRefused) as caught:
            await client.get(f"{loopback_site}/hop")
    assert "169.254.169.254" in caught.value.message


async def test_a_redirect_is_checked_like_the_first_url(loopback_site: str) -> None:
    # `localhost` resolves to loopback: refused at the first hop; the redirect is followed only when allowed.
    url = loopback_site.replace("127.0.0.1", "localhost")
    async with guarded_client() as client:
        with pytest.raises(DestinationRefused):
            await client.get(f"{url}/hop-local")
    async with guarded_client(["127.0.0.0/8", "::1/128"]) as client:
        response = await client.get(f"{url}/hop-local")
    assert response.text == "loopback-secret-7f3a"


async def test_the_pinned_connection_keeps_the_host_name_in_the_host_header(loopback_site: str) -> None:
    seen: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request)

    url = loopback_site.replace("127.0.0.1", "localhost")
    async with guarded_client(["127.0.0.0/8", "::1/128"], event_hooks={"request": [record]}) as client:
        response = await client.get(f"{url}/secret")
    assert response.status_code == 200
    assert seen[0].headers["host"].startswith("localhost")


def test_allow_ranges_come_from_settings_and_environment(tmp_path: object) -> None:
    settings = load_settings(str(tmp_path), {"LORE__NETWORK__ALLOW_RANGES": "[10.0.0.0/8, 'fd00::/8']"})
    assert settings.network.allow_ranges == ["10.0.0.0/8", "fd00::/8"]
    assert str(asyncio.run(check_url("http://10.9.9.9/", settings.network.allow_ranges))) == "10.9.9.9"
