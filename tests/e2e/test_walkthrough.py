"""The README's walkthrough and Python example and the docs' curl walkthrough, run as a user would run
them, unchanged but for the address, against one `lore-up` on embedded stores, from the repository's
root: curl first, then the `lore` commands (which find the KB built and say it is up to date), then
the Python example."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from lore_common.testing.processes import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "walkthrough.sh"
HTTP_SCRIPT = ROOT / "docs" / "walkthrough-http.sh"
EXAMPLE = ROOT / "docs" / "example.py"


def readme_block(marker: str, language: str) -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- {marker} -->\n```{language}\n(.*?)```", readme, re.S)
    assert found, f"README.md has no {marker} block"
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


def readme_table(url: str) -> dict[str, Any]:
    """The README's table example ("every person and their discovery") on the walkthrough's KB."""
    base = f"{url}/api/v1/gen/pipeline"
    body = {"question": "every person and their discovery", "kb_name": "people"}
    task = httpx.post(f"{base}/submit", json=body, timeout=10).json()
    deadline = time.monotonic() + 60
    while (status := httpx.get(f"{base}/status/{task['task_id']}", timeout=10).json())["status"] in (
        "pending",
        "running",
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    return dict(status)


def test_the_readme_shows_the_walkthrough_and_example_the_docs_include() -> None:
    assert readme_block("walkthrough", "bash") == SCRIPT.read_text()
    assert readme_block("python-example", "python") == EXAMPLE.read_text()
    started = (ROOT / "docs" / "getting-started.md").read_text()
    assert '--8<-- "walkthrough.sh"' in started and '--8<-- "walkthrough-http.sh"' in started


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
        http = subprocess.run(
            ["bash", "-e", "-c", HTTP_SCRIPT.read_text().replace("http://127.0.0.1:8000", url)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        cli_env = {**os.environ, "LORE_URL": url}
        cli = subprocess.run(
            ["bash", "-e", "-c", SCRIPT.read_text()],
            cwd=ROOT,
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        example = subprocess.run(
            [sys.executable, "-c", EXAMPLE.read_text().replace("http://127.0.0.1:8000", url)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        table = readme_table(url)
    finally:
        launcher.stop()
    assert http.returncode == 0, http.stderr + launcher.log_tail()
    replies = documents(http.stdout)
    chat = next(r for r in replies if "citations" in r)
    assert "Grace Hopper" in chat["response"] and chat["citations"][0]["source_file"] == "hopper.md"
    # A whole sentence with its subject, not the heading and not a fragment.
    assert re.fullmatch(r"Grace Hopper developed [^#\n]*\. \[1\]", chat["response"]), chat["response"]
    search = replies[-1]
    assert "peanut" in search["results"][0]["memory"].lower()

    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "up to date" in cli.stdout  # the KB the curl walkthrough built
    answer = cli.stdout.split("Sources")[0]
    assert "Grace Hopper" in answer and "[1] hopper.md" in cli.stdout
    assert "peanuts" in cli.stdout.split("score")[-1]  # the search's table of memories

    # The README's table example: the people of the KB and their discoveries, each with its evidence.
    assert table["status"] == "completed", table
    rows = {row["name"]: row for row in table["result"]["csv_data"]}
    assert {"Marie Curie", "Pierre Curie", "Grace Hopper"} <= set(rows), rows
    assert rows["Marie Curie"]["discovery"] == "polonium and radium"
    assert "discovered polonium" in rows["Pierre Curie"]["evidence"]

    assert example.returncode == 0, example.stderr
    assert "Grace Hopper" in example.stdout and "[1] hopper.md" in example.stdout
    assert "peanuts" in example.stdout.splitlines()[-1]
