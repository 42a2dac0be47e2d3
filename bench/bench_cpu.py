"""CPU and concurrency benchmark of an ``evolve()`` run: what the studio spends per model call and
how busy it keeps the model calls it is allowed.

    python bench/bench_cpu.py [--latency-ms 100] [--examples 20] [--iterations 6]
                              [--concurrency 5] [--repeats 3] [--profile out.prof]

The run: ``evolve()`` on ``--examples`` topics (trainset, also the valset) with an ADK writer, an
ADK critic (``SimpleCriticOutput``) and the reflection agent, all on the scripted ``demo`` model
(a LiteLLM custom provider) that answers after ``--latency-ms`` of ``asyncio.sleep``.

Figures, each a ratio of two things measured in this one process (machines are shared and noisy):

* **CPU per model call**: process CPU time (all threads: engine, heartbeat, store) of the whole
  ``evolve()`` call divided by the number of model calls the provider received, at 0 ms latency
  (pure CPU) and at ``--latency-ms``; compared with one bare ADK ``Runner`` + LiteLLM call on the
  same provider (no studio code around it) at the same latency: one call at a time at 0 ms,
  ``--concurrency`` runners at once at ``--latency-ms`` (waiting costs CPU too: the event loop,
  timers, LiteLLM's executor threads). Both ratios are printed. Target: <= 1.5x.
* **Idle share**: the part of the ``evolve()`` wall time during which no model call is in flight
  (a call is in flight from the provider's ``acompletion`` entry to its return), at
  ``--latency-ms``. Target: <= 10 %.
* **Mean calls in flight vs what the schedule allows**: the time integral of calls in flight
  divided by the time integral of the calls the schedule allows, over the whole run, where

      allowed(t) = min(C, sum over the batches being scored at t of their unfinished chains)
                   + reflection calls in flight at t

  C is ``max_concurrency``. A *batch* is one ``score_batch`` call (one candidate on a minibatch
  or the valset), from its entry to its return; its *chains* are the examples that needed
  judging (cached pairs make no call; one ``batch.run_chain`` call each, which the bench wraps to
  tag the calls), each an agent call followed by a critic call, so at most
  one call of a chain can be in flight; a chain is *unfinished* from the batch's entry until its
  last call returns. A reflection is a chain of one call, allowed only while it is in flight (the
  time before it starts is counted by the idle share). So the ratio is 1.0 when every free slot
  is refilled the moment a chain could use it, and CPU between an agent call and its critic, or
  a slot left empty while a chain waits, lowers it. Target: >= 90 %.

The latency figures are those of the median of ``--repeats`` runs (by wall time). Pass
``--profile FILE`` to write a cProfile of the engine's worker thread in one 0 ms run (read it
with ``pstats``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import itertools
import tempfile
import time
from dataclasses import dataclass, field

import studio  # noqa: F401  (local cost map before litellm)
from studio.engine import EvolutionConfig
from studio.model.records import AgentSpec
from studio.runtime.agents import build_agent
from studio.runtime.providers import demo, register_providers
from studio.runtime.providers.scripted import ScriptedProvider, register_script

TOPICS = ["autumn leaves", "morning coffee", "city rain", "old bridge", "snow owl",
          "harbor fog", "desert wind", "paper lantern", "river stone", "night train",
          "summer storm", "winter market", "spring rain", "mountain lake", "empty station",
          "lighthouse", "garden snail", "harvest moon", "frozen pond", "kite festival"]

_batch: contextvars.ContextVar[int | None] = contextvars.ContextVar("bench_batch", default=None)
_chain: contextvars.ContextVar[object] = contextvars.ContextVar("bench_chain", default=None)
_batch_ids = itertools.count()


@dataclass
class Call:
    start: float
    end: float
    batch: int | None
    chain: object
    """The example's agent→critic chain (one ``run_chain`` call), or the asyncio task."""


@dataclass
class Log:
    calls: list[Call] = field(default_factory=list)
    batches: dict[int, tuple[float, float]] = field(default_factory=dict)
    tasks: list[object] = field(default_factory=list)
    """Keeps the tasks alive, so no two chains share an id."""


LOG = Log()


def instrument() -> None:
    """Record each provider call (entry to return, its task and batch) and each batch window."""
    original = ScriptedProvider.acompletion

    async def acompletion(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return await original(self, *args, **kwargs)
        finally:
            chain = _chain.get() or asyncio.current_task()
            LOG.tasks.append(chain)
            LOG.calls.append(Call(start, time.perf_counter(), _batch.get(), chain))

    ScriptedProvider.acompletion = acompletion

    import studio.engine.batch as batch_module
    import studio.engine.loop as loop_module

    score_batch = batch_module.score_batch

    async def wrapped(*args, **kwargs):
        batch = next(_batch_ids)
        token = _batch.set(batch)
        start = time.perf_counter()
        try:
            return await score_batch(*args, **kwargs)
        finally:
            LOG.batches[batch] = (start, time.perf_counter())
            _batch.reset(token)

    loop_module.score_batch = wrapped

    run_chain = batch_module.run_chain

    async def chain(*args, **kwargs):
        token = _chain.set(object())  # inherited by the tasks ADK creates for the calls
        try:
            return await run_chain(*args, **kwargs)
        finally:
            _chain.reset(token)

    batch_module.run_chain = chain


def schedule_figures(log: Log, started: float, ended: float, concurrency: int
                     ) -> tuple[float, float]:
    """(idle share of the wall time, integral of in-flight calls / integral of allowed)."""
    chains: dict[tuple[int, int], float] = {}  # (batch, chain) -> end of its last call
    for call in log.calls:
        if call.batch is not None:
            key = (call.batch, id(call.chain))
            chains[key] = max(chains.get(key, 0.0), call.end)
    points = {started, ended}
    for call in log.calls:
        points.update((call.start, call.end))
    for start, end in log.batches.values():
        points.update((start, end))
    points.update(chains.values())
    times = sorted(p for p in points if started <= p <= ended)
    idle = in_flight = allowed = 0.0
    for a, b in zip(times, times[1:], strict=False):
        if b <= a:
            continue
        mid = (a + b) / 2
        flying = [c for c in log.calls if c.start <= mid < c.end]
        reflections = sum(1 for c in flying if c.batch is None)
        unfinished = sum(1 for (batch, _), end in chains.items()
                         if log.batches[batch][0] <= mid < end)
        if not flying:
            idle += b - a
        in_flight += len(flying) * (b - a)
        allowed += (min(concurrency, unfinished) + reflections) * (b - a)
    return idle / (ended - started), in_flight / allowed if allowed else 1.0


def bare_call_cpu(model: str, calls: int, concurrency: int = 1) -> float:
    """CPU seconds per bare ADK runner + LiteLLM call (no studio code around it), ``concurrency``
    runners calling at once."""
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    agent = build_agent(AgentSpec(name="bare", model=model, instruction="Write a haiku."))
    service = InMemorySessionService()
    runner = Runner(agent=agent, app_name="bare", session_service=service)

    async def run(n: int) -> None:
        for _ in range(n):
            session = await service.create_session(app_name="bare", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text="topic: x")])
            async for _ in runner.run_async(user_id="u", session_id=session.id,
                                            new_message=message):
                pass

    async def run_concurrently(n: int) -> None:
        await asyncio.gather(*(run(n // concurrency) for _ in range(concurrency)))

    asyncio.run(run(5))
    started = time.process_time()
    asyncio.run(run_concurrently(calls))
    return (time.process_time() - started) / (calls // concurrency * concurrency)


def profile_worker(path: str):
    """cProfile the run's worker thread (where the engine runs) into ``path``; returns undo."""
    import cProfile

    from studio.engine.worker import RunManager

    work = RunManager._work

    def profiled(self, engine, handle):
        profiler = cProfile.Profile()
        profiler.enable()
        try:
            work(self, engine, handle)
        finally:
            profiler.disable()
            profiler.dump_stats(path)

    RunManager._work = profiled
    return lambda: setattr(RunManager, "_work", work)


@dataclass
class RunFigures:
    calls: int
    trials: int
    wall: float
    cpu: float
    idle_share: float
    busy_ratio: float
    mean_in_flight: float


def evolve_once(latency_ms: float, examples: int, iterations: int, concurrency: int,
                profile: str | None = None) -> RunFigures:
    from studio import evolve
    from studio.critics.agent import SimpleCriticOutput
    from studio.store import open_store

    name = f"cpu_demo_{latency_ms:g}".replace(".", "_")
    model = register_script(name, demo.reply, latency_s=latency_ms / 1000)
    writer = build_agent(AgentSpec(name="writer", model=model,
                                   instruction="Write a haiku about the given topic."))
    critic = build_agent(AgentSpec(name="critic", model=model,
                                   instruction="Score the haiku 0.0-1.0 with feedback.",
                                   output_schema=SimpleCriticOutput.model_json_schema()))
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/cpu.db", cached=False)
    config = EvolutionConfig(max_iterations=iterations, minibatch_size=3,
                             max_concurrency=concurrency, seed=0)
    LOG.calls.clear()
    LOG.batches.clear()
    LOG.tasks.clear()
    coroutine = evolve(agent=writer, trainset=[{"topic": t} for t in TOPICS[:examples]],
                       critic=critic, config=config, store=store, reflection_model=model)
    restore = profile_worker(profile) if profile else None
    started, cpu_started = time.perf_counter(), time.process_time()
    result = asyncio.run(coroutine)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    ended = started + wall
    if restore is not None:
        restore()
    idle, busy = schedule_figures(LOG, started, ended, concurrency)
    in_flight = sum(c.end - c.start for c in LOG.calls) / wall
    return RunFigures(len(LOG.calls), result.metric_calls, wall, cpu, idle, busy, in_flight)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--bare-calls", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3, help="runs at --latency-ms")
    parser.add_argument("--profile", help="write a cProfile of one 0 ms run to this file")
    args = parser.parse_args()
    register_providers()
    instrument()
    register_script("cpu_bare", lambda request: "a haiku")
    shape = (args.examples, args.iterations, args.concurrency)
    evolve_once(0, *shape)  # warm-up: imports, first calls, caches
    bare = [bare_call_cpu("scripted/cpu_bare", args.bare_calls)]
    zero = [evolve_once(0, *shape)]
    bare.append(bare_call_cpu("scripted/cpu_bare", args.bare_calls))
    zero.append(evolve_once(0, *shape))
    slows = [evolve_once(args.latency_ms, *shape) for _ in range(args.repeats)]
    bare.append(bare_call_cpu("scripted/cpu_bare", args.bare_calls))
    floor = min(bare)
    register_script("cpu_bare_slow", lambda request: "a haiku", latency_s=args.latency_ms / 1000)
    floor_slow = min(bare_call_cpu("scripted/cpu_bare_slow", args.bare_calls, args.concurrency)
                     for _ in range(2))
    per_call_zero = min(r.cpu / r.calls for r in zero)
    slow = sorted(slows, key=lambda r: r.wall)[len(slows) // 2]  # the median run by wall time
    per_call_slow = slow.cpu / slow.calls
    print(f"bare ADK runner + LiteLLM call: {floor * 1000:.2f} ms CPU "
          f"(rounds: {', '.join(f'{b * 1000:.2f}' for b in bare)})")
    print(f"bare ADK runner + LiteLLM call at {args.latency_ms:g} ms, {args.concurrency} at once: "
          f"{floor_slow * 1000:.2f} ms CPU")
    for label, run, per_call, bare_floor in (
            ("0 ms", zero[0], per_call_zero, floor),
            (f"{args.latency_ms:g} ms", slow, per_call_slow, floor_slow)):
        print(f"evolve() at {label}: {run.calls} model calls, {run.trials} trials, wall "
              f"{run.wall:.2f} s, CPU {run.cpu:.2f} s = {per_call * 1000:.2f} ms per model call; "
              f"ratio to the bare call at the same latency {per_call / bare_floor:.2f}, to the "
              f"bare call at 0 ms {per_call / floor:.2f} (target <= 1.5)")
    print(f"at {args.latency_ms:g} ms, {args.examples} examples, concurrency "
          f"{args.concurrency}: no model call in flight {slow.idle_share * 100:.1f} % of the "
          f"wall time (target <= 10 %); mean calls in flight "
          f"{slow.busy_ratio * 100:.1f} % of what the schedule allows (target >= 90 %); "
          f"mean in flight {slow.mean_in_flight:.2f} of {args.concurrency} "
          f"(median of {len(slows)} runs by wall time; idle/busy of each: "
          f"{', '.join(f'{r.idle_share * 100:.1f}/{r.busy_ratio * 100:.1f}' for r in slows)})")
    if args.profile:
        evolve_once(0, *shape, profile=args.profile)
        print(f"profile of a 0 ms run written to {args.profile}")


if __name__ == "__main__":
    main()
