"""What each Lore process carries: its installed dependency size and its import time.

For every process package (gateway, docdb, gen, mem) this builds the environment its container image
gets (`uv sync --frozen --no-dev --package P`, the Dockerfile's own command) in a temporary folder, then
measures the size of that environment's site-packages and the wall time of importing the process's app
module in a fresh interpreter (median of `--runs`). `--tree` points at another checkout of the project
(say, a `git worktree` of an older commit) so that two versions are measured side by side.

    uv run python bench/footprint.py [--tree PATH] [--runs 5]

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROCESSES = {
    "gateway": ("lore-gateway", "lore_gateway.app"),
    "docdb": ("lore-docdb", "lore_docdb.app"),
    "gen": ("lore-gen", "lore_gen.app"),
    "mem": ("lore-mem", "lore_mem.app"),
}
HEAVY = ("numpy", "qdrant_client", "falkordb", "openai", "anthropic", "usearch", "sqlalchemy", "aioboto3")


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def build_env(tree: Path, package: str, where: Path) -> Path:
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(where), "UV_COMPILE_BYTECODE": "0"}
    subprocess.run(
        ["uv", "sync", "--frozen", "--no-dev", "--no-editable", "--package", package, "-q"],
        cwd=tree,
        env=env,
        check=True,
    )
    return where / "bin" / "python"


def import_seconds(python: Path, module: str, runs: int) -> tuple[float, list[str]]:
    probe = (
        f"import sys, time; t = time.perf_counter(); import {module}; d = time.perf_counter() - t; "
        f"print(d); print(','.join(n for n in {HEAVY} if n in sys.modules))"
    )
    times, loaded = [], []
    for index in range(runs + 1):
        out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True)
        seconds, names = out.stdout.splitlines()[:2] if out.stdout.count("\n") >= 2 else (out.stdout, "")
        if index:  # the first run warms the page cache and writes bytecode
            times.append(float(seconds))
        loaded = [n for n in names.split(",") if n]
    return statistics.median(times), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, float] = {}
    print(f"tree: {args.tree}")
    print(f"{'process':<8} {'site-packages':>14} {'import':>9}  heavy modules loaded by the import")
    with tempfile.TemporaryDirectory(prefix="lore-footprint-") as work:
        for name, (package, module) in PROCESSES.items():
            started = time.perf_counter()
            python = build_env(args.tree.resolve(), package, Path(work) / name)
            site = next((Path(work) / name / "lib").glob("python3.*/site-packages"))
            size_mb = folder_bytes(site) / 1e6
            seconds, loaded = import_seconds(python, module, args.runs)
            figures[f"{name}_site_packages_mb"] = round(size_mb, 1)
            figures[f"{name}_import_ms"] = round(seconds * 1000, 1)
            figures[f"{name}_heavy_modules"] = len(loaded)
            print(
                f"{name:<8} {size_mb:>11.1f} MB {seconds * 1000:>6.0f} ms  {', '.join(loaded) or '-'}"
                f"   (env built in {time.perf_counter() - started:.0f} s)"
            )
    print(json.dumps(figures))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
