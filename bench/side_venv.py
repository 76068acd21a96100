"""The systems Lore is compared with (mem0, LightRAG) run in venvs of their own under bench/, never in
Lore's environment: each bench half is a driver script run with that venv's Python, reading a JSON job
on stdin and printing one JSON object as its last line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def venv_python(name: str, *requirements: str) -> Path:
    """bench/.venv-`name` with `requirements` installed (made once, brought up to date on each run)."""
    venv = HERE / f".venv-{name}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(["uv", "venv", "-q", str(venv), "-p", sys.executable], check=True)
    subprocess.run(["uv", "pip", "install", "-q", "--python", str(python), *requirements], check=True)
    return python


def run_driver(python: Path, script: str, job: dict[str, Any]) -> dict[str, Any]:
    """bench/`script` run by `python` on `job`; what it printed last."""
    done = subprocess.run(
        [str(python), str(HERE / script)], input=json.dumps(job), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
