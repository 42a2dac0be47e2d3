"""CPU and concurrency benchmark of an ``evolve()`` run: what the studio spends per model call and
how busy it keeps the model calls it is allowed.

    python bench/bench_cpu.py [--latency-ms 100] [--examples 20] [--iterations 6]
                              [--concurrency 5] [--repeats 3] [--jitter 0.2]
                              [--profile out.prof]

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
  It is split into the time *inside batches* (a batch had a chain that could have had a call
  in flight: only CPU between calls kept it from flying) and *between phases* (no batch had a
  chain to run: the schedule itself is serial there, parent batch -> reflection -> child batch
  -> validation, and the time is the engine's bookkeeping and the next call's setup).
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
  a slot left empty while a chain waits, lowers it. Target: >= 90 %. The raw figure (calls in
  flight over C for the whole wall time) is printed beside it.

The bench then runs the same schedule (each batch's chains, ``--concurrency`` at once, and the
reflection calls between batches, in the order the run made them) with bare ADK runners and no
studio code: its idle share and in-flight ratio are the floor that ADK, LiteLLM and the
schedule's serial steps leave on this machine, printed beside the studio's: once on asyncio's
own loop (ADK and LiteLLM as they come) and once on the loop the studio runs runs on
(:class:`studio.runtime.eventloop.StudioEventLoop`, which runs LiteLLM's request setup in
place instead of in a thread).

``--jitter 0.2`` draws each call's latency in ``latency x [0.8, 1.2]``: with a fixed latency all
replies of a round return at once and their CPU runs one after another on the one event loop,
which real models' varying latencies do not do. Both are printed when asked; the target is for
the fixed latency.

The latency figures are those of the median of ``--repeats`` runs (by wall time). Pass
``--profile FILE`` to write a cProfile of the engine's worker thread in one 0 ms run (read it
with ``pstats``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import itertools
import random
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
LATENCY = [0.0]
"""The latency of the run in progress, in seconds (the jitter is drawn around it)."""
JITTER = [0.0]


def instrument(jitter: float = 0.0, seed: int = 0) -> None:
    """Record each provider call (entry to return, its task and batch) and each batch window.
    With ``jitter`` each call's latency is drawn uniformly in ``latency x [1 - j, 1 + j]``
    (seeded), as a real model's replies do not all return at the same moment."""
    original = ScriptedProvider.acompletion
    draw = random.Random(seed)
    JITTER[0] = jitter

    async def acompletion(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            if jitter:  # the script waits latency x (1 - j); this adds up to latency x 2j
                await asyncio.sleep(LATENCY[0] * draw.uniform(0, 2 * jitter))
            return await original(self, *args, **kwargs)
        finally:
            chain = _chain.get() or asyncio.current_task()
            LOG.tasks.append(chain)
            LOG.calls.append(Call(start, time.perf_counter(), _batch.get(), chain))

    ScriptedProvider.acompletion = acompletion

    import studio.engine.loop.engine as loop_module
    import studio.engine.scoring.batch as batch_module

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


@dataclass
class Schedule:
    """How the run's wall time was spent, from the logged calls and batches."""

    idle_share: float
    """No model call in flight, over the wall time."""
    idle_in_batches: float
    """No call in flight while a batch had a chain not yet done (the schedule allowed a call:
    only CPU between calls kept it from flying), over the wall time."""
    idle_between: float
    """No call in flight and no batch with a chain to run: the serial steps between phases
    (bookkeeping, building the reflection prompt, the next phase's first call's setup)."""
    busy_ratio: float
    """Integral of calls in flight / integral of calls the schedule allows."""
    raw_ratio: float
    """Integral of calls in flight / (C x wall time): the schedule not taken into account."""


def schedule_figures(log: Log, started: float, ended: float, concurrency: int) -> Schedule:
    """Idle shares and in-flight ratios of one run (see the module's docstring)."""
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
    idle = idle_in_batches = in_flight = allowed = 0.0
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
            if unfinished:
                idle_in_batches += b - a
        in_flight += len(flying) * (b - a)
        allowed += (min(concurrency, unfinished) + reflections) * (b - a)
    wall = ended - started
    return Schedule(idle / wall, idle_in_batches / wall, (idle - idle_in_batches) / wall,
                    in_flight / allowed if allowed else 1.0, in_flight / (concurrency * wall))


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


def run_shape(log: Log) -> list[int | None]:
    """The run's schedule as it happened: each batch's number of chains (judged examples), and
    None for each reflection call, in the order they started."""
    steps = [(start, len({id(c.chain) for c in log.calls if c.batch == batch}))
             for batch, (start, _) in log.batches.items()]
    steps += [(c.start, None) for c in log.calls if c.batch is None]
    return [size for _, size in sorted(steps, key=lambda step: step[0]) if size != 0]


def bare_schedule(shape: list[int | None], latency_ms: float, concurrency: int,
                  runner=asyncio.run) -> tuple[Schedule, float]:
    """The same schedule (batches of agent→critic chains, ``concurrency`` at once, and the
    reflection calls between them) run with bare ADK runners on the same provider and latency:
    no store, no events, no studio code. Its idle share is the floor ADK, LiteLLM and the
    schedule's own serial steps leave on this machine; returns (figures, wall seconds)."""
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    from studio.critics.agent import SimpleCriticOutput

    model = register_script(f"bare_demo_{latency_ms:g}".replace(".", "_"), demo.reply,
                            latency_s=latency_ms / 1000 * (1 - JITTER[0]))
    LATENCY[0] = latency_ms / 1000
    service = InMemorySessionService()
    runners = {name: Runner(agent=build_agent(AgentSpec(name=name, model=model, **spec)),
                            app_name=name, session_service=service)
               for name, spec in (
                   ("writer", {"instruction": "Write a haiku about the given topic."}),
                   ("critic", {"instruction": "Score the haiku 0.0-1.0 with feedback.",
                               "output_schema": SimpleCriticOutput.model_json_schema()}),
                   ("reflector", {"instruction": "Improve the instruction."}))}

    async def call(name: str, text: str) -> None:
        session = await service.create_session(app_name=name, user_id="u")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runners[name].run_async(user_id="u", session_id=session.id,
                                               new_message=message):
            pass

    async def chain(topic: str, slots: asyncio.Semaphore) -> None:
        async with slots:
            token = _chain.set(object())
            try:
                await call("writer", f"topic: {topic}")
                await call("critic", f"topic: {topic}\nhaiku: a haiku")
            finally:
                _chain.reset(token)

    async def run() -> None:
        for size in shape:
            if size is None:
                await call("reflector", "## Component Text to Improve\nWrite a haiku.")
                continue
            batch = next(_batch_ids)
            token = _batch.set(batch)
            start = time.perf_counter()
            slots = asyncio.Semaphore(concurrency)
            await asyncio.gather(*(chain(TOPICS[i % len(TOPICS)], slots) for i in range(size)))
            LOG.batches[batch] = (start, time.perf_counter())
            _batch.reset(token)

    LOG.calls.clear()
    LOG.batches.clear()
    LOG.tasks.clear()
    started = time.perf_counter()
    runner(run())
    ended = time.perf_counter()
    return schedule_figures(LOG, started, ended, concurrency), ended - started


def profile_worker(path: str):
    """cProfile the run's worker thread (where the engine runs) into ``path``; returns undo."""
    import cProfile

    from studio.engine.hosting.worker import RunManager

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
    schedule: Schedule
    mean_in_flight: float
    shape: list[int | None]


def evolve_once(latency_ms: float, examples: int, iterations: int, concurrency: int,
                profile: str | None = None) -> RunFigures:
    from studio import evolve
    from studio.critics.agent import SimpleCriticOutput
    from studio.store import open_store

    name = f"cpu_demo_{latency_ms:g}".replace(".", "_")
    model = register_script(name, demo.reply, latency_s=latency_ms / 1000 * (1 - JITTER[0]))
    LATENCY[0] = latency_ms / 1000
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
    schedule = schedule_figures(LOG, started, ended, concurrency)
    in_flight = sum(c.end - c.start for c in LOG.calls) / wall
    return RunFigures(len(LOG.calls), result.metric_calls, wall, cpu, schedule, in_flight,
                      run_shape(LOG))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--bare-calls", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3, help="runs at --latency-ms")
    parser.add_argument("--profile", help="write a cProfile of one 0 ms run to this file")
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="each call's latency varies by up to this fraction (e.g. 0.2)")
    args = parser.parse_args()
    register_providers()
    instrument(args.jitter)
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
    spread = f" ±{args.jitter * 100:g} %" if args.jitter else ""
    figures = slow.schedule
    print(f"at {args.latency_ms:g} ms{spread}, {args.examples} examples, concurrency "
          f"{args.concurrency} (median of {len(slows)} runs by wall time):\n"
          f"  no model call in flight {figures.idle_share * 100:.1f} % of the wall time "
          f"(target <= 10 %): {figures.idle_in_batches * 100:.1f} % inside batches (a chain "
          f"waited for CPU), {figures.idle_between * 100:.1f} % between phases (the serial "
          f"steps: bookkeeping, the reflection prompt, the next phase's first call)\n"
          f"  mean calls in flight {figures.busy_ratio * 100:.1f} % of what the schedule allows "
          f"(target >= 90 %); raw: {slow.mean_in_flight:.2f} of {args.concurrency} = "
          f"{figures.raw_ratio * 100:.1f} % of the limit over the whole run\n"
          f"  each run, idle (in batches + between) / schedule-aware in flight: "
          + ", ".join(f"{r.schedule.idle_share * 100:.1f} ({r.schedule.idle_in_batches * 100:.1f}"
                      f" + {r.schedule.idle_between * 100:.1f}) / {r.schedule.busy_ratio * 100:.1f}"
                      for r in slows))
    from studio.runtime import eventloop

    for where, runner in (("asyncio's own loop", asyncio.run),
                          ("the studio's loop (StudioEventLoop, as runs get)", eventloop.run)):
        floor, floor_wall = min((bare_schedule(slow.shape, args.latency_ms, args.concurrency,
                                               runner) for _ in range(2)),
                                key=lambda pair: pair[1])
        print(f"  the same schedule run by bare ADK runners (no studio code) on {where}: idle "
              f"{floor.idle_share * 100:.1f} % ({floor.idle_in_batches * 100:.1f} + "
              f"{floor.idle_between * 100:.1f}), in flight {floor.busy_ratio * 100:.1f} % of "
              f"what it allows; wall {floor_wall:.2f} s, the studio's run "
              f"{slow.wall / floor_wall:.2f}x that")
    if args.profile:
        evolve_once(0, *shape, profile=args.profile)
        print(f"profile of a 0 ms run written to {args.profile}")


if __name__ == "__main__":
    main()
