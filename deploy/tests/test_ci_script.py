"""`.ci/run`: the linters gate the tests. The script runs with stand-ins for uv, pip and apt on PATH,
so its own control flow is what is tested."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIM = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CI_LOG"
if [ "$(basename "$0")" = uv ] && [ "$*" = "run just lint" ] && [ -n "$LINT_FAILS" ]; then exit 1; fi
exit 0
"""


def run_ci(tmp_path: Path, lint_fails: bool) -> tuple[int, list[str]]:
    shims = tmp_path / "bin"
    shims.mkdir()
    for name in ("uv", "python3", "apt-get", "apt-cache", "dpkg"):
        path = shims / name
        path.write_text(SHIM)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "ci.log"
    env = {
        **os.environ,
        "PATH": f"{shims}:/usr/bin:/bin",
        "CI_LOG": str(log),
        "LINT_FAILS": "1" if lint_fails else "",
    }
    done = subprocess.run(
        ["bash", str(ROOT / ".ci/run")], env=env, capture_output=True, text=True, timeout=60
    )
    calls = [line for line in log.read_text().splitlines() if line.startswith("uv ")] if log.exists() else []
    return done.returncode, calls


def test_a_lint_failure_fails_ci_before_the_tests_run(tmp_path: Path) -> None:
    code, calls = run_ci(tmp_path, lint_fails=True)
    assert code != 0
    assert calls == ["uv run just lint"]  # the tests never started


def test_clean_lint_then_the_readme_test_command(tmp_path: Path) -> None:
    code, calls = run_ci(tmp_path, lint_fails=False)
    assert code == 0
    assert calls == ["uv run just lint", "uv run just test"]
    readme = (ROOT / "README.md").read_text()
    assert "uv run just test" in readme  # the same command the README gives


def test_the_lint_recipe_catches_an_unused_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n")
    ruff = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--no-cache",
        "--config",
        str(ROOT / "pyproject.toml"),
        str(bad),
    ]
    done = subprocess.run(ruff, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "F401" in done.stdout
    recipe = (ROOT / "justfile").read_text().split("\nlint:\n", 1)[1].split("\n\n", 1)[0]
    assert "ruff check ." in recipe and "ruff format --check ." in recipe and "mypy" in recipe
