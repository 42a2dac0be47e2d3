"""Fan a batch's agent->critic chains out to worker processes (``EvolutionConfig.processes``).

The studio's own CPU per model call (ADK events, LiteLLM, pydantic) is bound by one Python
process's GIL. With ``processes=N`` the chains of a batch run in N processes, each with its own
event loop, ADK runners, LiteLLM clients and (for the embedded model) its own copy of the model.
Only the engine's process touches the store: a process returns its chains' results and the
engine commits them as trials, so every guarantee of the store (first decision wins, a pair
judged once, resume) is unchanged.

A process rebuilds the agent and the critic from the run's spec, so only runs defined by a spec
(a project file or a :class:`RunSpec`) can use processes; a run started from Python objects
cannot (its agent may hold code that does not cross a process boundary).

Each process runs at most ``ceil(max_concurrency / processes)`` chains at once, so the run's
concurrency limit holds in total. Work is sent in shards of ``SHARD_ROUNDS`` times that many
examples (a process refills a freed slot from its shard at once); a shard's trials are
committed as soon as it returns.

Starting a process costs a fresh interpreter's imports (seconds of CPU), so the pool starts with
the run and the engine judges in its own process until the first worker is ready: a short run
never waits for processes it does not need.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from studio.critics.feedback import judge_sample
from studio.critics.protocol import Critic, Sample
from studio.engine.components import apply_components
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, StudioError
from studio.model.limits import MAX_OUTPUT_CHARS, clip
from studio.model.media import example_media
from studio.model.records import (
    Feedback,
    RunSpec,
    example_expected,
    example_input_text,
    example_state,
)
from studio.runtime.eventloop import StudioEventLoop
from studio.runtime.workflows import primary_for


@dataclass
class ChainResult:
    """One example's agent call and critic verdict, before it is a trial."""

    input_text: str
    output: str
    feedback: Feedback
    error: str | None
    trace: dict[str, Any] = field(default_factory=dict)
    latency_s: float | None = None
    tokens: int | None = None


async def run_chain(executor: Any, agent: Any, critic: Critic, data: dict[str, Any],
                    input_key: str | None, primary: str | None = None) -> ChainResult:
    """Run the agent (or workflow) on one example and let the critic judge its output (in a
    workflow, the ``primary`` agent's last reply). The example's images and videos go to the
    agent (and to a critic agent) as parts of the message; the text and the state hold their
    labels."""
    input_text = example_input_text(data, input_key)
    media = example_media(data)
    extra = {"media": media} if media else {}  # any executor runs text-only examples
    result = await executor.execute(agent, input_text, state=example_state(data),
                                    output_author=primary, **extra)
    output = clip(result.output, MAX_OUTPUT_CHARS)  # the critic judges what the store keeps
    if result.error:
        return ChainResult(input_text, output, Feedback(),
                           f"the agent failed (the critic was not called): {result.error}",
                           result.trace, result.latency_s, result.tokens)
    sample = Sample(input_text=input_text, output=output, expected=example_expected(data),
                    example=data, trace=result.trace, media=tuple(media))
    feedback, error = await judge_sample(critic, sample)
    return ChainResult(input_text, output, feedback, error, result.trace, result.latency_s,
                       result.tokens)


def check_processes(config: EvolutionConfig, spec: RunSpec, *, from_objects: bool) -> None:
    """Raises ConfigError when the run cannot fan out to processes."""
    if config.processes > 1 and (from_objects or not spec.resumable):
        raise ConfigError("processes > 1 needs a run defined by a spec (a project file or a "
                          "RunSpec): a worker process rebuilds the agent and the critic from it; "
                          "this run was given Python objects", where="run.processes",
                          value=config.processes)


SHARD_ROUNDS = 1
"""Examples per shard, in multiples of a process's concurrency: smaller shards commit trials
sooner, and larger ones showed no gain on the 2-core machine we measured on."""


class ProcessFanOut:
    """A pool of worker processes for one run, started with the run and closed with it."""

    def __init__(self, spec: RunSpec, config: EvolutionConfig, default_model: str,
                 setup: Callable[..., tuple[Any, Critic, Any]]) -> None:
        """``setup(spec, config, default_model, concurrency)`` runs in each process and returns
        ``(agent template, critic, executor)``: a module-level function (it crosses the process
        boundary by name), given by the engine's builder."""
        self.processes = config.processes
        per_process = max(1, math.ceil(config.max_concurrency / config.processes))
        self.shard_size = per_process * SHARD_ROUNDS
        self._setup = (setup, spec.model_dump(mode="json", by_alias=True),
                       config.model_dump(mode="json"), default_model, per_process)
        self._pool: ProcessPoolExecutor | None = None
        self._warming: list[Future] = []

    def start(self) -> None:
        """Start the processes in the background (each builds its agent and critic)."""
        pool = self._ensure_pool()
        with _main_not_rerun():  # the pool spawns its processes on these submits
            self._warming = [pool.submit(os.getpid) for _ in range(self.processes)]

    @property
    def ready(self) -> bool:
        """True once a worker process can take work (raises what a process failed with)."""
        for future in self._warming:
            if future.done():
                try:
                    future.result()
                except Exception as exc:  # the process could not start or build the agent
                    raise StudioError(f"a worker process for processes={self.processes} "
                                      f"could not start: {type(exc).__name__}: {exc}") from exc
                return True
        return False

    def shards(self, items: list[Any]) -> list[list[Any]]:
        """At least one shard per process, none larger than ``shard_size``, sizes balanced."""
        count = max(min(self.processes, len(items)), math.ceil(len(items) / self.shard_size))
        size = math.ceil(len(items) / count) if items else 1
        return [items[i:i + size] for i in range(0, len(items), size)]

    async def run_shard(self, components: dict[str, str],
                        examples: list[dict[str, Any]], input_key: str | None
                        ) -> list[ChainResult]:
        with _main_not_rerun():
            future = self._ensure_pool().submit(_judge_shard, components, examples, input_key)
        return await asyncio.wrap_future(future)

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: a clean interpreter, never a fork of a process holding threads and locks
            self._pool = ProcessPoolExecutor(
                max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_process, initargs=self._setup)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


_MAIN_LOCK = threading.Lock()


@contextmanager
def _main_not_rerun() -> Iterator[None]:
    """Spawn runs the parent's ``__main__`` again in each child, by path. Under Streamlit that
    is the studio's page script (it would open the default store and draw pages), under pytest
    a test's: the child needs neither, so the path is hidden while processes are spawned."""
    main = sys.modules.get("__main__")
    with _MAIN_LOCK:
        saved = {name: main.__dict__[name] for name in ("__file__", "__spec__")
                 if main is not None and name in main.__dict__}
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None  # read as an attribute by spawn: present, but names nothing
        try:
            yield
        finally:
            if main is not None:
                main.__dict__.pop("__spec__", None)
                main.__dict__.update(saved)


# --------------------------------------------------------------------------- in the process

_PROCESS: dict[str, Any] = {}


def _init_process(setup: Callable[..., tuple[Any, Critic, Any]], spec: dict[str, Any],
                  config: dict[str, Any], default_model: str, concurrency: int) -> None:
    template, critic, executor = setup(RunSpec.model_validate(spec),
                                       EvolutionConfig.model_validate(config), default_model,
                                       concurrency)
    _PROCESS.update(executor=executor, template=template, critic=critic, agents={},
                    primary=primary_for(template, spec.get("primary")),
                    concurrency=concurrency,
                    loop=StudioEventLoop())  # one loop: clients and limits stay bound


def _judge_shard(components: dict[str, str], examples: list[dict[str, Any]],
                 input_key: str | None) -> list[ChainResult]:
    key = tuple(sorted(components.items()))
    agents = _PROCESS["agents"]
    if key not in agents:
        agents[key] = apply_components(_PROCESS["template"], components)
    agent = agents[key]

    async def judge_all() -> list[ChainResult]:
        slots = asyncio.Semaphore(_PROCESS["concurrency"])

        async def one(data: dict[str, Any]) -> ChainResult:
            async with slots:
                return await run_chain(_PROCESS["executor"], agent, _PROCESS["critic"], data,
                                       input_key, _PROCESS["primary"])

        return list(await asyncio.gather(*(one(data) for data in examples)))

    return _PROCESS["loop"].run_until_complete(judge_all())
