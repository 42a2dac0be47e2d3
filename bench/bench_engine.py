"""Engine benchmark: wall time of a fixed run versus its latency-bound lower bound.

    python bench/bench_engine.py [--latency-ms 100 300] [--concurrency 8] [--iterations 6]
                                 [--processes 1 2] [--train 6] [--val 4] [--minibatch 3]
    python bench/bench_engine.py --overhead [--repeats 3]

``--processes 1 2`` runs the same world once per process count (``EvolutionConfig.processes``),
printing the 1-process figure beside the N-process one (for N > 1 twice: cold, the run starting
the shared worker processes, then warm, the next run reusing them, as a studio server or a
``studio worker`` does); the issue's setting is
``--latency-ms 100 --concurrency 16 --processes 1 2 --train 16 --val 32 --minibatch 16``.

The scripted model answers every call after a fixed latency. The lower bound is the number of
calls on the critical path times that latency: per batch of k examples (agent then critic for
each, C calls in flight) max(2, ceil(2k / C)) call times, plus one reflection call per iteration.
The ratio wall / bound measures everything the studio adds: ADK, LiteLLM, tracing, the store.

With ``--processes``, the bench also runs the FLOOR: the same schedule (the run's batch sizes and
reflection calls, in order) on bare ADK runners + LiteLLM with no studio code, in one process and
fanned out over N spawned processes exactly as the engine shards a batch (each process runs its
share of the chains with its share of the concurrency, returns the outputs; reflections run in
the parent). Its wall / bound is what ADK, LiteLLM, a process hop and this machine's cores leave
before any studio code; printed beside the studio's ratio, measured in the same run.

A second bound adds the CPU that ADK + LiteLLM spend on every call (measured here, on a bare
runner), because in one Python process the CPU of concurrent calls runs one at a time: the ratio
to it shows the studio's own overhead apart from the framework's.

``--overhead`` compares a workflow run with a single-agent run: the studio's own CPU per model
call, i.e. the run's CPU minus what a bare ADK runner + LiteLLM spends on the same calls
(measured in the same process: one bare ``LlmAgent`` call, one bare 3-agent ``SequentialAgent``
run), divided by the model calls. The workflow case is outline -> write -> polish
(``scripted/pipeline``), evolving the writer; the single case is the haiku writer
(``scripted/demo``). Target: the workflow's figure within 10% of the single agent's.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import tempfile
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import studio  # noqa: F401
from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.scoring.processes import SHARD_ROUNDS
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunSpec
from studio.runtime import eventloop
from studio.runtime.agents import build_agent
from studio.runtime.providers.scripted import register_script
from studio.store import open_store

TOPICS = ["autumn leaves", "morning coffee", "city rain", "old bridge", "snow owl",
          "harbor fog", "desert wind", "paper lantern", "river stone", "night train"]


def batches_and_reflections(store, run_id: str) -> tuple[list[int], int]:
    """Sizes of the batches the run actually scored (cache hits cost nothing), reflections."""
    batches = Counter((t.candidate_id, t.phase.value, t.iteration)
                      for t in store.trials(run_id, with_trace=False))
    reflections = sum(1 for p in store.proposals(run_id) if p.edited_from is None)
    return list(batches.values()), reflections


def bare_call_cpu(model: str, calls: int = 60) -> float:
    """CPU seconds per call of a bare ADK runner + LiteLLM call (no studio code around it)."""
    return _bare_cpu(build_agent(AgentSpec(name="bare", model=model, instruction="Write.")),
                     calls)


def bare_workflow_cpu(model: str, runs: int = 40) -> float:
    """CPU seconds per run of a bare ADK ``SequentialAgent`` of three agents passing state (three
    model calls), on a bare runner: the framework's floor for one workflow trial."""
    from google.adk.agents import SequentialAgent

    steps = [build_agent(AgentSpec(name="outliner", model=model, instruction="Outline.")),
             build_agent(AgentSpec(name="writer", model=model, instruction="Write: {outline}")),
             build_agent(AgentSpec(name="polisher", model=model, instruction="Polish: {draft}"))]
    steps[0].output_key, steps[1].output_key = "outline", "draft"
    with warnings.catch_warnings():  # ADK 2.13 announces a successor that cannot nest yet
        warnings.simplefilter("ignore", DeprecationWarning)
        flow = SequentialAgent(name="bare_flow", sub_agents=steps)
    return _bare_cpu(flow, runs)


def _bare_cpu(agent, runs: int) -> float:
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    service = InMemorySessionService()
    runner = Runner(agent=agent, app_name="bare", session_service=service)

    async def run(n: int) -> None:
        for _ in range(n):
            session = await service.create_session(app_name="bare", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text="topic: x")])
            async for _ in runner.run_async(user_id="u", session_id=session.id,
                                            new_message=message):
                pass

    asyncio.run(run(5))
    started = time.process_time()
    asyncio.run(run(runs))
    return (time.process_time() - started) / runs


def workflow_spec(model: str) -> RunSpec:
    """The pipeline world: only the writer's instruction is evolved (it is what helps)."""
    return RunSpec(
        agents=[AgentSpec(name="outliner", model=model, instruction="Outline the topic.",
                          output_key="outline"),
                AgentSpec(name="writer", model=model, output_key="draft",
                          instruction="Write a haiku from this outline: {outline}"),
                AgentSpec(name="polisher", model=model,
                          instruction="Polish the haiku. Draft:\n{draft}")],
        critic=CriticSpec(agent=AgentSpec(name="critic", model=model)),
        reflection=ReflectionSpec(model=model), components=["writer.instruction"])


def studio_overhead(spec: RunSpec, agent_calls: int, trial_floor: float, call_floor: float,
                    *, concurrency: int, iterations: int) -> tuple[float, int, int]:
    """(the studio's own CPU seconds, model calls, trials) of one run of ``spec``: the run's CPU
    minus the bare floor of its calls (``trial_floor`` per agent run of ``agent_calls`` calls,
    ``call_floor`` per critic and reflection call)."""
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/overhead.db", cached=False)
    config = EvolutionConfig(max_iterations=iterations, minibatch_size=3,
                             max_concurrency=concurrency, seed=0)
    topics = [f"{TOPICS[i % len(TOPICS)]} {i}" for i in range(10)]
    run = create_run(store, spec=spec, trainset=[{"topic": t} for t in topics[:6]],
                     valset=[{"topic": t} for t in topics[6:]], config=config)
    engine = build_engine(store, run.id)
    started = time.process_time()
    asyncio.run(engine.run())
    cpu = time.process_time() - started
    trials = store.count_trials(run.id)
    _, reflections = batches_and_reflections(store, run.id)
    calls = trials * agent_calls + trials + reflections
    floor = trials * trial_floor + (trials + reflections) * call_floor
    store.close()
    return cpu - floor, calls, trials


def compare_overhead(latency_ms: float, concurrency: int, iterations: int, repeats: int) -> None:
    """The studio's own CPU per model call (and per trial): 3-agent SequentialAgent vs one
    agent."""
    register_script("bench_bare", lambda request: "a haiku")
    single_floor = bare_call_cpu("scripted/bench_bare")
    flow_floor = bare_workflow_cpu("scripted/bench_bare")
    print(f"bare floors: one LlmAgent call {single_floor * 1000:.2f} ms CPU; one 3-agent "
          f"SequentialAgent run {flow_floor * 1000:.2f} ms CPU "
          f"({flow_floor / 3 * 1000:.2f} ms per call)")
    cases = {"single agent": (spec_for(f"scripted/demo@{latency_ms:g}ms"), 1, single_floor),
             "3-agent workflow": (workflow_spec(f"scripted/pipeline@{latency_ms:g}ms"), 3,
                                  flow_floor)}
    per_call: dict[str, float] = {}
    per_trial: dict[str, float] = {}
    for _ in range(repeats):  # interleaved, so a load spike on a shared machine hits both
        for name, (spec, agents, trial_floor) in cases.items():
            overhead, calls, trials = studio_overhead(
                spec, agents, trial_floor, single_floor, concurrency=concurrency,
                iterations=iterations)
            print(f"  {name}: studio overhead {overhead / calls * 1000:.3f} ms CPU per model "
                  f"call ({calls} calls), {overhead / trials * 1000:.3f} ms per trial "
                  f"({trials} trials)")
            per_call[name] = min(per_call.get(name, math.inf), overhead / calls)
            per_trial[name] = min(per_trial.get(name, math.inf), overhead / trials)
    single, flow = per_call["single agent"], per_call["3-agent workflow"]
    print(f"studio overhead per model call (best of {repeats}): single agent "
          f"{single * 1000:.3f} ms, 3-agent workflow {flow * 1000:.3f} ms: ratio "
          f"{flow / single:.3f} (target <= 1.10)")
    single, flow = per_trial["single agent"], per_trial["3-agent workflow"]
    print(f"per trial (a workflow trial is 3 agent calls + 1 critic call, a single one 1 + 1): "
          f"single agent {single * 1000:.3f} ms, 3-agent workflow {flow * 1000:.3f} ms: ratio "
          f"{flow / single:.3f}")


_BARE: dict = {}


def _bare_setup(model: str, concurrency: int) -> None:
    """A floor process (or the parent): bare ADK runners for writer, critic and reflector."""
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    from studio.critics.agent import SimpleCriticOutput
    from studio.runtime.providers import register_providers

    register_providers()
    service = InMemorySessionService()
    specs = {"writer": {"instruction": "Write a haiku about the given topic."},
             "critic": {"instruction": "Score the haiku 0.0-1.0 with feedback.",
                        "output_schema": SimpleCriticOutput.model_json_schema()},
             "reflector": {"instruction": "Improve the instruction."}}
    _BARE.update(service=service, concurrency=concurrency, loop=asyncio.new_event_loop(),
                 runners={name: Runner(agent=build_agent(AgentSpec(name=name, model=model,
                                                                   **spec)),
                                       app_name=name, session_service=service)
                          for name, spec in specs.items()})


async def _bare_call(name: str, text: str) -> str:
    from google.genai import types

    service = _BARE["service"]
    session = await service.create_session(app_name=name, user_id="u")
    message = types.Content(role="user", parts=[types.Part(text=text)])
    reply = ""
    async for event in _BARE["runners"][name].run_async(user_id="u", session_id=session.id,
                                                        new_message=message):
        if event.content and event.content.parts:
            reply = "".join(p.text or "" for p in event.content.parts)
    return reply


def _bare_chains(topics: list[str]) -> list[str]:
    """A batch's agent->critic chains, ``concurrency`` at once (the floor of run_chain)."""

    async def all_chains() -> list[str]:
        slots = asyncio.Semaphore(_BARE["concurrency"])

        async def chain(topic: str) -> str:
            async with slots:
                haiku = await _bare_call("writer", f"topic: {topic}")
                return await _bare_call("critic", f"topic: {topic}\nhaiku: {haiku}")

        return list(await asyncio.gather(*(chain(topic) for topic in topics)))

    return _BARE["loop"].run_until_complete(all_chains())


def bare_floor(batches: list[int], reflections: list[int], model: str, concurrency: int,
               processes: int) -> float:
    """Wall seconds of the run's schedule on bare ADK runners: each batch's chains (over
    ``processes`` spawned processes when > 1, sharded like the engine's fan-out), each
    reflection call in the parent, in the run's order (``reflections`` = batch positions)."""
    per_process = max(1, math.ceil(concurrency / processes))
    _bare_setup(model, concurrency)
    pool = None
    if processes > 1:
        pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_bare_setup, initargs=(model, per_process))
        for future in [pool.submit(_bare_chains, ["warm"]) for _ in range(processes * 2)]:
            future.result()  # imports and first calls, outside the measured wall
    _bare_chains(["warm"])
    loop = _BARE["loop"]

    async def fanned(topics: list[str]) -> None:
        count = max(min(processes, len(topics)),
                    math.ceil(len(topics) / (per_process * SHARD_ROUNDS)))  # as the engine
        size = math.ceil(len(topics) / count)
        shards = [topics[i:i + size] for i in range(0, len(topics), size)]
        await asyncio.gather(*(asyncio.wrap_future(pool.submit(_bare_chains, shard))
                               for shard in shards))

    started = time.perf_counter()
    for position, size in enumerate(batches):
        for _ in range(reflections.count(position)):
            loop.run_until_complete(_bare_call("reflector", "Improve: write a haiku."))
        topics = [f"{TOPICS[i % len(TOPICS)]} {i}" for i in range(size)]
        if pool is None:
            _bare_chains(topics)
        else:
            loop.run_until_complete(fanned(topics))
    for _ in range(reflections.count(len(batches))):
        loop.run_until_complete(_bare_call("reflector", "Improve: write a haiku."))
    wall = time.perf_counter() - started
    if pool is not None:
        pool.shutdown()
    pending = asyncio.all_tasks(loop)  # LiteLLM's logging worker
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()
    return wall


def schedule_of(store, run_id: str) -> tuple[list[int], list[int]]:
    """The run's batches in order (sizes of what was judged: a cached batch makes no call) and,
    per reflection, how many of those batches ran before it (it runs before its child's)."""
    batches: dict[tuple, list[int]] = {}
    for trial in store.trials(run_id, with_trace=False):
        batches.setdefault((trial.phase.value, trial.iteration), []).append(trial.id)
    keys = sorted(batches, key=lambda key: min(batches[key]))
    positions = []
    for proposal in store.proposals(run_id):
        if proposal.edited_from is None and proposal.kind.value == "reflection":
            later = [i for i, (phase, iteration) in enumerate(keys)
                     if iteration > proposal.iteration
                     or (iteration == proposal.iteration and phase != "parent")]
            positions.append(later[0] if later else len(keys))
    return [len(batches[key]) for key in keys], sorted(positions)


def spec_for(model: str) -> RunSpec:
    return RunSpec(agent=AgentSpec(name="writer", model=model,
                                   instruction="Write a haiku about the given topic."),
                   critic=CriticSpec(agent=AgentSpec(name="critic", model=model)),
                   reflection=ReflectionSpec(model=model))


def run_once(latency: float, concurrency: int, iterations: int, call_cpu: float, *,
             processes: int = 1, train: int = 6, val: int = 4, minibatch: int = 3,
             floor: bool = False, label: str = "") -> None:
    # the built-in demo world with a latency suffix: every worker process has it
    model = f"scripted/demo@{latency * 1000:g}ms"
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/engine.db", cached=False)
    config = EvolutionConfig(max_iterations=iterations, minibatch_size=minibatch,
                             max_concurrency=concurrency, seed=0, processes=processes)
    topics = [f"{TOPICS[i % len(TOPICS)]} {i}" for i in range(train + val)]
    run = create_run(store, spec=spec_for(model),
                     trainset=[{"topic": t} for t in topics[:train]],
                     valset=[{"topic": t} for t in topics[train:]], config=config)
    engine = build_engine(store, run.id)
    started = time.perf_counter()
    eventloop.run(engine.run())  # the loop a run gets from RunManager and `studio worker`
    wall = time.perf_counter() - started
    batches, reflections = batches_and_reflections(store, run.id)
    calls = sum(max(2, math.ceil(2 * k / concurrency)) for k in batches) + reflections
    bound = calls * latency
    cpu_bound = bound + (2 * sum(batches) + reflections) * call_cpu
    print(f"latency {latency * 1000:.0f} ms, {processes} process(es){label}: {iterations} "
          f"iterations, "
          f"{store.count_trials(run.id)} trials, {reflections} reflections; wall {wall:.2f} s "
          f"vs latency-bound lower bound {bound:.2f} s ({calls} calls on the critical path): "
          f"ratio {wall / bound:.3f} (target <= 1.15; gepa-adk 2.8: 1.6-1.9); vs the bound "
          f"plus serialized framework CPU {cpu_bound:.2f} s: ratio {wall / cpu_bound:.3f}")
    if floor:
        order, positions = schedule_of(store, run.id)
        floor_wall = bare_floor(order, positions, model, concurrency, processes)
        print(f"  floor, the same schedule on bare ADK runners + LiteLLM in {processes} "
              f"process(es), no studio code: wall {floor_wall:.2f} s, ratio "
              f"{floor_wall / bound:.3f} to the bound; the studio's run {wall / floor_wall:.3f}x "
              f"the floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=float, nargs="+",
                        help="default: 100 300 (wall time); 10 (--overhead)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--processes", type=int, nargs="+", default=[1])
    parser.add_argument("--train", type=int, default=6)
    parser.add_argument("--val", type=int, default=4)
    parser.add_argument("--minibatch", type=int, default=3)
    parser.add_argument("--overhead", action="store_true",
                        help="compare the studio's CPU per model call: workflow vs one agent")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.overhead:
        compare_overhead((args.latency_ms or [10.0])[0], args.concurrency, args.iterations,
                         args.repeats)
        return
    register_script("bench_bare", lambda request: "a haiku")
    call_cpu = bare_call_cpu("scripted/bench_bare")  # also pays import and first-call costs
    print(f"bare ADK runner + LiteLLM call: {call_cpu * 1000:.2f} ms of CPU each "
          f"(concurrency {args.concurrency})")
    for latency_ms in args.latency_ms or [100.0, 300.0]:
        for processes in args.processes:
            shape = dict(processes=processes, train=args.train, val=args.val,
                         minibatch=args.minibatch)
            if processes > 1:  # the runs of a process share its pool: the first one starts it
                run_once(latency_ms / 1000, args.concurrency, args.iterations, call_cpu,
                         label=" (cold: this run starts the processes)", **shape)
            run_once(latency_ms / 1000, args.concurrency, args.iterations, call_cpu,
                     floor=len(args.processes) > 1,
                     label=" (warm: the processes of the run before)" if processes > 1 else "",
                     **shape)


if __name__ == "__main__":
    main()
