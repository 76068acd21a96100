"""Where the benchmark datasets are: `LORE_BENCH_DATA`, else `bench/data/` (not in the repository:
download BEIR SciFact into `scifact/`, CMRC 2018 into `cmrc2018/`, LoCoMo into `locomo/`)."""

from __future__ import annotations

import os
from pathlib import Path

DATA = Path(os.environ.get("LORE_BENCH_DATA") or Path(__file__).resolve().parent / "data")
