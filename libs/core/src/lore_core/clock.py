"""Time as every Lore store and reply writes it: UTC, from one place, at one precision."""

from __future__ import annotations

from datetime import UTC, datetime

# Every stored or replied timestamp carries microseconds, so two stamps of one record compare as the
# moments they name (a task's `updated_at` is never before its `created_at`), and records created in
# one request sort in the order they were made.
PRECISION = "microseconds"


def utcnow() -> datetime:
    """Now, timezone-aware UTC: what the relational stores keep."""
    return datetime.now(UTC)


def iso(moment: datetime, *, with_zone: bool = False) -> str:
    """`moment` as ISO 8601 text at the one precision: in UTC, without a zone (the API's timestamps are
    UTC) unless `with_zone`. A naive `moment` is taken to be UTC already (what SQLite gives back)."""
    utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return (utc if with_zone else utc.replace(tzinfo=None)).isoformat(timespec=PRECISION)


def utc_iso(timespec: str = PRECISION, *, with_zone: bool = False) -> str:
    """Now as ISO 8601 text. The API's timestamps carry no zone (they are UTC); `with_zone` keeps
    the `+00:00` where a field shows one (mem `vg`). Pass `timespec` only where a format is fixed by
    data from elsewhere."""
    now = utcnow()
    return (now if with_zone else now.replace(tzinfo=None)).isoformat(timespec=timespec)
