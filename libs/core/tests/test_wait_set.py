"""`wait_set`: the wait of every background loop that a wake-up or a poll ends, and a cancel stops."""

from __future__ import annotations

import asyncio

from lore_core.tasks import wait_set


async def test_a_wake_and_a_cancel_at_once_still_stop_a_waiting_loop() -> None:
    """The race that made a mem shutdown hang: the event is set and the task cancelled in one tick.
    `asyncio.wait_for` on 3.11 returned the event's result and swallowed the cancel; the loop went on."""
    event = asyncio.Event()
    rounds = 0

    async def loop() -> None:
        nonlocal rounds
        while True:
            await wait_set(event, 5.0)
            event.clear()
            rounds += 1

    task = asyncio.create_task(loop())
    await asyncio.sleep(0.01)  # the loop waits on the event
    event.set()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2)
    assert done and task.cancelled(), f"the loop survived its cancel ({rounds} rounds)"
    assert not await wait_set(asyncio.Event(), 0.01)  # a timeout is False
