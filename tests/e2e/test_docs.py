"""The documentation site builds with no warning (broken links and anchors fail it), and nothing in
the project points at files outside it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The folder beside the project that its authors read while building it (spelled so that this file
# does not name it itself).
OUTSIDE = ("../" + "shared", "/work/" + "shared")


def test_mkdocs_builds_the_site_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    # The reference is generated from the services' own documents: every module's routes are there.
    for route in ("/api/v1/docdb/chat", "/api/v1/gen/pipeline/submit", "/api/v1/mem/vg/search"):
        assert route in api
    assert (
        "Who developed the first compiler?"
        in (tmp_path / "site" / "getting-started" / "index.html").read_text()
    )


def test_nothing_refers_to_files_outside_the_project() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    offenders = []
    for name in tracked.splitlines():
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".sh", ".tpl", ".json"}:
            continue
        if not path.is_file():
            continue
        text = path.read_text(errors="ignore")
        if any(outside in text for outside in OUTSIDE):
            offenders.append(name)
    assert offenders == [], offenders


def test_every_configuration_block_of_the_docs_loads(tmp_path: Path) -> None:
    """The YAML blocks users copy into `config/lore.yaml` are valid settings (unknown keys are errors)."""
    import re

    from lore_core.settings import load_settings

    blocks = []
    for page in ("providers.md", "stores.md", "configuration.md", "deployment.md", "security.md"):
        text = (ROOT / "docs" / page).read_text()
        blocks += [(page, b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "helm" not in b]
    assert len(blocks) >= 5
    for number, (page, block) in enumerate(blocks):
        folder = tmp_path / str(number)
        folder.mkdir()
        (folder / "lore.yaml").write_text(block)
        try:
            load_settings(folder, environ={})
        except Exception as exc:  # the message names the page and the block
            raise AssertionError(f"{page}, block {number}: {exc}\n{block}") from exc
