"""Large runs in the UI: render time of the Run, Review and Compare pages and export memory.

Builds a finished run of ``--trials`` trials with bulk inserts straight into the store's tables
(sized like ``bench_ui.synthetic_run``: texts, feedback and traces like the scripted example's;
about 1 % of the trials corrected by a person), then:

1. **Render time**: server-side (Streamlit's AppTest runs the page script in-process) for the Run,
   Review and Compare pages, the first run cold (caches cleared) and then warm (target: warm
   <= 2 s on SQLite and on PostgreSQL).
2. **Lineage chart**: server-side build time of the Compare page's lineage (layout, figure,
   JSON) for the run's candidates (about 4,000 at 100,000 trials; target <= 2 s).
3. **CLI memory**: peak Python memory of ``studio trials`` (text and ``--json``) and
   ``studio proposals`` in a fresh process, for ``--cli-small`` trials and for ``--trials``
   trials: ``studio trials`` streams, so its ratio stays near 1; ``studio proposals`` holds one
   row per proposal, so it grows with them.
4. **Export memory**: peak Python memory (tracemalloc) of ``export_run`` (JSONL, CSV) and of
   the studio's download button (``download``: the JSONL spooled to a temporary file; then
   read once, the copy Streamlit serves) in a fresh subprocess, after a warm-up that imports
   what it needs, for ``--small`` trials and for ``--trials`` trials: constant memory means the
   ratio stays near 1 (the download's served copy is the file's size, held once).

    python bench/bench_large.py [--trials 100000] [--small 10000] [--cli-small 1000]
                                [--url URL]... [--skip-render] [--skip-cli] [--skip-export]

``--url`` may repeat (default: a new SQLite file). A PostgreSQL URL's tables are dropped first:
give it a database of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("STUDIO_HOME", tempfile.mkdtemp(prefix="bench-large-home-"))

import studio  # noqa: E402,F401  (sets LITELLM_LOCAL_MODEL_COST_MAP first)

EXAMPLE = ROOT / "examples" / "haiku_scripted.yaml"
PAGES = ("run", "review", "compare")


def fresh_store(url: str):
    """An empty store at ``url`` (PostgreSQL: its studio tables are dropped first)."""
    from sqlalchemy import create_engine

    from studio.store import open_store
    from studio.store import schema as t
    from studio.store.connection import resolve_url

    if not url.startswith("sqlite"):
        engine = create_engine(resolve_url(url))
        t.metadata.drop_all(engine)
        engine.dispose()
    return open_store(url, cached=False)


def bulk_run(store, n_trials: int, *, minibatch: int = 10, n_val: int = 20, n_train: int = 60,
             override_every: int = 97, seed: int = 0) -> str:
    """A finished run with ``n_trials`` trials, written with one bulk insert per table."""
    from sqlalchemy import func, insert, select, update

    from studio.engine.hosting.build import create_run
    from studio.model.records import RunStatus, Split, content_hash
    from studio.projects.files import load_project
    from studio.store import schema as t

    rng = random.Random(seed)
    project, _ = load_project(EXAMPLE)
    topics = [f"topic {i}" for i in range(n_train + n_val)]
    run = create_run(store, spec=project.run_spec(),
                     trainset=[{"topic": x} for x in topics[:n_train]],
                     valset=[{"topic": x} for x in topics[n_train:]],
                     name=f"bulk {n_trials} trials")
    examples = store.examples(run.id)
    train = [e for e in examples if e.split is Split.TRAIN]
    val = [e for e in examples if e.split is Split.VAL]
    start = datetime.now(UTC) - timedelta(hours=30)
    clock = [start]

    # Plan the run with candidate and proposal *numbers*; ids are known after the inserts.
    plan_trials: list[tuple] = []  # (candidate idx, example, iteration, phase, proposal no, level)
    cands: list[dict] = []  # idx -> {parent idx, iteration, text, proposal no, pooled}
    props: list[dict] = []
    seed_text = project.agent.instruction
    cands.append({"parent": None, "iteration": 0, "text": seed_text, "proposal": None,
                  "pooled": True})
    pool = [0]
    for example in val:
        plan_trials.append((0, example, 0, "valset", None, 0.3))
    iteration = 0
    while len(plan_trials) + 2 * minibatch <= n_trials:
        iteration += 1
        parent = rng.choice(pool)
        batch = rng.sample(train, minibatch)
        for example in batch:
            plan_trials.append((parent, example, iteration, "parent", None, 0.4))
        text = cands[parent]["text"].split("\nRule")[0] + f"\nRule {iteration}: be concrete."
        accepted = iteration % 4 == 0 and len(plan_trials) + minibatch + n_val <= n_trials
        number = len(props)
        child = len(cands)
        props.append({"iteration": iteration, "parent": parent, "child": child, "text": text,
                      "accepted": accepted, "batch": [e.id for e in batch]})
        cands.append({"parent": parent, "iteration": iteration, "text": text,
                      "proposal": number, "pooled": accepted})
        for example in batch:
            plan_trials.append((child, example, iteration, "child", number, 0.5))
        if accepted:
            for example in val:
                plan_trials.append((child, example, iteration, "valset", number, 0.6))
            pool.append(child)
    while len(plan_trials) < n_trials:
        plan_trials.append((0, rng.choice(val), iteration, "valset", None, 0.3))

    now = datetime.now(UTC)
    with store.engine.begin() as c:
        base = c.execute(select(func.coalesce(func.max(t.candidates.c.id), 0))).scalar_one()
        c.execute(insert(t.candidates), [{
            "run_id": run.id, "idx": i, "parent_ids": [], "components": {"instruction": x["text"]},
            "content_hash": content_hash({"instruction": x["text"]}), "iteration": x["iteration"],
            "proposal_id": None, "pooled": x["pooled"], "created_at": now} for i, x in
            enumerate(cands)])
        cand_id = dict(c.execute(select(t.candidates.c.idx, t.candidates.c.id)
                                 .where(t.candidates.c.run_id == run.id)).all())
        assert len(cand_id) == len(cands) and min(cand_id.values()) > base
        c.execute(insert(t.proposals), [{
            "run_id": run.id, "iteration": p["iteration"], "parent_id": cand_id[p["parent"]],
            "component": "instruction", "text": p["text"],
            "reasoning": "The feedback asks for concrete images.",
            "status": "accepted" if p["accepted"] else "rejected",
            "child_id": cand_id[p["child"]], "minibatch": p["batch"], "created_at": now,
            "decided_at": now} for p in props])
        prop_id = dict(c.execute(select(t.proposals.c.iteration, t.proposals.c.id)
                                 .where(t.proposals.c.run_id == run.id)).all())
        ids = [prop_id[p["iteration"]] for p in props]
        for i, x in enumerate(cands):  # parents and proposals, in one executemany
            x["id"] = cand_id[i]
            x["proposal_id"] = ids[x["proposal"]] if x["proposal"] is not None else None
            x["parent_ids"] = [cand_id[x["parent"]]] if x["parent"] is not None else []
        from sqlalchemy import bindparam
        c.execute(update(t.candidates).where(t.candidates.c.id == bindparam("cid"))
                  .values(parent_ids=bindparam("pids"), proposal_id=bindparam("pid")),
                  [{"cid": x["id"], "pids": x["parent_ids"], "pid": x["proposal_id"]}
                   for x in cands])
        c.execute(insert(t.decisions), [{
            "proposal_id": ids[i], "run_id": run.id,
            "action": "accept" if p["accepted"] else "reject", "reason": "",
            "author": "rule", "automatic": True, "created_at": now} for i, p in enumerate(props)])
        c.execute(insert(t.run_events), [{
            "run_id": run.id, "kind": "iteration_started", "iteration": p["iteration"],
            "payload": {"parent_id": cand_id[p["parent"]], "component": "instruction",
                        "minibatch": p["batch"]}, "created_at": now} for p in props])
        rows = []
        for cand, example, it, phase, number, level in plan_trials:
            clock[0] += timedelta(milliseconds=300)
            score = None if rng.random() < 0.02 else round(
                min(1.0, max(0.0, rng.gauss(level, .2))), 2)
            rows.append({
                "run_id": run.id, "candidate_id": cand_id[cand], "example_id": example.id,
                "split": example.split.value, "example_index": example.index,
                "iteration": it, "phase": phase,
                "proposal_id": ids[number] if number is not None else None,
                "input_text": f"topic: {example.data['topic']}",
                "output": "autumn leaves drift by\ncrimson light on a winter path\n"
                          "then all is still",
                "score": score,
                "feedback": {"feedback": "Missing: Include a season word (spring, summer, "
                                         "autumn or winter). Use one sensory image.",
                             "dimension_scores": {"lines": 1.0, "topic": 1.0, "season": 0.0,
                                                  "image": 0.0},
                             "actionable_guidance": "Include a season word."}
                if score is not None else {},
                "error": "critic could not evaluate: critic reply is not JSON"
                if score is None else None,
                "trace": {"events": [{"author": "writer", "type": "text", "text": "..."}],
                          "tool_calls": [], "state_delta": {}, "model_calls": 1,
                          "usage": {"total_tokens": 57}},
                "latency_s": 0.31, "tokens": 57, "created_at": clock[0],
            })
            if len(rows) >= 20_000:
                c.execute(insert(t.trials), rows)
                rows = []
        if rows:
            c.execute(insert(t.trials), rows)
        trial_ids = [r[0] for r in c.execute(select(t.trials.c.id, t.trials.c.score)
                                             .where(t.trials.c.run_id == run.id)
                                             .order_by(t.trials.c.id))]
        overrides = []
        for n, trial_id in enumerate(trial_ids[::override_every]):
            overrides.append({"trial_id": trial_id, "run_id": run.id, "score": 0.9,
                              "feedback": "good enough" if n % 2 else None, "judge_score": 0.5,
                              "judge_feedback": "judge", "author": "bench", "created_at": now,
                              "undone_at": now if n % 5 == 0 else None})
        if overrides:
            c.execute(insert(t.overrides), overrides)
    store.add_event(run.id, "progress", iteration, {
        "max_iterations": iteration, "metric_calls": n_trials, "max_metric_calls": None,
        "best_score": 0.6, "best_candidate_id": cand_id[pool[-1]], "elapsed_seconds": 3600.0,
        "eta_seconds": 0.0})
    store.update_run(run.id, status=RunStatus.COMPLETED, stop_reason="max_iterations",
                     started_at=start, finished_at=clock[0])
    if store.engine.dialect.name == "postgresql":
        # A server's autovacuum analyzes tables that grow; right after one bulk insert it has
        # not yet, and the planner would guess without statistics.
        from sqlalchemy import text

        with store.engine.begin() as c:
            c.execute(text("ANALYZE"))
    return run.id


def render_times(db_url: str, run_id: str, repeats: int = 3) -> dict[str, list[float]]:
    """Seconds to run each page's script server-side (AppTest): cold first, then warm."""
    from bench_ui import page_times  # the same measurement as the 10k-trial bench

    return page_times(db_url, run_id, PAGES, repeats=repeats, timeout=300)


def profile_page(db_url: str, run_id: str, page: str, warm: bool, top: int = 25) -> None:
    """cProfile of one page render (cold, or warm after a first render)."""
    import cProfile
    import pstats

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["STUDIO_DB_URL"] = db_url
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(ROOT / "studio" / "app.py"), default_timeout=300)
    at.session_state["app.run_id"] = run_id
    at.run()
    at.switch_page(f"../pages/{page}.py")
    if warm:
        at.run()
    from streamlit.runtime.scriptrunner import script_runner

    profiler = cProfile.Profile()
    original = script_runner.ScriptRunner._run_script

    def profiled(self, *args, **kwargs):  # the page script runs in the runner's thread
        profiler.enable()
        try:
            return original(self, *args, **kwargs)
        finally:
            profiler.disable()

    script_runner.ScriptRunner._run_script = profiled
    try:
        at.run()
    finally:
        script_runner.ScriptRunner._run_script = original
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


EXPORT_CHILD = r"""
import os, sys, json, tempfile
sys.path.insert(0, sys.argv[1])
import studio
from studio.store import open_store
from studio.projects.export import export_run
store = open_store(sys.argv[2], cached=False)
store.count_trials(sys.argv[3])
from studio.projects.export import Download, iter_candidate_records, spooled_download
list(iter_candidate_records(store, sys.argv[3]))  # imports what the export needs first
import tracemalloc
out = tempfile.mkdtemp()
tracemalloc.start()
if sys.argv[4] == "download":  # the UI's button: spooled to a file, then read once
    spool = spooled_download(store, sys.argv[3], Download.JSONL)
    spooled = tracemalloc.get_traced_memory()[1] / 2**20
    data = spool.read()
    spool.close()
    print(json.dumps({"added_mb": spooled, "bytes": len(data),
                      "served_mb": tracemalloc.get_traced_memory()[1] / 2**20}))
    sys.exit(0)
paths = export_run(store, sys.argv[3], sys.argv[4], os.path.join(out, "run"))
peak = tracemalloc.get_traced_memory()[1] / 2**20
print(json.dumps({"added_mb": peak, "bytes": sum(os.path.getsize(p) for p in paths)}))
"""


def export_memory(db_url: str, run_id: str, fmt: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", EXPORT_CHILD, str(ROOT), db_url, run_id, fmt],
                         capture_output=True, text=True, check=True,
                         env=os.environ | {"PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


CLI_CHILD = r"""
import contextlib, json, os, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
import studio
from studio.cli import main
argv = ["--db", sys.argv[2], *sys.argv[4:], sys.argv[3]]
with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
    # imports, the connection and the first query's plan, on a few rows
    main([*argv, "--limit", "5"] if "trials" in argv else [*argv, "--pending"])
    tracemalloc.start()
    started = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - started
peak = tracemalloc.get_traced_memory()[1] / 2**20
print(json.dumps({"added_mb": peak, "seconds": seconds, "code": code}))
"""


def cli_memory(db_url: str, run_id: str, command: list[str], root: Path = ROOT
               ) -> dict[str, float]:
    """Peak Python memory (tracemalloc) and seconds of ``studio <command> RUN`` in a fresh
    process, its output discarded; ``root`` is the checkout whose ``studio`` runs."""
    out = subprocess.run([sys.executable, "-c", CLI_CHILD, str(root), db_url, run_id, *command],
                         capture_output=True, text=True, check=True,
                         env=os.environ | {"PYTHONPATH": str(root)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def lineage_times(store, run_id: str, repeats: int = 3) -> tuple[int, str | None, list[float]]:
    """Seconds to build the Compare page's lineage chart server-side: the layout, the plotly
    figure and its JSON (what ``st.plotly_chart`` sends), from the run's loaded view."""
    from components.plots import lineage_figure
    from studio.engine.policies.pool import load_view
    from studio.views.charts import lineage_layout

    view = load_view(store, run_id)
    statuses = {p.child_id: p.status.value for p in store.proposals(run_id) if p.child_id}
    shown = [view.candidates[0].id, view.best_id]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        tree = lineage_layout(view.candidates, view.means, view.front, view.best_id, statuses,
                              shown=shown)
        lineage_figure(tree).to_json()
        times.append(time.perf_counter() - started)
    return len(view.candidates), tree.note, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000,
                        help="trials of the smaller run the export memory is compared with")
    parser.add_argument("--url", action="append", default=[],
                        help="SQLAlchemy URL (repeatable; default: a new SQLite file)")
    parser.add_argument("--skip-render", action="store_true")
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--cli-small", type=int, default=1000,
                        help="trials of the smaller run `studio trials` memory is compared with")
    parser.add_argument("--profile", choices=PAGES, action="append", default=[],
                        help="print a cProfile of this page's warm and cold render")
    args = parser.parse_args(argv)

    from studio.runtime.logs import quiet_library_logs

    quiet_library_logs()
    work = Path(tempfile.mkdtemp(prefix="bench-large-"))
    urls = args.url or [f"sqlite:///{work}/large.db"]
    for url in urls:
        from studio.store import safe_url

        label = "postgresql" if url.startswith("postgres") else "sqlite"
        store = fresh_store(url)
        started = time.perf_counter()
        big = bulk_run(store, args.trials)
        print(f"[{label}] {safe_url(url)}: run with {store.count_trials(big)} trials, "
              f"{len(store.candidates(big))} candidates written in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        if not args.skip_render:
            for page, values in render_times(url, big).items():
                print(f"[{label}] render {page:<8} {args.trials} trials: cold {values[0]:.2f} s, "
                      f"warm {min(values[1:]):.2f} s  (target warm <= 2 s)", flush=True)
        count, note, seconds = lineage_times(store, big)
        print(f"[{label}] lineage chart, {count} candidates: first {seconds[0]:.2f} s, then "
              f"{min(seconds[1:]):.2f} s server-side (layout, figure, JSON; target <= 2 s)"
              + (f"; {note}" if note else ""), flush=True)
        if not args.skip_cli:
            small = bulk_run(store, args.cli_small)
            for command in (["trials"], ["trials", "--json"], ["proposals"]):
                a = cli_memory(url, small, command)
                b = cli_memory(url, big, command)
                print(f"[{label}] studio {' '.join(command):<14}: +{a['added_mb']:.1f} MB peak "
                      f"({a['seconds']:.2f} s) for {args.cli_small} trials, "
                      f"+{b['added_mb']:.1f} MB ({b['seconds']:.2f} s) for {args.trials}: "
                      f"ratio {b['added_mb'] / max(a['added_mb'], 0.1):.2f}", flush=True)
        for page in args.profile:
            for warm in (False, True):
                print(f"---- profile {page} {'warm' if warm else 'cold'} [{label}]")
                profile_page(url, big, page, warm)
        if not args.skip_export:
            small = bulk_run(store, args.small)
            for fmt in ("jsonl", "csv", "download"):
                a = export_memory(url, small, fmt)
                b = export_memory(url, big, fmt)
                print(f"[{label}] export {fmt:<5}: +{a['added_mb']:.1f} MB peak (tracemalloc) for "
                      f"{args.small} trials ({a['bytes'] / 1e6:.1f} MB written), "
                      f"+{b['added_mb']:.1f} MB for {args.trials} ({b['bytes'] / 1e6:.1f} MB "
                      f"written): ratio {b['added_mb'] / max(a['added_mb'], 0.1):.2f} "
                      "(constant memory: near 1)"
                      + (f"; served from memory once: +{b['served_mb']:.1f} MB"
                         if fmt == "download" else ""), flush=True)
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
