"""Studio UI benchmarks.

Prints:

1. **Commit to browser**: the time from a trial's commit to its appearance on the Run page in a
   real browser (Debian's headless Chromium), median and p95 over a run of the scripted example
   started headless in this process while the page watches (target: p95 <= 1.5 s).
2. **Render time**: server-side render time of the Run and Compare pages (Streamlit's AppTest
   runs the page script in-process) for a run with 10,000 trials, cold and warm caches
   (target: <= 2 s).
3. **Server memory**: resident memory of a real ``streamlit run studio/app.py`` server before and
   after a browser opened the Run and Compare pages of the 10,000-trial run, and how long the
   browser waited for each.
4. **Action times**: from a click in the browser (1440x900) to the page showing its answer and
   settling, on an idle server: selecting a trial row, Add agent, Import, Try it (scripted),
   Pause and Stop (target: <= 0.5 s each; median of ``--repeats``).

    python bench/bench_ui.py [--trials 10000] [--iterations 12] [--skip-browser]
    python bench/bench_ui.py --actions-only [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("STUDIO_HOME", tempfile.mkdtemp(prefix="bench-ui-home-"))

import studio  # noqa: E402,F401  (sets LITELLM_LOCAL_MODEL_COST_MAP first)

EXAMPLE = ROOT / "examples" / "haiku_scripted.yaml"


# --------------------------------------------------------------------------- a 10k-trial run


def synthetic_run(store, n_trials: int = 10_000, *, minibatch: int = 10, n_val: int = 20,
                  n_train: int = 60, seed: int = 0) -> str:
    """A finished run with ``n_trials`` trials, written straight into the store: a seed scored
    on the validation set, then iterations of parent and child minibatches, every fourth child
    accepted and scored on the validation set. Texts, feedback and traces are sized like the
    scripted example's."""
    from sqlalchemy import insert

    from studio.engine.hosting.build import create_run
    from studio.model.records import (
        Candidate,
        Decision,
        DecisionAction,
        Proposal,
        ProposalStatus,
        RunStatus,
        Split,
        content_hash,
    )
    from studio.projects.files import load_project
    from studio.store import schema as t

    rng = random.Random(seed)
    project, _ = load_project(EXAMPLE)
    topics = [f"topic {i}" for i in range(n_train + n_val)]
    run = create_run(store, spec=project.run_spec(),
                     trainset=[{"topic": x} for x in topics[:n_train]],
                     valset=[{"topic": x} for x in topics[n_train:]],
                     name=f"synthetic {n_trials} trials")
    examples = store.examples(run.id)
    train = [e for e in examples if e.split is Split.TRAIN]
    val = [e for e in examples if e.split is Split.VAL]
    start = datetime.now(UTC) - timedelta(hours=2)
    rows: list[dict] = []
    clock = [start]

    def trial(candidate, example, iteration, phase, proposal_id=None, level=0.5):
        clock[0] += timedelta(milliseconds=300)
        score = None if rng.random() < 0.02 else round(min(1.0, max(0.0, rng.gauss(level, .2))), 2)
        rows.append({
            "run_id": run.id, "candidate_id": candidate.id, "example_id": example.id,
            "split": example.split.value, "example_index": example.index,
            "iteration": iteration, "phase": phase, "proposal_id": proposal_id,
            "input_text": f"topic: {example.data['topic']}",
            "output": "autumn leaves drift by\ncrimson light on a winter path\nthen all is still",
            "score": score,
            "feedback": {"feedback": "Missing: Include a season word (spring, summer, autumn "
                                     "or winter). Use one sensory image.",
                         "dimension_scores": {"lines": 1.0, "topic": 1.0, "season": 0.0,
                                              "image": 0.0},
                         "actionable_guidance": "Include a season word."} if score is not None
            else {},
            "error": "critic could not evaluate: critic reply is not JSON" if score is None
            else None,
            "trace": {"events": [{"author": "writer", "type": "text", "text": "..."}],
                      "tool_calls": [], "state_delta": {}, "model_calls": 1,
                      "usage": {"total_tokens": 57}},
            "latency_s": 0.31, "tokens": 57, "created_at": clock[0],
        })

    def candidate(index, parents, iteration, text, proposal_id=None):
        components = {"instruction": text}
        return store.add_candidate(Candidate(
            run_id=run.id, index=index, parent_ids=parents, components=components,
            content_hash=content_hash(components), iteration=iteration,
            proposal_id=proposal_id))

    seed_text = project.agent.instruction
    pool = [candidate(0, [], 0, seed_text)]
    store.set_pooled(pool[0].id)
    for example in val:
        trial(pool[0], example, 0, "valset", level=0.3)
    iteration, index = 0, 1
    while len(rows) + 2 * minibatch <= n_trials:
        iteration += 1
        parent = rng.choice(pool)
        batch = rng.sample(train, minibatch)
        for example in batch:
            trial(parent, example, iteration, "parent", level=0.4)
        text = parent.components["instruction"] + f"\nRule {iteration}: be concrete."
        proposal = store.add_proposal(Proposal(
            run_id=run.id, iteration=iteration, parent_id=parent.id, component="instruction",
            text=text, reasoning="The feedback asks for concrete images."))
        child = candidate(index, [parent.id], iteration, text, proposal.id)
        index += 1
        for example in batch:
            trial(child, example, iteration, "child", proposal.id, level=0.5)
        accepted = iteration % 4 == 0 and len(rows) + n_val <= n_trials
        store.add_decision(Decision(proposal_id=proposal.id, automatic=True, author="rule",
                                    action=DecisionAction.ACCEPT if accepted
                                    else DecisionAction.REJECT))
        if accepted:
            for example in val:
                trial(child, example, iteration, "valset", proposal.id, level=0.6)
            store.set_pooled(child.id)
            pool.append(child)
        store.update_proposal(proposal.id, child_id=child.id, status=ProposalStatus.ACCEPTED
                              if accepted else ProposalStatus.REJECTED)
        store.add_event(run.id, "iteration_started", iteration,
                        {"parent_id": parent.id, "component": "instruction",
                         "minibatch": [e.id for e in batch]})
    while len(rows) < n_trials:  # top up to the exact count with re-checks of the seed
        trial(pool[0], rng.choice(val), iteration, "valset")
    with store.engine.begin() as connection:
        connection.execute(insert(t.trials), rows)
    store.add_event(run.id, "progress", iteration, {
        "max_iterations": iteration, "metric_calls": len(rows), "max_metric_calls": None,
        "best_score": 0.6, "best_candidate_id": pool[-1].id, "elapsed_seconds": 3600.0,
        "eta_seconds": 0.0})
    store.update_run(run.id, status=RunStatus.COMPLETED, stop_reason="max_iterations",
                     started_at=start, finished_at=clock[0])
    return run.id


# --------------------------------------------------------------------------- render time


def page_times(db_url: str, run_id: str, pages: tuple[str, ...], *, repeats: int = 2,
               timeout: float = 120, check: Callable[[str, Any], None] | None = None
               ) -> dict[str, list[float]]:
    """Seconds to run each page's script server-side (AppTest), first cold then warm;
    ``check(page, app)`` looks at what the page drew after its runs."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["STUDIO_DB_URL"] = db_url
    st.cache_data.clear()
    st.cache_resource.clear()
    times: dict[str, list[float]] = {}
    for page in pages:
        at = AppTest.from_file(str(ROOT / "studio" / "app.py"), default_timeout=timeout)
        at.session_state["app.run_id"] = run_id
        at.run()
        at.switch_page(f"../pages/{page}.py")
        for _ in range(repeats):
            started = time.perf_counter()
            at.run()
            times.setdefault(page, []).append(time.perf_counter() - started)
            if at.exception:
                raise RuntimeError(at.exception[0].message)
        if check is not None:
            check(page, at)
    return times


def render_times(db_url: str, run_id: str, repeats: int = 2) -> dict[str, list[float]]:
    """Run and Compare render times; the Run table must show a page of the run's trials."""
    def one_page_of_trials(page: str, at: Any) -> None:
        if page == "run":
            from components.trial_table import PAGE_ROWS

            shown = len(at.dataframe(key=f"run.table.{run_id}").value)
            expected = min(PAGE_ROWS, _count(db_url, run_id))
            assert shown == expected, f"the table shows {shown} trials, not {expected}"

    return page_times(db_url, run_id, ("run", "compare"), repeats=repeats,
                      check=one_page_of_trials)


def _count(db_url: str, run_id: str) -> int:
    from studio.store import open_store

    return open_store(db_url).count_trials(run_id)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --------------------------------------------------------------------------- browser


def server_memory(db: Path, run_id: str) -> dict[str, float]:
    from tests.ui.browser import chromium_page, free_port, server_pid, studio_server

    port = free_port()
    result: dict[str, float] = {}
    with studio_server(db, port=port) as url, chromium_page() as page:
        pid = server_pid(port)
        page.goto(url)
        page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for(timeout=60_000)
        result["rss_idle_mb"] = rss_mb(pid)
        started = time.perf_counter()
        page.goto(f"{url}/run?run={run_id}")
        page.get_by_text("newest trial #").wait_for(timeout=120_000)
        result["run_page_browser_s"] = time.perf_counter() - started
        started = time.perf_counter()
        page.goto(f"{url}/compare?run={run_id}")
        page.locator(".js-plotly-plot").nth(2).wait_for(timeout=120_000)
        result["compare_page_browser_s"] = time.perf_counter() - started
        time.sleep(1)
        result["rss_loaded_mb"] = rss_mb(pid)
    return result


WATCH = """() => {
  window.__seen = [];
  let last = -1;
  const check = () => {
    const m = document.body.innerText.match(/newest trial #(\\d+)/);
    if (m && +m[1] !== last) { last = +m[1]; window.__seen.push([last, Date.now()]); }
  };
  new MutationObserver(check).observe(document.body,
    {subtree: true, childList: true, characterData: true});
  check();
}"""


def commit_to_browser(db: Path, iterations: int) -> list[float]:
    """Latencies (s) from each trial's commit to the page showing it."""
    from studio.engine import EvolutionConfig
    from studio.engine.hosting.build import build_engine
    from studio.engine.hosting.worker import get_manager
    from studio.projects.files import create_project_run, load_project
    from studio.store import open_store
    from tests.ui.browser import chromium_page, studio_server

    store = open_store(f"sqlite:///{db}")
    project, base = load_project(EXAMPLE)
    # More examples than the example file, so the run commits a few hundred trials.
    topics = [f"{a} {b}" for a in ("autumn", "city", "river", "mountain", "paper", "snow")
              for b in ("leaves", "rain", "bridge", "owl", "lantern", "wind")]
    dataset = project.dataset.model_copy(update={
        "train": [{"topic": x} for x in topics[:24]], "val": [{"topic": x} for x in topics[24:]]})
    project = project.model_copy(update={"dataset": dataset})
    run = create_project_run(store, project, base, name="latency", config=EvolutionConfig(
        max_iterations=iterations, minibatch_size=6, review="auto", seed=7, max_concurrency=4))
    with studio_server(db) as url, chromium_page() as page:
        page.goto(f"{url}/run?run={run.id}")
        page.get_by_text("No trials yet").wait_for(timeout=60_000)
        page.evaluate(WATCH)
        handle = get_manager(store).start(build_engine(store, run.id))  # a headless run
        handle.wait(timeout=600)
        time.sleep(2)
        seen = page.evaluate("window.__seen")
    trials = store.trials(run.id, with_trace=False)
    latencies = []
    for trial in trials:
        committed = trial.created_at.replace(tzinfo=trial.created_at.tzinfo or UTC).timestamp()
        shown = next((ms / 1000 for newest, ms in seen if newest >= trial.id), None)
        if shown is not None:
            latencies.append(shown - committed)
    if len(latencies) != len(trials):
        raise RuntimeError(f"only {len(latencies)} of {len(trials)} trials were seen")
    return latencies


# --------------------------------------------------------------------------- action times


def _click_until(page, click: Callable[[], None], answered: Callable[[], None]) -> float:
    """Seconds from ``click()`` to ``answered()`` returning and the page settling (no script
    running, two frames painted)."""
    from tests.ui.browser import settled

    settled(page)
    started = time.perf_counter()
    click()
    answered()
    settled(page)
    return time.perf_counter() - started


def action_times(work: Path, repeats: int = 5) -> dict[str, list[float]]:
    """Each action's seconds, ``repeats`` times, on a server with no run going except the one
    Pause and Stop act on."""
    import re

    from studio.engine import EvolutionConfig
    from studio.projects.workspace import EXAMPLES_DIR, import_example, start_project_run
    from studio.store import open_store
    from tests.ui.browser import chromium_page, studio_server
    from tests.ui.test_pages import finished_run

    db = work / "actions.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    done = finished_run(store)
    workflow = import_example(store, EXAMPLES_DIR / "pipeline_scripted.yaml")
    slow = store.save_project("slow", EXAMPLE.read_text().replace(
        "scripted/demo@150ms", "scripted/demo@2000ms").replace("name: haiku-scripted",
                                                                "name: slow"))
    upload = EXAMPLE.read_text().replace("name: haiku-scripted", "name: uploaded")
    times: dict[str, list[float]] = {}
    with studio_server(db) as url, chromium_page(1440, 900) as page:
        page.goto(f"{url}/run?run={done.id}")
        page.get_by_text(re.compile(r"newest trial \d+")).wait_for(timeout=60_000)
        grid = page.locator("[class*='st-key-run-table-'] canvas").first
        grid.wait_for()
        for n in range(repeats):
            grid.scroll_into_view_if_needed()
            box = grid.bounding_box()
            x, y = box["x"] + 16, box["y"] + 35 + 17 + 35 * (n % 5)
            times.setdefault("select a trial row", []).append(_click_until(
                page, lambda x=x, y=y: page.mouse.click(x, y),
                lambda: page.get_by_text(re.compile(r"Trial \d+ .*· iteration")).first.wait_for()))

        page.goto(f"{url}/projects?project={workflow.id}")
        page.get_by_role("button", name="Add agent").wait_for(timeout=60_000)
        for _ in range(repeats):
            cards = page.get_by_text(re.compile(r"^\S+ \d+: ")).count()
            times.setdefault("Add agent", []).append(_click_until(
                page, lambda: page.get_by_role("button", name="Add agent").click(),
                lambda c=cards: page.wait_for_function(
                    "n => [...document.querySelectorAll('strong')].filter("
                    "e => /^\\S+ \\d+: /.test(e.innerText)).length > n", arg=c)))

        for n in range(repeats):
            uploader = page.locator("[class*='st-key-projects-upload-']")
            if not uploader.is_visible():
                page.get_by_text("Add a project: examples and import").click()
            uploader.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
                {"name": "uploaded.yaml", "mimeType": "text/plain",
                 "buffer": upload.encode()})
            page.get_by_role("button", name="Import").wait_for()
            times.setdefault("Import", []).append(_click_until(
                page, lambda: page.get_by_role("button", name="Import").click(),
                lambda k=n: page.get_by_text(
                    "Imported uploaded" + (f" ({k + 1})" if k else "")).wait_for()))

        for _ in range(repeats):
            run = start_project_run(store, slow.id, EvolutionConfig(
                max_iterations=50, minibatch_size=3, review="auto", seed=7))
            page.goto(f"{url}/run?run={run.id}")
            page.get_by_role("button", name="Pause").wait_for(timeout=60_000)
            times.setdefault("Pause", []).append(_click_until(
                page, lambda: page.get_by_role("button", name="Pause").click(),
                lambda: page.get_by_role("button", name="Resume").wait_for()))
            times.setdefault("Stop", []).append(_click_until(
                page, lambda: page.get_by_role("button", name="Stop").click(),
                lambda: page.get_by_role("button", name="Stop", exact=True).wait_for(
                    state="detached")))
    store.close()
    return times


def print_action_times(times: dict[str, list[float]]) -> None:
    for action, values in times.items():
        print(f"action {action:<20} median {statistics.median(values):.2f} s, max "
              f"{max(values):.2f} s over {len(values)}  (target <= 0.5 s)")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--iterations", type=int, default=12,
                        help="iterations of the watched scripted run (latency benchmark)")
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--actions-only", action="store_true",
                        help="only the action times (click -> settled)")
    parser.add_argument("--repeats", type=int, default=5, help="times each action is timed")
    args = parser.parse_args(argv)

    from studio.runtime.logs import quiet_library_logs
    from studio.store import open_store

    quiet_library_logs()
    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    if args.actions_only:
        print_action_times(action_times(work, args.repeats))
        return 0
    if not args.skip_browser:
        latencies = commit_to_browser(work / "latency.db", args.iterations)
        print(f"commit -> browser ({len(latencies)} trials, run page polled every 0.5 s): "
              f"median {statistics.median(latencies):.3f} s, p95 {p95(latencies):.3f} s, "
              f"max {max(latencies):.3f} s  (target p95 <= 1.5 s)")

    db = work / "big.db"
    store = open_store(f"sqlite:///{db}")
    started = time.perf_counter()
    run_id = synthetic_run(store, args.trials)
    print(f"synthetic run with {store.count_trials(run_id)} trials, "
          f"{len(store.candidates(run_id))} candidates written in "
          f"{time.perf_counter() - started:.1f} s")
    before = rss_mb(os.getpid())
    times = render_times(f"sqlite:///{db}", run_id)
    for page, values in times.items():
        print(f"render {page:<8} page, {args.trials} trials: cold {values[0]:.2f} s, warm "
              f"{values[-1]:.2f} s  (target <= 2 s)")
    print(f"in-process render memory: {before:.0f} MB -> {rss_mb(os.getpid()):.0f} MB RSS")
    if not args.skip_browser:
        memory = server_memory(db, run_id)
        print(f"studio server RSS: {memory['rss_idle_mb']:.0f} MB idle, "
              f"{memory['rss_loaded_mb']:.0f} MB with the {args.trials}-trial run loaded on the "
              f"Run and Compare pages (browser waited {memory['run_page_browser_s']:.2f} s for "
              f"Run, {memory['compare_page_browser_s']:.2f} s for Compare)")
        print_action_times(action_times(work, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
