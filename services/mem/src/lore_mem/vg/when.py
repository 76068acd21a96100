"""The time a question names ("last week", "in May 2023", "on 13 October", "上个月", "2023年5月"), as a
span of UTC time that `vg` search prefers memories from.

A small grammar rather than a date library: search needs a *span* (May 2023 is a month, not the 24th
of it), must not read "May I…" or "we" as dates, and runs on every question. dateparser's
`search_dates`, measured on such questions, gave points not spans, took "May I" for May and "we" for
a Wednesday, read 2023年5月 as the year 3, and cost 2-10 ms per question (50 ms for the first).
Relative phrases are read against `now`; days are UTC days; weeks start on Monday.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta


@dataclass(frozen=True)
class Span:
    """[start, end) in UTC, and the words of the question that named it."""

    start: datetime
    end: datetime
    phrase: str

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    def without_phrase(self, query: str) -> str:
        """The question minus its time words, so that BM25 does not rank memories for "week" or "May"."""
        return " ".join(query.replace(self.phrase, " ").split())


MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "a couple of": 2,
}  # fmt: skip
HAN = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
HAN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
YEAR = r"(?P<year>(?:19|20)\d\d)"
COUNT = (
    r"(?P<n>\d{1,3}|a couple of|couple|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)
UNIT = r"(?P<unit>day|week|month|year)s?"
HAN_COUNT = r"(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})"


def _day(d: date, days: int = 1) -> tuple[date, date]:
    return d, d + timedelta(days=days)


def _month(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    return start, date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)


def _year(year: int) -> tuple[date, date]:
    return date(year, 1, 1), date(year + 1, 1, 1)


def _week(d: date, weeks_back: int = 0) -> tuple[date, date]:
    monday = d - timedelta(days=d.weekday()) - timedelta(weeks=weeks_back)
    return _day(monday, 7)


def _months_back(today: date, n: int) -> tuple[date, date]:
    index = today.year * 12 + today.month - 1 - n
    return _month(index // 12, index % 12 + 1)


def _recent_month(today: date, month: int, strictly_before: bool = False) -> tuple[date, date]:
    """The latest such month that has begun (`strictly_before`: not the current one)."""
    year = (
        today.year
        if month < today.month or (month == today.month and not strictly_before)
        else today.year - 1
    )
    return _month(year, month)


def _recent_day(today: date, month: int, day: int) -> tuple[date, date] | None:
    for year in (today.year, today.year - 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            return None
        if candidate <= today:
            return _day(candidate)
    return None


def _weekday(today: date, weekday: int, strictly_before: bool) -> tuple[date, date]:
    back = (today.weekday() - weekday) % 7
    if back == 0 and strictly_before:
        back = 7
    return _day(today - timedelta(days=back))


def _weekend(today: date, this: bool) -> tuple[date, date]:
    saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
    if not this:
        saturday -= timedelta(weeks=1)
    return _day(saturday, 2)


def _count(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text in NUMBERS:
        return NUMBERS[text]
    # Chinese numerals up to 99: 三, 十, 十二, 二十, 二十五
    if "十" in text:
        tens, _, units = text.partition("十")
        return (HAN.get(tens, 1) if tens else 1) * 10 + (HAN.get(units, 0) if units else 0)
    return HAN.get(text, 0)


def _ago(today: date, n: int, unit: str) -> tuple[date, date]:
    if unit in ("day", "天", "日"):
        return _day(today - timedelta(days=n))
    if unit in ("week", "周", "星期", "礼拜"):
        return _week(today, n)
    if unit in ("month", "月"):
        return _months_back(today, n)
    return _year(today.year - n)


def _within(today: date, n: int, unit: str) -> tuple[date, date]:
    """The last `n` units up to and including today."""
    if unit in ("month", "月"):
        start = _months_back(today, n)[0].replace(day=min(today.day, 28))
    elif unit in ("year", "年"):
        start = date(today.year - n, today.month, min(today.day, 28))
    else:
        start = today - timedelta(days=n * (7 if unit in ("week", "周", "星期") else 1))
    return start, today + timedelta(days=1)


def _safe(build: Callable[[], tuple[date, date] | None]) -> tuple[date, date] | None:
    try:
        return build()
    except ValueError:  # 31 February and the like: not a date, so not a span
        return None


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[date, date] | None]]


def _g(match: re.Match[str], name: str) -> str:
    return match.group(name).lower()


def _i(match: re.Match[str], name: str) -> int:
    return int(match.group(name))


def _rule(pattern: str, build: Callable[[re.Match[str], date], tuple[date, date] | None]) -> Rule:
    return re.compile(pattern, re.IGNORECASE), build


# Most specific first: the first rule that matches names the span.
RULES: list[Rule] = [
    # English, absolute
    _rule(r"\b(?P<year>\d{4})[-/](?P<month>\d{1,2})[-/](?P<day>\d{1,2})\b",
          lambda m, t: _safe(lambda: _day(date(_i(m, "year"), _i(m, "month"), _i(m, "day"))))),
    _rule(rf"\b{DAY}\s+(?:of\s+)?{MONTH},?\s+{YEAR}\b",
          lambda m, t: _safe(lambda: _day(date(_i(m, "year"), MONTHS[_g(m, "month")], _i(m, "day"))))),
    _rule(rf"\b{MONTH}\s+{DAY},?\s+{YEAR}\b",
          lambda m, t: _safe(lambda: _day(date(_i(m, "year"), MONTHS[_g(m, "month")], _i(m, "day"))))),
    _rule(rf"\b{MONTH},?\s+(?:of\s+)?{YEAR}\b", lambda m, t: _month(_i(m, "year"), MONTHS[_g(m, "month")])),
    _rule(rf"\b{DAY}\s+(?:of\s+)?{MONTH}(?!\w)",
          lambda m, t: _recent_day(t, MONTHS[_g(m, "month")], _i(m, "day"))),
    _rule(rf"\b{MONTH}\s+{DAY}\b(?!\s*[,:]?\s*\d)",
          lambda m, t: _recent_day(t, MONTHS[_g(m, "month")], _i(m, "day"))),
    _rule(rf"\b(?P<which>in|during|since|last)\s+{MONTH}(?!\w)",
          lambda m, t: _recent_month(t, MONTHS[_g(m, "month")], _g(m, "which") == "last")),
    _rule(rf"\b(?:in|during|since|throughout)\s+(?:the\s+year\s+)?{YEAR}\b",
          lambda m, t: _year(_i(m, "year"))),
    # English, relative to now
    _rule(r"\bthe\s+day\s+before\s+yesterday\b", lambda m, t: _day(t - timedelta(days=2))),
    _rule(r"\byesterday\b", lambda m, t: _day(t - timedelta(days=1))),
    _rule(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", lambda m, t: _day(t)),
    _rule(rf"\b(?:in\s+|over\s+|during\s+)?(?:the\s+)?(?:last|past)\s+{COUNT}\s+{UNIT}\b",
          lambda m, t: _within(t, _count(_g(m, "n")), _g(m, "unit"))),
    _rule(rf"\b{COUNT}\s+{UNIT}\s+ago\b", lambda m, t: _ago(t, _count(_g(m, "n")), _g(m, "unit"))),
    _rule(r"\b(?P<which>last|this|past|previous)\s+weekend\b",
          lambda m, t: _weekend(t, _g(m, "which") == "this")),
    _rule(r"\b(?P<which>last|this|past|previous)\s+(?P<unit>week|month|year)\b",
          lambda m, t: _ago(t, 0 if _g(m, "which") == "this" else 1, _g(m, "unit"))),
    _rule(r"\b(?P<which>on|last)\s+(?P<weekday>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
          lambda m, t: _weekday(t, WEEKDAYS[_g(m, "weekday")], _g(m, "which") == "last")),
    # Chinese
    _rule(r"(?P<year>\d{4})年(?P<month>\d{1,2})月(?P<day>\d{1,2})[日号]",
          lambda m, t: _safe(lambda: _day(date(_i(m, "year"), _i(m, "month"), _i(m, "day"))))),
    _rule(r"(?P<year>\d{4})年(?P<month>\d{1,2})月",
          lambda m, t: _safe(lambda: _month(_i(m, "year"), _i(m, "month")))),
    _rule(r"(?P<year>\d{4})年", lambda m, t: _year(_i(m, "year"))),
    _rule(r"(?P<month>\d{1,2}|[一二三四五六七八九十]{1,2})月(?P<day>\d{1,2})[日号]",
          lambda m, t: _recent_day(t, _count(m.group("month")), _i(m, "day"))),
    _rule(r"前天", lambda m, t: _day(t - timedelta(days=2))),
    _rule(r"昨[天日晚]", lambda m, t: _day(t - timedelta(days=1))),
    _rule(r"今[天日晚早]", lambda m, t: _day(t)),
    _rule(r"(?P<which>上个?|这个?|本)(?:周末|星期六日)",
          lambda m, t: _weekend(t, m.group("which")[0] != "上")),
    _rule(r"上个?(?:周|星期|礼拜)(?P<weekday>[一二三四五六日天])",
          lambda m, t: _day(_week(t, 1)[0] + timedelta(days=HAN_WEEKDAYS[m.group("weekday")]))),
    _rule(r"(?:上个?周|上个?星期|上个?礼拜)", lambda m, t: _week(t, 1)),
    _rule(r"(?:这个?周|本周|这个?星期|这个?礼拜)", lambda m, t: _week(t)),
    _rule(r"上个?月", lambda m, t: _months_back(t, 1)),
    _rule(r"(?:这个月|本月)", lambda m, t: _months_back(t, 0)),
    _rule(r"前年", lambda m, t: _year(t.year - 2)),
    _rule(r"去年", lambda m, t: _year(t.year - 1)),
    _rule(r"今年", lambda m, t: _year(t.year)),
    _rule(rf"(?:最近|过去|近){HAN_COUNT}(?:个)?(?P<unit>天|日|周|星期|月|年)",
          lambda m, t: _within(t, _count(m.group("n")), m.group("unit"))),
    _rule(rf"{HAN_COUNT}(?:个)?(?P<unit>天|日|周|星期|礼拜|月|年)(?:以|之)?前",
          lambda m, t: _ago(t, _count(m.group("n")), m.group("unit"))),
    _rule(r"(?P<month>\d{1,2}|十[一二]|[一二三四五六七八九十])月份?",
          lambda m, t: _safe(lambda: _recent_month(t, _count(m.group("month"))))),
]  # fmt: skip


def find_span(query: str, now: datetime) -> Span | None:
    """The span of time the question names, or None when it names none."""
    today = now.astimezone(UTC).date()
    for pattern, build in RULES:
        for match in pattern.finditer(query):
            days = build(match, today)
            if days is None:
                continue  # no such date (31 February): a less specific rule may still read it
            if days[0] > today:
                return None  # the future: no memory is from then, so no time to prefer
            if match.group(0).lower().startswith("since"):
                days = (days[0], today + timedelta(days=1))  # since May: from May until today
            start, end = (datetime.combine(d, datetime.min.time(), UTC) for d in days)
            return Span(start, end, match.group(0))
    return None


def moment(text: object) -> datetime | None:
    """A memory's stored ISO time as aware UTC (None when absent or unreadable)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def said_at(timestamp: float | str, now: datetime) -> datetime:
    """When an added conversation took place: Unix seconds, or ISO 8601 (no zone = UTC). ValueError
    with what to send instead when it is unreadable or in the future (past a day of clock skew)."""
    if isinstance(timestamp, str):
        read = moment(timestamp.strip())
        if read is None:
            raise ValueError(
                f"timestamp {timestamp!r} is not a date: send ISO 8601 (2023-05-08T13:56:00Z) or Unix seconds"
            )
        parsed = read.astimezone(UTC)
    else:
        try:
            parsed = datetime.fromtimestamp(timestamp, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"timestamp {timestamp} is out of range: send Unix seconds") from None
    if parsed > now + timedelta(days=1):
        raise ValueError(
            f"timestamp {parsed.isoformat()} is in the future: send when the conversation took place"
        )
    return parsed
