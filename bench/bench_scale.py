"""Scale: what a run costs as it grows, a dataset as it grows, a page as the store grows.

    python bench/bench_scale.py [--iterations 1000] [--examples 100000] [--runs 10 1000]
                                [--skip-iterations] [--skip-examples] [--skip-pages]

Three figures, each a ratio or a figure measured in this one run (issue 32):

1. **CPU per iteration, late over early**: one run of ``--iterations`` iterations on a
   scripted world at 0 ms per call (the reflection has a new idea every time, the critic likes
   one reply in twenty, so most children are rejected by the rule and a few are pooled: the
   history and the pool grow all run long), the process's CPU between iteration starts.
   Printed: ms per iteration over iterations 1-100 and over the last 100, and their ratio
   (target <= 1.2).
2. **A large dataset to the first trial**: in a fresh process, a project file whose
   ``dataset.train`` and ``dataset.val`` are JSONL files of ``--examples`` rows each is checked
   and stored (``create_project_run``, what ``studio run`` does), its engine built and
   started; the clock stops at the first committed trial. The modules every run imports
   (LiteLLM, ADK) are imported before the clock, as a studio or a worker has them. Printed:
   seconds (wall and CPU) to create, to build, to the first trial, and the process's peak RSS
   (target: under 20 s and under 450 MB at 100,000 examples).
3. **Page loaders against the store's size**: the store reads behind the Runs page (the run
   list and its summaries), the inbox badge, Compare (the run's forks and ancestry) and
   Agreement (its critic's align runs) for the store's oldest run, median of 15, with
   ``--runs`` runs in the store (the others are copies made after it). Printed: each time at
   the smallest and the largest store and their ratio (target <= 1.5).

``PYTHONPATH=<another checkout>`` runs the same bench on another commit (before/after).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import studio  # noqa: F401  (local cost map before litellm)
from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.run.events import IterationStarted, TrialCommitted
from studio.model.records import AgentSpec, CriticSpec, ReflectionSpec, RunSpec
from studio.runtime.providers.demo import REFLECTION_MARKER
from studio.runtime.providers.scripted import register_script
from studio.store import open_store

# --------------------------------------------------------------------------- 1. iterations


def digest(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16)


def endless(request) -> str | dict:
    """A new idea every reflection; one reply in twenty liked: most children are rejected."""
    if REFLECTION_MARKER in request.prompt_text:
        component = request.prompt_text.split(REFLECTION_MARKER, 1)[1].split("## Trials")[0]
        return f"{component.strip()}\nTip {digest(request.prompt_text) % 10**8}."
    if request.json_schema:
        return {"score": 1.0 if digest(request.last_user) % 20 == 0 else 0.5,
                "feedback": "Be more vivid."}
    return f"poem {digest(request.system, request.last_user)}"


def scale_spec() -> RunSpec:
    model = register_script("bench_scale", endless)
    return RunSpec(agent=AgentSpec(name="writer", model=model, instruction="Write a haiku."),
                   critic=CriticSpec(name="liker", agent=AgentSpec(name="critic", model=model)),
                   reflection=ReflectionSpec(model=model))


def iterations(count: int) -> None:
    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/iterations.db", cached=False)
    config = EvolutionConfig(max_iterations=count, seed=0, parallel_proposals=1,
                             skip_perfect_score=False)
    run = create_run(store, spec=scale_spec(), trainset=[{"topic": f"t{i}"} for i in range(30)],
                     valset=[{"topic": f"v{i}"} for i in range(10)], config=config)
    started: dict[int, float] = {}

    def on_event(event) -> None:
        if isinstance(event, IterationStarted):
            started[event.iteration] = time.process_time()

    asyncio.run(build_engine(store, run.id, listeners=[on_event]).run())
    started[count + 1] = time.process_time()
    window = min(100, count // 2)

    def per_iteration(first: int) -> float:
        return (started[first + window] - started[first]) / window * 1000

    early, late = per_iteration(1), per_iteration(count + 1 - window)
    print(f"iterations: {count} ({len(store.proposals(run.id))} proposals, "
          f"{len(store.pooled_ids(run.id))} pooled, {store.count_trials(run.id)} trials); CPU "
          f"per iteration {early:.1f} ms over 1-{window}, {late:.1f} ms over "
          f"{count + 1 - window}-{count}: ratio {late / early:.2f} (target <= 1.2)")
    store.close()


# --------------------------------------------------------------------------- 2. examples

PROJECT = """name: large
agent: {name: writer, model: scripted/demo, instruction: Write a haiku about the given topic.}
critic: {type: agent, name: rule_critic, model: scripted/demo}
reflection: {model: scripted/demo}
components: [instruction]
dataset:
  train: {path: train.jsonl}
  val: {path: val.jsonl}
run: {max_iterations: 1, seed: 0}
"""


def examples(count: int) -> None:
    """The figure, measured in a fresh process (its peak RSS is the run's alone)."""
    found = subprocess.run([sys.executable, __file__, "--first-trial", str(count)],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0:
        raise SystemExit(f"the large-dataset child failed:\n{found.stderr[-3000:]}")
    figures = json.loads(found.stdout.strip().splitlines()[-1])
    print(f"examples: {count:,} train + {count:,} val to the first trial "
          f"{figures['first']:.1f} s wall, {figures['first_cpu']:.1f} s CPU (create "
          f"{figures['create']:.1f} s, build {figures['build']:.1f} s); peak RSS "
          f"{figures['rss_mb']:.0f} MB (after create {figures['rss_created_mb']:.0f}); load "
          f"average {figures['load']:.1f} (targets: < 20 s, < 450 MB)")


def first_trial(count: int) -> None:
    """The child: prints the figures as one JSON line."""
    import google.adk.runners  # noqa: F401  (what a studio process has imported already)
    import litellm  # noqa: F401

    from studio.projects.files import create_project_run, load_project
    from studio.runtime.providers import check_model

    check_model("scripted/demo")
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    for split in ("train", "val"):
        with open(folder / f"{split}.jsonl", "w") as rows:
            for i in range(count):
                rows.write(json.dumps({"topic": f"{split} topic {i}",
                                       "expected": f"a haiku on topic {i}"}) + "\n")
    (folder / "large.yaml").write_text(PROJECT)
    store = open_store(f"sqlite:///{folder}/studio.db", cached=False)
    wall, cpu = time.perf_counter(), time.process_time()
    project, base = load_project(folder / "large.yaml")
    run = create_project_run(store, project, base)
    created, rss_created = time.perf_counter(), peak_rss_mb()
    figures: dict[str, float] = {}

    async def until_first_trial() -> None:
        first = asyncio.Event()

        def on_event(event) -> None:
            if isinstance(event, TrialCommitted) and not first.is_set():
                figures["first"] = time.perf_counter() - wall
                figures["first_cpu"] = time.process_time() - cpu
                first.set()

        engine = build_engine(store, run.id, listeners=[on_event])
        figures["build"] = time.perf_counter() - created
        task = asyncio.create_task(engine.run())
        await first.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(until_first_trial())
    print(json.dumps({**figures, "create": created - wall, "rss_mb": peak_rss_mb(),
                      "rss_created_mb": rss_created, "load": os.getloadavg()[0]}))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- 3. pages


def pages(sizes: list[int]) -> None:
    timings = {size: page_timings(size) for size in sizes}
    small, large = min(sizes), max(sizes)
    for page in timings[small]:
        before, after = timings[small][page], timings[large][page]
        print(f"pages: {page}: {before * 1000:.1f} ms with {small} runs, {after * 1000:.1f} ms "
              f"with {large}: ratio {after / before:.2f} (target <= 1.5)")


def page_timings(size: int) -> dict[str, float]:
    """Median seconds of each page's store reads, the store holding ``size`` runs."""
    from studio.engine import fork
    from studio.projects.aligning import align_runs
    from studio.projects.forking import ancestry, forks_of
    from studio.projects.inbox import run_summaries
    from studio.projects.workspace import recover_orphans

    store = open_store(f"sqlite:///{tempfile.mkdtemp()}/pages-{size}.db", cached=False)
    oldest = finished_run(store)
    fork(store, oldest, 0), fork(store, oldest, 0)
    aligned = align_run(store, oldest)
    copies(store, oldest, size - 4)  # the oldest, its two forks and its align run make four
    reads = {
        "Runs (run list, 10 summaries)": lambda: run_summaries(store,
                                                               store.list_runs(limit=50)[:10]),
        "inbox and orphans": lambda: (store.waiting_proposals(), recover_orphans(store)),
        "Compare (forks, ancestry)": lambda: (forks_of(store, oldest), ancestry(store, oldest)),
        "Agreement (align runs)": lambda: align_runs(store, oldest),
    }
    assert [r.id for r in align_runs(store, oldest)] == [aligned]
    assert len(forks_of(store, oldest)) == 2
    timings = {}
    for page, read in reads.items():
        read()  # warm
        samples = []
        for _ in range(15):
            started = time.perf_counter()
            read()
            samples.append(time.perf_counter() - started)
        timings[page] = statistics.median(samples)
    store.close()
    return timings


def finished_run(store) -> str:
    run = create_run(store, spec=scale_spec(), trainset=[{"topic": f"t{i}"} for i in range(6)],
                     valset=[{"topic": f"v{i}"} for i in range(4)],
                     config=EvolutionConfig(max_iterations=4, seed=0, parallel_proposals=1))
    asyncio.run(build_engine(store, run.id).run())
    return run.id


def align_run(store, source: str) -> str:
    from studio.model.records import AlignOrigin, Run

    run = store.get_run(source)
    origin = AlignOrigin(run_id=source, critic=run.spec.critic, target="instruction",
                         label_trial_ids=[1], held_out_trial_ids=[])
    spec = run.spec.model_copy(update={"aligns": origin})
    return store.create_run(Run(id=f"align-{source}", project_id=run.project_id,
                                config=run.config, spec=spec)).id


def copies(store, like: str, count: int) -> None:
    """``count`` copies of run ``like`` made after it: its row, its proposals and its events
    (what the run list, the inbox and the summaries read; its trials stay its own)."""
    from sqlalchemy import insert, select

    from studio.store import schema as tables

    def rows(table) -> list[dict]:
        found = select(table).where(table.c.run_id == like)
        return [{k: v for k, v in r._mapping.items() if k != "id"} for r in c.execute(found)]

    with store.engine.begin() as c:
        run = dict(c.execute(select(tables.runs).where(tables.runs.c.id == like)).one()._mapping)
        proposals, events = rows(tables.proposals), rows(tables.run_events)
        later = run["created_at"] + timedelta(hours=1)
        for start in range(0, count, 100):
            ids = [f"copy-{n}" for n in range(start, min(count, start + 100))]
            c.execute(insert(tables.runs), [
                {**run, "id": run_id, "created_at": later + timedelta(seconds=n)}
                for n, run_id in enumerate(ids, start)])
            for table, copied in ((tables.proposals, proposals), (tables.run_events, events)):
                c.execute(insert(table), [{**row, "run_id": run_id} for run_id in ids
                                          for row in copied])


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--runs", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--skip-iterations", action="store_true")
    parser.add_argument("--skip-examples", action="store_true")
    parser.add_argument("--skip-pages", action="store_true")
    parser.add_argument("--first-trial", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_trial:
        first_trial(args.first_trial)
        return
    print(f"studio from {Path(studio.__file__).parent.parent}; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if not args.skip_pages:
        pages(args.runs)
    if not args.skip_examples:
        examples(args.examples)
    if not args.skip_iterations:
        iterations(args.iterations)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
