"""`just up` and Ctrl-C: the terminal's SIGINT reaches every process of the foreground group. The recipe's
shell must not be one of them (it would die of it and just would report the recipe "terminated ... by
signal 2" although lore-up stopped the stack cleanly)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Stands in for `uv run --frozen lore-up`: says it is up, and on SIGINT stops cleanly (exit 0) as lore-up.
FAKE_UV = f"""#!{sys.executable}
import signal, sys, threading
stopped = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stopped.set())
print("lore: up", flush=True)
stopped.wait(30)
sys.exit(0 if stopped.is_set() else 3)
"""


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGINT as on a terminal")
def test_ctrl_c_on_just_up_does_not_report_the_recipe_killed_by_signal_2(tmp_path: Path) -> None:
    just = shutil.which("just", path=str(Path(sys.executable).parent)) or shutil.which("just")
    if just is None:
        pytest.skip("just is not installed")
    fake = tmp_path / "uv"
    fake.write_text(FAKE_UV)
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    up = subprocess.Popen(
        [just, "--justfile", str(ROOT / "justfile"), "up"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        assert up.stdout is not None and up.stdout.readline().strip() == "lore: up"
        os.killpg(up.pid, signal.SIGINT)  # what Ctrl-C does
        _, stderr = up.communicate(timeout=20)
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
    assert "terminated" not in stderr and "signal 2" not in stderr, stderr
    # just itself saw the SIGINT too: it says so and exits 130 (its documented behaviour), nothing more.
    assert up.returncode in (0, 130), stderr
