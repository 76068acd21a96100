"""The README's walkthrough, run as a user would run it: its curl commands, unchanged but for the
address, against `lore-up` on embedded stores, from the repository's root."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from lore_common.testing.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "walkthrough.sh"


def readme_walkthrough() -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"<!-- walkthrough -->\n```bash\n(.*?)```", readme, re.S)
    assert found, "README.md has no walkthrough block"
    return found.group(1)


def documents(text: str) -> list[dict[str, Any]]:
    """The JSON bodies curl printed one after the other."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def test_the_readme_shows_the_walkthrough_the_docs_include() -> None:
    assert readme_walkthrough() == SCRIPT.read_text()
    assert '--8<-- "walkthrough.sh"' in (ROOT / "docs" / "getting-started.md").read_text()


def test_the_walkthrough_runs_against_lore_up(tmp_path: Path) -> None:
    ports = {name: free_port() for name in ("gateway", "docdb", "gen", "mem")}
    env = {"LORE__GATEWAY__PORT": str(ports["gateway"]), "LORE_CONFIG_DIR": str(ROOT / "config")}
    for name in ("docdb", "gen", "mem"):
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
        env[f"LORE__{name.upper()}__SERVER__DATA_DIR"] = str(tmp_path / "data" / name)
        env[f"LORE__GATEWAY__{name.upper()}_URL"] = f"http://127.0.0.1:{ports[name]}"
    url = f"http://127.0.0.1:{ports['gateway']}"
    launcher = ServerProcess(
        [sys.executable, "-m", "lore_gateway.launch"], env=env, cwd=tmp_path, log_path=tmp_path / "lore.log"
    )
    try:
        launcher.wait_healthy(f"{url}/health", timeout=120)
        script = readme_walkthrough().replace("http://127.0.0.1:8000", url)
        done = subprocess.run(
            ["bash", "-e", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=240, check=False
        )
    finally:
        launcher.stop()
    assert done.returncode == 0, done.stderr + launcher.log_tail()
    replies = documents(done.stdout)
    chat = next(r for r in replies if "citations" in r)
    assert "Grace Hopper" in chat["response"] and chat["citations"][0]["source_file"] == "hopper.md"
    search = replies[-1]
    assert "peanut" in search["results"][0]["memory"].lower()
