"""Time as every Lore store and reply writes it: UTC, from one place."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now, timezone-aware UTC: what the relational stores keep."""
    return datetime.now(UTC)


def utc_iso(timespec: str = "seconds", *, with_zone: bool = False) -> str:
    """Now as ISO 8601 text. The contract's timestamps carry no zone (they are UTC); `with_zone` keeps
    the `+00:00` where a contract field shows one (mem `vg`)."""
    now = utcnow()
    return (now if with_zone else now.replace(tzinfo=None)).isoformat(timespec=timespec)
