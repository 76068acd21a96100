"""The Grafana dashboard asks only for metrics Lore serves, so it cannot drift from the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

import lore_core.audit  # registers the audit counter
import lore_core.metrics  # noqa: F401 - registers Lore's metrics

DASHBOARD = Path(__file__).resolve().parents[1] / "grafana" / "lore.json"
SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")


def served() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES)
    return names


def test_every_panel_queries_metrics_that_exist() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(expressions) >= 12
    asked = {name for expr in expressions for name in re.findall(r"\b(?:lore|process)_[a-z_]+\b", expr)}
    assert asked - served() == set()
    # Every family of Lore's own metrics has a panel.
    own = {f.name for f in REGISTRY.collect() if f.name.startswith("lore_")}
    assert {name for name in own if not any(a.startswith(name) for a in asked)} == set()
