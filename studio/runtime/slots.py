"""A concurrency limit that hands a freed slot to the most urgent waiter, not the oldest.

Why: a run's model calls share one budget (``max_concurrency``), and an asyncio ``Semaphore``
serves waiters first come, first served. When a reflection's call or a child's minibatch chain
queues behind validation chains started earlier, the iteration's critical path waits a whole
call for work that nothing is waiting on yet, and later the slots sit idle while that path
catches up (issue 22: a reflection at 500 ms a call started 0.5 s late twice per run).

The caller says how urgent its work is with :func:`urgency` (a context variable, so it reaches
the limit through ADK's runner and a critic's executor without a parameter on every call); the
waiter with the smallest key is served first, then, of equal keys, a call that
:func:`finishing` marks (the second call of work already begun, such as a critic's call after
its agent's: begun work ends, and its result streams, before new work starts), then the
earliest. Work that says nothing is :data:`ORDINARY`, so every other user of a limit keeps
first come, first served.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import weakref
from collections.abc import Iterator
from types import TracebackType
from typing import Any

Urgency = tuple[int, int]
"""(class, iteration): the class first (lower is more urgent), then the older iteration."""

PROPOSING, GATING, VALIDATING = 0, 1, 2
"""The classes, most urgent first: a reflection's call (everything after it waits for it); a
chain a gate waits for (a parent's or child's minibatch, and after it the validation); a
validation chain (it only settles its iteration)."""

ORDINARY: Urgency = (GATING, 0)
"""What unmarked work waits with."""

_URGENCY: contextvars.ContextVar[Urgency] = contextvars.ContextVar("studio_urgency",
                                                                   default=ORDINARY)
_FINISHING: contextvars.ContextVar[bool] = contextvars.ContextVar("studio_finishing",
                                                                  default=False)


@contextlib.contextmanager
def urgency(key: Urgency) -> Iterator[None]:
    """Slots taken inside this block (and by tasks it starts) wait with ``key``."""
    token = _URGENCY.set(key)
    try:
        yield
    finally:
        _URGENCY.reset(token)


@contextlib.contextmanager
def finishing() -> Iterator[None]:
    """Slots taken inside this block finish work already begun: served before new work of the
    same urgency."""
    token = _FINISHING.set(True)
    try:
        yield
    finally:
        _FINISHING.reset(token)


def set_urgency(key: Urgency) -> None:
    """Mark the rest of the current task (a task of its own: nothing else shares its context)."""
    _URGENCY.set(key)


class PrioritySlots:
    """``async with slots:`` holds one of ``size`` slots; a freed slot goes to the waiter with
    the smallest urgency (then finishing work, then the earliest). Serves one event loop, like
    ``asyncio.Semaphore``.

    A waiter cancelled after it was handed a slot passes the slot on, so a stopped run never
    leaks one."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a limit needs at least one slot, not {size}")
        self.size = size
        self._free = size
        self._waiters: list[tuple[Urgency, bool, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        """Waiters not yet handed a slot (cancelled ones left out)."""
        return sum(not entry[-1].done() for entry in self._waiters)

    async def acquire(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (_URGENCY.get(), not _FINISHING.get(), next(self._order), waiter)
        heapq.heappush(self._waiters, entry)
        self._hand_out()  # a slot may be free while only cancelled waiters were queued
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed a slot, then cancelled
                self.release()
            raise

    def release(self) -> None:
        self._free += 1
        self._hand_out()

    def _hand_out(self) -> None:
        while self._free > 0 and self._waiters:
            *_, waiter = heapq.heappop(self._waiters)
            if not waiter.done():  # a cancelled waiter left its entry behind
                self._free -= 1
                waiter.set_result(None)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.release()


def slots_of_loop(by_loop: weakref.WeakKeyDictionary[Any, PrioritySlots],
                  size: int) -> PrioritySlots:
    """The limit of ``size`` slots kept in ``by_loop`` for the running event loop (made on first
    use): a limit serves one loop, and a run's engine, "Try it" and an alignment job each drive
    their own."""
    loop = asyncio.get_running_loop()
    slots = by_loop.get(loop)
    if slots is None:
        slots = by_loop[loop] = PrioritySlots(size)
    return slots
