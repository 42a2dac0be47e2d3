"""Everything one run's engine needs, gathered once: store, agents, critic, examples, limits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from studio.critics.protocol import Critic
from studio.engine.run.agent_texts import apply_components
from studio.engine.run.events import STORED_EVENTS, EngineEvent
from studio.engine.run.examples import RunExamples
from studio.engine.run.tried import TriedBook
from studio.model.config import EvolutionConfig
from studio.model.records import Candidate, Run, RunRequest, StopReason, stored_id
from studio.model.workflow import WorkflowSpec, split_component
from studio.runtime.slots import PrioritySlots, slots_of_loop
from studio.store.seams import EngineStore

if TYPE_CHECKING:  # types only: these modules build on this one, or are heavy to import
    from google.adk.agents import BaseAgent

    from studio.engine.people.labels import LabelBook
    from studio.engine.scoring.processes import ProcessFanOut
    from studio.runtime.execution import AgentExecutor

logger = logging.getLogger(__name__)

Listener = Callable[[EngineEvent], None]
T = TypeVar("T")


class StopRun(Exception):
    """Raised inside the engine to end the run with ``reason``."""

    def __init__(self, reason: StopReason) -> None:
        self.reason = reason
        super().__init__(reason)


WAKE_FALLBACK_SECONDS = 1.0
"""Longest a waiting engine sleeps without a wake-up: the fallback that still sees a decision
written by another process when no heartbeat delivers it (e.g. an engine run without a worker)."""


@dataclass
class RunControl:
    """Requests from people to a running engine, and the one way the engine waits on them.

    The worker's heartbeat delivers the store's pause/stop requests (see
    :mod:`studio.engine.hosting.worker`); :func:`studio.engine.people.gates.decide` wakes the
    engine when a
    decision is made in this process. Every wait of the engine is :meth:`until`. Safe to call
    from any thread.
    """

    stop_reason: StopReason | None = None
    """Why a person asked the run to end (``user``), or None while it may go on."""
    pause_requested: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)
    """The engine's event loop while it runs (:meth:`attached`): wake-ups from other threads
    are handed to it."""

    def apply(self, control: RunRequest | None) -> None:
        """Deliver the store's request: ``pause``, ``stop`` or None (go on)."""
        if control is RunRequest.STOP:
            self.stop_reason = self.stop_reason or StopReason.USER
        self.pause_requested = control is RunRequest.PAUSE
        self.wake()

    def stop(self, reason: StopReason) -> None:
        self.stop_reason = self.stop_reason or reason
        self.wake()

    def wake(self) -> None:
        """Wake whatever the engine is waiting on, so it re-reads the store now."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed since the check
            loop.call_soon_threadsafe(self.changed.set)

    @contextlib.contextmanager
    def attached(self, run_id: str) -> Iterator[None]:
        """While the engine runs: bound to its event loop (so a wake-up from any thread reaches
        it) and reachable by :func:`wake_run`. Enter it inside the engine's coroutine."""
        self._loop = asyncio.get_running_loop()
        register_control(run_id, self)
        try:
            yield
        finally:
            register_control(run_id, None)

    def check_stop(self) -> None:
        """Raise StopRun if a person asked to stop or the worker shuts down."""
        if self.stop_reason is not None:
            raise StopRun(self.stop_reason)

    def unpaused(self) -> bool | None:
        """For :meth:`until`: True once no pause is requested (None while one is)."""
        return None if self.pause_requested else True

    async def until(self, read: Callable[[], T | None]) -> T:
        """Wait until ``read`` (which reads the store, or this control) returns a value, and
        return it; a person's stop or a worker's shutdown ends the wait with StopRun.

        The wake protocol, in one place: :attr:`changed` is cleared before each read, so a
        wake-up between the read and the wait is not lost; a value already there wins over a
        stop. Woken at once by :meth:`wake` (a decision made in this process, each heartbeat),
        else after :data:`WAKE_FALLBACK_SECONDS`, which still sees a change written by another
        process when no heartbeat delivers it (an engine run without a worker)."""
        while True:
            self.changed.clear()
            value = read()
            if value is not None:
                return value
            self.check_stop()
            with contextlib.suppress(TimeoutError):  # not wait_for: on 3.11 it drops a cancel
                async with asyncio.timeout(WAKE_FALLBACK_SECONDS):  # that meets a wake-up
                    await self.changed.wait()


    async def unless_stopped(self, work: Awaitable[T]) -> T:
        """``work``'s result, unless a person's stop (or a worker's shutdown) comes first: then
        ``work`` is cancelled at once, its model calls with it, and StopRun is raised (a
        reflection in a slow model's call does not hold a Stop for minutes)."""
        task = asyncio.ensure_future(work)
        task.add_done_callback(lambda _: self.wake())  # its end wakes the wait, as a stop does
        try:
            done = await self.until(lambda: task if task.done() else None)
            return done.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


_live_controls: dict[str, RunControl] = {}
"""Controls of the engines running in this process, by run id (see :func:`wake_run`)."""


def register_control(run_id: str, control: RunControl | None) -> None:
    """Make a running engine reachable by :func:`wake_run` (None removes it)."""
    if control is None:
        _live_controls.pop(run_id, None)
    else:
        _live_controls[run_id] = control


def live_control(run_id: str) -> RunControl | None:
    """The control of the run's engine when it runs in this process, else None."""
    return _live_controls.get(run_id)


def wake_run(run_id: str) -> None:
    """Wake the run's engine if it runs in this process; another process sees the change on
    its next heartbeat or fallback timeout."""
    control = _live_controls.get(run_id)
    if control is not None:
        control.wake()


async def _not_held() -> None:
    return None


@dataclass
class RunClock:
    """A run's time over all its sessions, and how much of it was a person's."""

    started_monotonic: float = field(default_factory=time.monotonic)
    active_seconds_before: float = 0.0
    """Active time of earlier sessions of this run (resume after a crash)."""
    held_seconds: float = 0.0
    """Of the active time (all sessions), how long the run was paused or waited at a gate for a
    person: not the machine's time, so not counted toward ``timeout_seconds``."""

    def active_seconds(self) -> float:
        """Machine time this run has been live (all sessions), pauses and gates included: the
        elapsed time people see."""
        return self.active_seconds_before + (time.monotonic() - self.started_monotonic)

    def timed_seconds(self) -> float:
        """What ``timeout_seconds`` limits: active time less the time paused or at a gate."""
        return self.active_seconds() - self.held_seconds


@dataclass
class RunContext:
    """What one run's engine works with, gathered once by
    :func:`studio.engine.hosting.build.build_engine`: the store and the run, the agent and its
    critic,
    the examples by split, how people steer it (:attr:`control`) and its time (:attr:`clock`)."""

    store: EngineStore
    run: Run
    config: EvolutionConfig
    agent: BaseAgent
    """The agent template; candidates are copies with their components applied."""
    critic: Critic
    reflection_agents: dict[str, BaseAgent]
    components: list[str]
    executor: AgentExecutor
    train_ids: list[int]
    val_ids: list[int]
    examples: RunExamples
    """Read by id as the steps need them (:mod:`studio.engine.run.examples`)."""
    test_ids: list[int] = field(default_factory=list)
    """Held-out examples: only :mod:`studio.engine.scoring.holdout` scores them, after the loop."""
    input_key: str | None = None
    reflection_strategy: str = "llm"
    """``reflection.strategy``: ``llm``, ``rules`` or ``rules+llm`` (see ReflectionSpec)."""
    listeners: list[Listener] = field(default_factory=list)
    worker: str | None = None
    """The worker process running the engine (given to :meth:`studio.engine.loop.engine.Engine.run`
    by the run manager), stamped on each trial."""
    fan_out: ProcessFanOut | None = None
    """A :class:`studio.engine.scoring.processes.ProcessFanOut` when the run uses processes."""
    primary: str | None = None
    """In a workflow run: the agent whose reply is scored."""
    workflow: WorkflowSpec | None = None
    """In a workflow run: its shape (reflection shows each agent its role)."""
    state_keys: dict[str, set[str]] = field(default_factory=dict)
    """In a workflow run: per agent, the state keys earlier agents have written when it starts
    (:func:`studio.model.workflow.state_before`)."""
    labels: LabelBook | None = None
    """An align run's :class:`studio.engine.people.labels.LabelBook`: its labels are read from the
    person's active corrections before and after every batch (None in other runs)."""
    control: RunControl = field(default_factory=RunControl)
    clock: RunClock = field(default_factory=RunClock)
    """Active time over all sessions, and how much of it a person held (pauses, gates)."""
    agent_model: str | None = None
    """The model the (primary) agent runs on, named in progress ("running ... with M")."""
    reflection_model: str | None = None
    """The model that writes the proposals
    (:func:`studio.engine.hosting.build.reflection_model`)."""
    serialized_model: bool = False
    """The embedded model serves every call one at a time: parallel proposals only queue."""
    lanes: int = 1
    """Iterations kept in flight (:mod:`studio.engine.loop.window`); set by the engine's loop."""
    hold_if_paused: Callable[[], Awaitable[None]] = field(default=_not_held)
    """Wait here while a person's Pause holds the run (set by the engine, which says it is
    paused and counts the time as a person's); a batch's chains call it before they start."""
    in_flight: dict[tuple[int, int], asyncio.Future] = field(default_factory=dict)
    """(candidate, example) pairs being judged, with their trial to come: a batch that needs
    one waits for it instead of judging it again (:mod:`studio.engine.scoring.batch`)."""
    calls_per_trial: int = 1
    """What one trial costs against ``max_metric_calls``: its critic's judge samples when it
    asks a judge several times, else one
    (:func:`studio.critics.adapters.metric_calls_per_trial`)."""

    tried: TriedBook = field(init=False)
    """The texts already tried, kept up to date as the run goes (:mod:`studio.engine.run.tried`)."""
    _agents: dict[int, BaseAgent] = field(default_factory=dict)
    _loop_trials: int | None = None
    _limits: dict[str, weakref.WeakKeyDictionary] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tried = TriedBook(self.store, self.run.id)

    @property
    def run_id(self) -> str:
        return self.run.id

    def limit(self, name: str, size: int) -> PrioritySlots:
        """The run's limit ``name`` of ``size`` slots on the running event loop, made on first
        use (:func:`studio.engine.scoring.batch.chain_limit` says which limits chains wait on)."""
        return slots_of_loop(self._limits.setdefault(name, weakref.WeakKeyDictionary()), size)

    @property
    def critic_on_run_executor(self) -> bool:
        """Whether the critic's model calls go through the run's executor (a critic agent of
        the run): they are then counted by its call limit."""
        return getattr(self.critic, "executor", None) is self.executor

    def active_seconds(self) -> float:
        """:meth:`RunClock.active_seconds`."""
        return self.clock.active_seconds()

    def timed_seconds(self) -> float:
        """:meth:`RunClock.timed_seconds`."""
        return self.clock.timed_seconds()

    @property
    def proposing_model(self) -> str | None:
        """Who writes an instruction's proposal, for progress: the reflection model, unless
        the rules operator alone does (``reflection.strategy: rules``)."""
        return None if self.reflection_strategy == "rules" else self.reflection_model

    def agent_for(self, candidate: Candidate) -> BaseAgent:
        agent = self._agents.get(stored_id(candidate))
        if agent is None:
            agent = apply_components(self.agent, candidate.components)
            self._agents[stored_id(candidate)] = agent
        return agent

    def example_keys(self) -> set[str]:
        return self.examples.data_keys()

    def readable_keys(self, component: str) -> set[str]:
        """What an instruction of ``component``'s agent may name: example fields, and in a
        workflow the state earlier agents wrote."""
        agent, _ = split_component(component)
        return self.example_keys() | self.state_keys.get(agent or "", set())

    # ------------------------------------------------------------------ metric-call budget

    def metric_calls(self) -> int:
        """The loop's metric calls so far: its trials, each counted :attr:`calls_per_trial`
        times (test-set trials are outside its budget)."""
        if self._loop_trials is None:
            self._loop_trials = self.store.count_trials(self.run_id, loop_only=True)
        return self._loop_trials * self.calls_per_trial

    def trial_calls(self, trials: int) -> int:
        """What ``trials`` more trials would cost against ``max_metric_calls``."""
        return trials * self.calls_per_trial

    def count_metric_call(self, committed: int = 1) -> None:
        """Called after ``committed`` trials were committed together (the store's count
        already includes them all)."""
        if self._loop_trials is None:
            self._loop_trials = self.store.count_trials(self.run_id, loop_only=True)
        else:
            self._loop_trials += committed

    # ------------------------------------------------------------------ events

    def history_cutoff(self, iteration: int) -> int | None:
        """With k lanes, ``iteration``'s reflection reads the history of iterations before
        ``iteration - k + 1`` only (what it would read whatever its siblings did meanwhile, so
        a seeded run reproduces); None: all of it (one lane)."""
        return iteration - self.lanes + 1 if self.lanes > 1 else None

    def emit(self, event: EngineEvent) -> None:
        if isinstance(event, STORED_EVENTS):
            self.store.add_event(self.run_id, event.kind, event.iteration, event.payload())
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:  # a broken listener must not end the run
                logger.exception("event listener failed on %s", event.kind)

    def refresh_labels(self) -> bool:
        """An align run: apply the person's corrections as they are now (True when a judged
        trial's verdict changed); any other run: nothing to do."""
        return self.labels is not None and self.labels.refresh(self.store, self.run_id,
                                                               self.examples)

    def check_stop(self) -> None:
        """Raise StopRun if a person asked to stop or the worker shuts down: the only stops
        honoured inside an iteration (limits are checked between iterations, see
        :meth:`check_timeout`)."""
        self.control.check_stop()

    def check_timeout(self) -> None:
        """Raise StopRun once ``timeout_seconds`` of timed (not paused, not gated) time passed."""
        timeout = self.config.timeout_seconds
        if timeout is not None and self.timed_seconds() >= timeout:
            raise StopRun(StopReason.TIMEOUT)
