"""Offline runs that improve? ``examples/capitals.yaml`` on the embedded SmolLM2, five seeds.

    python bench/bench_offline.py                      # the project's reflection.strategy
    python bench/bench_offline.py --strategy llm rules # each strategy, the same five seeds
    python bench/bench_offline.py --strategy rules --probe 3

``--probe N`` then scores the seed instruction and the rules operator's first proposal on every
example (train and validation) N times each, outside the loop, and prints per check how often
it passed: whether the text can move the model at all, apart from GEPA's acceptance rule.

Each run is in-process on a temporary SQLite store with ``run.seed`` = 0..4 (the parent
selection and the minibatches; the split is the project's own). Per seed it prints the baseline's
validation mean, the best pooled candidate's, the gain, how many proposals were accepted and the
run's wall time; then "N of 5 runs gained >= 0.2" per strategy. The embedded model is slow on a
shared CPU: run it once, not in a loop.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import warnings
from pathlib import Path

import studio  # noqa: F401
from studio.critics.adapters import build_critic
from studio.critics.protocol import Sample
from studio.engine import build_engine
from studio.engine.policies.pool import pool_scores
from studio.model.records import ProposalStatus, example_expected, example_input_text
from studio.projects.files import check_project_datasets, create_project_run, load_project
from studio.runtime.agents import build_agent
from studio.runtime.execution import AgentExecutor
from studio.store import open_store

PROJECT = Path(__file__).resolve().parent.parent / "examples" / "capitals.yaml"
TARGET_GAIN = 0.2


def run_once(path: Path, strategy: str | None, seed: int, folder: str,
             show: bool = False) -> dict:
    """One seeded run of the project; its baseline and best validation means."""
    project, base_dir = load_project(path)
    if strategy is not None:
        reflection = project.reflection.model_copy(update={"strategy": strategy})
        project = project.model_copy(update={"reflection": reflection})
    store = open_store(f"sqlite:///{folder}/{strategy or 'project'}-{seed}.db")
    config = project.run.model_copy(update={"seed": seed})
    run = create_project_run(store, project, base_dir, config=config, source=str(path))
    started = time.perf_counter()
    engine = build_engine(store, run.id)
    asyncio.run(engine.run())
    seconds = time.perf_counter() - started
    pool = pool_scores(store, store.get_run(run.id))
    baseline = pool.means[pool.pooled_ids[0]]
    accepted = sum(p.status is ProposalStatus.ACCEPTED for p in store.proposals(run.id))
    if show:
        print_run(store, run.id)
    first = next((p.text for p in store.proposals(run.id) if p.text.strip()), None)
    return {"first_proposal": first, "baseline": baseline, "best": pool.best_score,
            "accepted": accepted, "proposals": len(store.proposals(run.id)), "seconds": seconds}


def print_run(store, run_id: str) -> None:
    """Each proposal (status, reason, text) and each trial's score and output."""
    for proposal in store.proposals(run_id):
        print(f"  it {proposal.iteration} {proposal.status.value}: "
              f"{proposal.invalid_reason or ''}\n    " + proposal.text.replace("\n", "\n    "))
    for trial in store.trials(run_id, with_trace=False):
        print(f"  {trial.phase.value:<8} cand {trial.candidate_id} ex {trial.example_id} "
              f"{trial.score}  {trial.output[:70]!r}")


async def pass_rates(path: Path, instruction: str, repeats: int) -> dict[str, float]:
    """Per check, the share of replies that passed it, over every example ``repeats`` times."""
    project, base_dir = load_project(path)
    sets = check_project_datasets(project, base_dir, source=str(path))
    rows = sets.train + (sets.val or [])
    spec = project.run_spec()
    agent = build_agent(spec.agent.model_copy(update={"instruction": instruction}))
    critic = build_critic({**(spec.critic.evaluator or {}), "name": spec.critic.name})
    executor = AgentExecutor(max_concurrency=project.run.max_concurrency)
    passed: dict[str, list[float]] = {}
    for _ in range(repeats):
        for row in rows:
            text = example_input_text(row, spec.input_key)
            result = await executor.execute(agent, text)
            feedback = await critic.assess(Sample(
                input_text=text, output=result.output or "", expected=example_expected(row),
                example=row))
            score = feedback.score
            for part in feedback.extra.get("components") or [{"name": "score", "score": score}]:
                passed.setdefault(part["name"], []).append(float(part["score"] == 1.0))
            passed.setdefault("mean score", []).append(score or 0.0)
    return {name: sum(values) / len(values) for name, values in passed.items()}


def probe(path: Path, proposal: str | None, repeats: int) -> None:
    seed = load_project(path)[0].run_spec().agent.instruction
    for label, text in (("seed instruction", seed), ("rules proposal", proposal)):
        if text is None:
            continue
        rates = asyncio.run(pass_rates(path, text, repeats))
        print(f"probe, {label} ({repeats} x every example): "
              + "  ".join(f"{name} {rate:.2f}" for name, rate in rates.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=PROJECT)
    parser.add_argument("--strategy", nargs="*", default=[None],
                        help="llm, rules, rules+llm (default: the project's)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--probe", type=int, default=0, metavar="N",
                        help="score the seed and the first rules proposal N times each")
    parser.add_argument("--show", action="store_true", help="print each run's proposals, trials")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as folder:
        for strategy in args.strategy:
            label = strategy or "project's strategy"
            gained, first_proposal = 0, None
            print(f"== {args.project.name}, reflection.strategy: {label}")
            for seed in range(args.seeds):
                result = run_once(args.project, strategy, seed, folder, args.show)
                gain = (result["best"] or 0.0) - (result["baseline"] or 0.0)
                first_proposal = first_proposal or result["first_proposal"]
                gained += gain >= TARGET_GAIN - 1e-9
                print(f"seed {seed}: baseline val mean {result['baseline']:.3f}  best val mean "
                      f"{result['best']:.3f}  gain {gain:+.3f}  accepted "
                      f"{result['accepted']}/{result['proposals']} proposals  "
                      f"{result['seconds']:.0f} s", flush=True)
            print(f"{label}: {gained} of {args.seeds} runs gained >= {TARGET_GAIN}")
            if args.probe and first_proposal:
                probe(args.project, first_proposal, args.probe)


if __name__ == "__main__":
    main()
