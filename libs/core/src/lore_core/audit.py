"""The audit trail: admin actions (deletes, configuration reloads, key changes) and refused calls.

Each event is one log line `audit` with the key's name (never the key), the route, the method and the
outcome, and one count in `lore_audit_events{action, outcome}` at `/metrics`. Ordinary reads and
writes are in the request metrics and access logs already; this is what an operator reviews.
"""

from __future__ import annotations

from typing import Any

import structlog
from prometheus_client import Counter

from lore_core import metrics

log = structlog.get_logger("lore.audit")

EVENTS = Counter(
    "lore_audit_events",
    "Admin actions and refused calls, by action (delete, config_reload, keys_loaded, refused, "
    "internal_credential) and outcome (ok, failed, refused, a status code class)",
    ["action", "outcome"],
)


def record(action: str, outcome: str, **fields: Any) -> None:
    """One audit event: logged with its fields (key name, route, method, status) and counted."""
    log.info("audit", action=action, outcome=outcome, **fields)
    if metrics.ENABLED:
        EVENTS.labels(action, outcome).inc()
