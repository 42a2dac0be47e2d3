"""PrioritySlots: a freed slot goes to the most urgent waiter, equal urgencies in order, and a
cancelled waiter never keeps or loses a slot."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.runtime.slots import ORDINARY, PrioritySlots, urgency


async def _queue_behind_holder(slots: PrioritySlots, keys: list[tuple[int, int]]
                               ) -> tuple[list[int], asyncio.Event, list[asyncio.Task]]:
    """One task holds the only slot while each key's task queues; returns the serving order."""
    served: list[int] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with slots:
            await release.wait()

    async def waiter(index: int, key: tuple[int, int]) -> None:
        with urgency(key):
            async with slots:
                served.append(index)
                await asyncio.sleep(0)

    tasks = [asyncio.create_task(holder())]
    await asyncio.sleep(0)
    for index, key in enumerate(keys):
        tasks.append(asyncio.create_task(waiter(index, key)))
        await asyncio.sleep(0)  # queued in this order
    return served, release, tasks


def test_the_most_urgent_waiter_is_served_first_and_equal_ones_in_order() -> None:
    asyncio.run(_the_most_urgent_waiter_is_served_first_and_equal_ones_in_order())


async def _the_most_urgent_waiter_is_served_first_and_equal_ones_in_order() -> None:
    slots = PrioritySlots(1)
    keys = [(2, 1), (1, 3), (2, 0), (0, 4), (1, 3), ORDINARY]
    served, release, tasks = await _queue_behind_holder(slots, keys)
    release.set()
    await asyncio.gather(*tasks)
    assert served == [3, 5, 1, 4, 2, 0]


def test_a_free_slot_is_taken_at_once_whatever_the_urgency() -> None:
    asyncio.run(_a_free_slot_is_taken_at_once_whatever_the_urgency())


async def _a_free_slot_is_taken_at_once_whatever_the_urgency() -> None:
    slots = PrioritySlots(2)
    with urgency((9, 9)):
        await asyncio.wait_for(slots.acquire(), timeout=1)
    await asyncio.wait_for(slots.acquire(), timeout=1)
    pending = asyncio.create_task(slots.acquire())
    await asyncio.sleep(0)
    assert not pending.done()
    slots.release()
    await asyncio.wait_for(pending, timeout=1)


def test_a_waiter_cancelled_while_queued_is_skipped() -> None:
    asyncio.run(_a_waiter_cancelled_while_queued_is_skipped())


async def _a_waiter_cancelled_while_queued_is_skipped() -> None:
    slots = PrioritySlots(1)
    served, release, tasks = await _queue_behind_holder(slots, [(0, 0), (1, 0)])
    tasks[1].cancel()  # the most urgent one leaves the queue
    release.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert served == [1]


def test_a_waiter_cancelled_after_it_was_handed_the_slot_passes_it_on() -> None:
    asyncio.run(_a_waiter_cancelled_after_it_was_handed_the_slot_passes_it_on())


async def _a_waiter_cancelled_after_it_was_handed_the_slot_passes_it_on() -> None:
    slots = PrioritySlots(1)
    await slots.acquire()
    served: list[str] = []

    async def waiter(name: str, key: tuple[int, int]) -> None:
        with urgency(key):
            async with slots:
                served.append(name)

    first = asyncio.create_task(waiter("first", (0, 0)))
    second = asyncio.create_task(waiter("second", (1, 0)))
    await asyncio.sleep(0)  # both queued
    slots.release()  # handed to "first" ...
    first.cancel()  # ... which is cancelled before it runs
    await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), timeout=5)
    assert served == ["second"]
    await asyncio.wait_for(slots.acquire(), timeout=1)  # and no slot was lost


def test_a_limit_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot, not 0"):
        PrioritySlots(0)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 4),
       jobs=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 3),
                               st.booleans()), min_size=1, max_size=25))
def test_never_more_holders_than_slots_and_every_waiter_not_cancelled_is_served(
        size: int, jobs: list[tuple[int, int, int, bool]]) -> None:
    """Random urgencies, hold times and cancellations: at most ``size`` hold a slot at once,
    every waiter left alone is served, and every slot comes back."""

    async def scenario() -> None:
        slots = PrioritySlots(size)
        holding = {"now": 0, "most": 0}
        served: set[int] = set()

        async def job(index: int, key: tuple[int, int], turns: int) -> None:
            with urgency(key):
                async with slots:
                    holding["now"] += 1
                    holding["most"] = max(holding["most"], holding["now"])
                    try:
                        for _ in range(turns):
                            await asyncio.sleep(0)
                    finally:
                        holding["now"] -= 1
                    served.add(index)

        tasks = [asyncio.create_task(job(i, (c, it), turns))
                 for i, (c, it, turns, _) in enumerate(jobs)]
        await asyncio.sleep(0)
        for task, (*_, cancel) in zip(tasks, jobs, strict=True):
            if cancel:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert holding["most"] <= size
        assert served >= {i for i, job in enumerate(jobs) if not job[3]}
        for _ in range(size):  # every slot is free again
            await asyncio.wait_for(slots.acquire(), timeout=1)

    asyncio.run(scenario())
