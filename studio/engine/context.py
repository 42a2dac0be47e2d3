"""Everything one run's engine needs, gathered once: store, agents, critic, examples, limits."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from studio.critics.protocol import Critic
from studio.engine.components import apply_components
from studio.engine.events import STORED_EVENTS, EngineEvent
from studio.model.config import EvolutionConfig
from studio.model.records import Candidate, Example, Run
from studio.store import Store

logger = logging.getLogger(__name__)

Listener = Callable[[EngineEvent], None]


class StopRun(Exception):
    """Raised inside the engine to end the run with ``reason``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class RunControl:
    """Requests from people, delivered by the worker's heartbeat (see
    :mod:`studio.engine.worker`)."""

    stop_requested: bool = False
    pause_requested: bool = False
    changed: asyncio.Event | None = None

    def apply(self, control: str | None) -> None:
        self.stop_requested = self.stop_requested or control == "stop"
        self.pause_requested = control == "pause"
        if self.changed is not None:
            self.changed.set()


@dataclass
class RunContext:
    store: Store
    run: Run
    config: EvolutionConfig
    agent: Any
    """The agent template; candidates are copies with their components applied."""
    critic: Critic
    reflection_agents: dict[str, Any]
    components: list[str]
    executor: Any
    train_ids: list[int]
    val_ids: list[int]
    examples: dict[int, Example]
    input_key: str | None = None
    listeners: list[Listener] = field(default_factory=list)
    control: RunControl = field(default_factory=RunControl)
    started_monotonic: float = field(default_factory=time.monotonic)
    active_seconds_before: float = 0.0
    """Active time of earlier sessions of this run (resume after a crash)."""
    _agents: dict[int, Any] = field(default_factory=dict)
    _metric_calls: int | None = None

    @property
    def run_id(self) -> str:
        return self.run.id

    def active_seconds(self) -> float:
        return self.active_seconds_before + (time.monotonic() - self.started_monotonic)

    def agent_for(self, candidate: Candidate) -> Any:
        agent = self._agents.get(candidate.id)
        if agent is None:
            agent = apply_components(self.agent, candidate.components)
            self._agents[candidate.id] = agent
        return agent

    def example_keys(self) -> set[str]:
        return {key for example in self.examples.values() for key in example.data}

    # ------------------------------------------------------------------ metric-call budget

    def metric_calls(self) -> int:
        if self._metric_calls is None:
            self._metric_calls = self.store.count_trials(self.run_id)
        return self._metric_calls

    def count_metric_call(self) -> None:
        """Called after a trial is committed (the store's count already includes it)."""
        if self._metric_calls is None:
            self._metric_calls = self.store.count_trials(self.run_id)
        else:
            self._metric_calls += 1

    def reserve(self, calls: int) -> None:
        """Never start a batch the budget cannot finish."""
        budget = self.config.max_metric_calls
        if budget is not None and self.metric_calls() + calls > budget:
            raise StopRun("max_metric_calls")

    # ------------------------------------------------------------------ events

    def emit(self, event: EngineEvent) -> None:
        if isinstance(event, STORED_EVENTS):
            self.store.add_event(self.run_id, event.kind, event.iteration, event.payload())
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:  # a broken listener must not end the run
                logger.exception("event listener failed on %s", event.kind)

    def check_stop(self) -> None:
        """Raise StopRun if a person asked to stop or the wall-clock limit has passed."""
        if self.control.stop_requested:
            raise StopRun("user")
        timeout = self.config.timeout_seconds
        if timeout is not None and self.active_seconds() >= timeout:
            raise StopRun("timeout")
