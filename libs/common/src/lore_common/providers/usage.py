"""What a task spends on models: calls, tokens, cost, cache hits, failed chunks, and its budgets.

A task runner opens `track_usage(...)` around its work; every model call made inside it (in any
coroutine it starts, since the tally travels in a context variable) adds its tokens to the tally, and
a call that would pass the task's or the day's token budget raises `BudgetExceeded` instead, which
fails the task with an error naming the budget.

The day's budget is kept per process (replicas each count their own day).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from lore_core import metrics
from lore_core.settings import LLMConfig

MAX_EXAMPLES = 5
log = structlog.get_logger("lore.models")


class BudgetExceeded(RuntimeError):
    """A model call would pass a configured token budget; the task stops with this message."""


class TooManyFailures(RuntimeError):
    """More of a task's chunks failed extraction than `llm.max_failed_share` allows."""


class FailedChunk(msgspec.Struct, frozen=True):
    """A piece of input whose model extraction failed for good, and why."""

    chunk: str
    reason: str


class UsageReport(msgspec.Struct, kw_only=True):
    """A task's model spending, as task progress shows it."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0  # in the currency of the configured price table; 0 without one
    cache_hits: int = 0
    extracted: int = 0  # structured results decoded (or read from the cache)
    failed_chunks: int = 0
    failed_examples: list[FailedChunk] = msgspec.field(default_factory=list)


@dataclass
class TaskUsage:
    """The running tally of one task (see the module's docstring)."""

    task_budget: int = 0  # tokens, input and output together; 0: none
    daily_budget: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cache_hits: int = 0
    extracted: int = 0
    chunks: int = 0
    failed: list[FailedChunk] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def check(self) -> None:
        """Raise `BudgetExceeded` when this task or this day has used its budget up."""
        if self.task_budget and self.tokens >= self.task_budget:
            raise BudgetExceeded(
                f"the task's token budget of {self.task_budget} (llm.task_token_budget) is used up: "
                f"{self.tokens} tokens in {self.model_calls} model calls"
            )
        DAY.check()

    def add(self, config: LLMConfig, tokens_in: int, tokens_out: int) -> None:
        self.model_calls += 1
        self.input_tokens += tokens_in
        self.output_tokens += tokens_out
        self.cost += price(config, tokens_in, tokens_out)

    def fail(self, chunk: str, reason: str) -> None:
        self.failed.append(FailedChunk(chunk, reason[:500]))

    @property
    def failed_share(self) -> float:
        return len(self.failed) / self.chunks if self.chunks else 0.0

    def report(self) -> UsageReport:
        return UsageReport(
            model_calls=self.model_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost=round(self.cost, 6),
            cache_hits=self.cache_hits,
            extracted=self.extracted,
            failed_chunks=len(self.failed),
            failed_examples=self.failed[:MAX_EXAMPLES],
        )

    def as_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self.report())  # type: ignore[no-any-return]

    def json(self) -> str:
        return msgspec.json.encode(self.report()).decode()


class _Day:
    """Tokens this process spent today (UTC) against the day's budget."""

    def __init__(self) -> None:
        self.date = ""
        self.tokens = 0
        self.budget = 0

    def _roll(self) -> None:
        today = dt.datetime.now(dt.UTC).date().isoformat()
        if today != self.date:
            self.date, self.tokens = today, 0

    def add(self, tokens: int) -> None:
        self._roll()
        self.tokens += tokens

    def check(self) -> None:
        self._roll()
        if self.budget and self.tokens >= self.budget:
            raise BudgetExceeded(
                f"the day's token budget of {self.budget} (llm.daily_token_budget) is used up: "
                f"{self.tokens} tokens today (UTC)"
            )


DAY = _Day()
CURRENT: ContextVar[TaskUsage | None] = ContextVar("lore_task_usage", default=None)


def price(config: LLMConfig, tokens_in: int, tokens_out: int) -> float:
    """The cost of a call by the configured price table (per million tokens)."""
    return (tokens_in * config.price_input + tokens_out * config.price_output) / 1_000_000


@contextmanager
def track_usage(config: LLMConfig | None = None) -> Iterator[TaskUsage]:
    """A fresh tally for the task run inside; budgets from `config` (the service's model)."""
    usage = TaskUsage(
        task_budget=config.task_token_budget if config else 0,
        daily_budget=config.daily_token_budget if config else 0,
    )
    if config is not None and config.daily_token_budget:
        DAY.budget = config.daily_token_budget
    token = CURRENT.set(usage)
    try:
        yield usage
    finally:
        CURRENT.reset(token)


def begin_usage(config: LLMConfig | None = None) -> TaskUsage:
    """Like `track_usage`, for the rest of the current asyncio task (each task has its own context)."""
    usage = TaskUsage(
        task_budget=config.task_token_budget if config else 0,
        daily_budget=config.daily_token_budget if config else 0,
    )
    if config is not None and config.daily_token_budget:
        DAY.budget = config.daily_token_budget
    CURRENT.set(usage)
    return usage


def current_usage() -> TaskUsage | None:
    return CURRENT.get()


def before_call() -> None:
    """Raise `BudgetExceeded` when the running task (if any) or the day may not make another call."""
    usage = CURRENT.get()
    if usage is not None:
        usage.check()
    else:
        DAY.check()


def after_call(config: LLMConfig, provider: str, tokens_in: int, tokens_out: int) -> None:
    """Count a finished call: the task's tally, the day's tokens, the cost metric."""
    DAY.add(tokens_in + tokens_out)
    usage = CURRENT.get()
    if usage is not None:
        usage.add(config, tokens_in, tokens_out)
    cost = price(config, tokens_in, tokens_out)
    if cost:
        metrics.model_cost(provider, config.model, cost)


def record_failure(chunk: str, exc: BaseException) -> None:
    """Record that `chunk`'s extraction failed for good (after repairs and retries), with the reason,
    in the running task's tally; outside a tracked task there is nowhere to report it, so `exc` is
    raised again (a failure is never silently dropped)."""
    usage = CURRENT.get()
    if usage is None or isinstance(exc, BudgetExceeded):
        raise exc
    log.warning("chunk_extraction_failed", chunk=chunk, error=str(exc)[:300])
    usage.fail(chunk, str(exc))


def check_failed_share(total: int, limit: float) -> None:
    """After `total` chunks were sent for extraction: raise `TooManyFailures` when more than `limit`
    (a share, 0..1) of them failed; below it the task completes with the failures reported."""
    usage = CURRENT.get()
    if usage is None:
        return
    usage.chunks += total
    if usage.failed and usage.failed_share > limit:
        examples = "; ".join(f"{f.chunk}: {f.reason[:160]}" for f in usage.failed[:3])
        raise TooManyFailures(
            f"{len(usage.failed)} of {usage.chunks} chunks failed extraction, more than "
            f"llm.max_failed_share ({limit:.0%}) allows; for example {examples}"
        )
