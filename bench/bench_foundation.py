"""Foundation benchmark: embedded model speed, CPU per trial, store insert rate.

    python bench/bench_foundation.py [--trials 300] [--inserts 3000]

Every figure is measured in this one run and compared as a ratio, because these machines are
shared and noisy: absolute numbers move, ratios measured side by side hold.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid

import studio  # noqa: F401  (local cost map before litellm)
from studio.critics.agent import CriticScorer, SimpleCriticOutput
from studio.model.records import AgentSpec, Candidate, Run, Split, Trial, TrialPhase
from studio.runtime.agents import build_agent
from studio.runtime.execution import AgentExecutor
from studio.runtime.providers import LOCAL_MODEL
from studio.runtime.providers.local import local_model
from studio.runtime.providers.scripted import register_script
from studio.store import open_store

PROMPT = "Write a long story about a lighthouse keeper and the sea."


# --------------------------------------------------------------------------- embedded model


def raw_tokens_per_second(max_tokens: int) -> float:
    llama = local_model().llama()
    started = time.perf_counter()
    result = llama.create_chat_completion(messages=[{"role": "user", "content": PROMPT}],
                                          max_tokens=max_tokens, temperature=0.0)
    elapsed = time.perf_counter() - started
    return result["usage"]["completion_tokens"] / elapsed


def adk_tokens_per_second(executor: AgentExecutor, agent, max_tokens: int) -> float:
    result = executor.execute_sync(agent, PROMPT)
    if result.error:
        raise SystemExit(f"embedded model failed: {result.error}")
    return result.trace["usage"]["completion_tokens"] / result.latency_s


def bench_embedded_model(max_tokens: int = 128, repeats: int = 3) -> None:
    agent = build_agent(AgentSpec(name="writer", model=LOCAL_MODEL, instruction="",
                      generate_content_config={"temperature": 0.0,
                                               "max_output_tokens": max_tokens}))
    executor = AgentExecutor(timeout_s=600)
    raw_tokens_per_second(8)  # load the model and warm both paths
    adk_tokens_per_second(executor, agent, 8)
    raw, adk = [], []
    for _ in range(repeats):  # interleaved, so drift hits both alike
        raw.append(raw_tokens_per_second(max_tokens))
        adk.append(adk_tokens_per_second(executor, agent, max_tokens))
    raw_median, adk_median = statistics.median(raw), statistics.median(adk)
    print(f"embedded model tokens/s: raw llama-cpp {raw_median:.1f}, through ADK + LiteLLM "
          f"{adk_median:.1f}; ratio {adk_median / raw_median:.3f} (target >= 0.9)")


# --------------------------------------------------------------------------- CPU per trial


def scripted_agents():
    register_script("bench_writer", lambda request: "leaves drift and fall\nred on the path\n"
                                                    "autumn goes quiet")
    register_script("bench_critic", lambda request: {"score": 0.75, "feedback": "Vivid."})
    writer = build_agent(AgentSpec(name="writer", model="scripted/bench_writer",
                       instruction="Write a haiku."))
    critic = build_agent(AgentSpec(name="critic", model="scripted/bench_critic",
                                   instruction="Evaluate.",
                                   output_schema=SimpleCriticOutput.model_json_schema()))
    return writer, critic


async def bare_pair(writer, critic, runners, session_service, n: int) -> None:
    """The floor: two bare ADK runner calls per trial (agent, then critic), nothing else."""
    from google.genai import types

    for i in range(n):
        for agent in (writer, critic):
            session = await session_service.create_session(app_name="bare", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text=f"topic {i}")])
            async for _ in runners[agent.name].run_async(user_id="u", session_id=session.id,
                                                         new_message=message):
                pass
            await session_service.delete_session(app_name="bare", user_id="u",
                                                 session_id=session.id)


async def studio_trials(writer, critic, store, ids, n: int) -> None:
    """The product path: executor (trace, limits) + CriticScorer (parse) + committed trial."""
    executor = AgentExecutor()
    scorer = CriticScorer(critic, executor)
    run_id, candidate_id, example_id = ids
    for i in range(n):
        result = await executor.execute(writer, f"topic {i}", state={"topic": str(i)})
        score, metadata = await scorer.async_score(f"topic {i}", result.output)
        store.add_trial(Trial(run_id=run_id, candidate_id=candidate_id, example_id=example_id,
                              split=Split.TRAIN, example_index=0, phase=TrialPhase.VALSET,
                              input_text=f"topic {i}", output=result.output, score=score,
                              feedback=metadata, trace=result.trace, latency_s=result.latency_s,
                              tokens=result.tokens))


def cpu(fn) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def bench_cpu_per_trial(n: int) -> None:
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService

    writer, critic = scripted_agents()
    session_service = InMemorySessionService()
    runners = {a.name: Runner(agent=a, app_name="bare", session_service=session_service)
               for a in (writer, critic)}
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/cpu.db", cached=False)
    ids = seed_run(store)
    asyncio.run(bare_pair(writer, critic, runners, session_service, 20))  # warm-up
    asyncio.run(studio_trials(writer, critic, store, ids, 20))
    bare, ours = [], []
    for _ in range(3):  # interleaved rounds
        bare.append(cpu(lambda: asyncio.run(bare_pair(writer, critic, runners,
                                                      session_service, n))) / n)
        ours.append(cpu(lambda: asyncio.run(studio_trials(writer, critic, store, ids, n))) / n)
    floor, trial = min(bare), min(ours)
    print(f"CPU per trial (agent + critic, scripted model, zero latency): studio "
          f"{trial * 1000:.2f} ms, two bare ADK runner calls {floor * 1000:.2f} ms; ratio "
          f"{trial / floor:.3f} (target <= 1.10)")


# --------------------------------------------------------------------------- store


def seed_run(store) -> tuple[str, int, int]:
    run = store.create_run(Run(id=uuid.uuid4().hex[:12], name="bench"))
    store.add_examples(run.id, Split.TRAIN, [{"topic": "x"}])
    [example] = store.examples(run.id)
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0,
                                              components={"instruction": "x"}, content_hash="h"))
    return run.id, candidate.id, example.id


def bench_store(n: int) -> None:
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/store.db", cached=False)
    run_id, candidate_id, example_id = seed_run(store)
    trace = {"events": [{"author": "writer", "type": "text", "text": "x" * 200}],
             "tool_calls": [], "state_delta": {}, "usage": {"total_tokens": 120}}
    trials = [Trial(run_id=run_id, candidate_id=candidate_id, example_id=example_id,
                    split=Split.TRAIN, example_index=0, phase=TrialPhase.VALSET,
                    input_text="topic: autumn leaves", output="a haiku " * 10, score=0.5,
                    feedback={"feedback": "fine " * 20}, trace=trace) for _ in range(n)]
    started = time.perf_counter()
    for trial in trials:
        store.add_trial(trial)  # one commit per trial, as the engine does
    rate = n / (time.perf_counter() - started)
    print(f"store inserts: {rate:.0f} trials/s on SQLite, one commit each; ratio to target "
          f"{rate / 2000:.2f} (target >= 2000/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--inserts", type=int, default=3000)
    parser.add_argument("--skip-model", action="store_true", help="skip the embedded model")
    args = parser.parse_args()
    if not args.skip_model:
        bench_embedded_model()
    bench_cpu_per_trial(args.trials)
    bench_store(args.inserts)


if __name__ == "__main__":
    main()
