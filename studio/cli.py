"""``studio``: run projects headless into the same store the studio watches, and export runs.

    studio run project.yaml [--review review] [--max-iterations N] [--db URL]
    studio resume RUN_ID [--max-metric-calls N]
    studio queue project.yaml [--queue NAME]       (run by the next free `studio worker`)
    studio worker [--max-runs N] [--poll-seconds S] [--queue NAME]
    studio workers
    studio runs
    studio trials RUN_ID [--candidate ID] [--phase P] [--offset N] [--limit N] [--json]
    studio proposals RUN_ID [--pending] [--json]
    studio export RUN_ID --format jsonl|csv [--out PATH]
    studio test RUN_ID                             (score baseline and best on the test set)
    studio fork RUN_ID --candidate N [--critic FILE_OR_YAML] [--dataset PATH]
                [--config key=value ...] [--queue NAME]
    studio align RUN_ID [--held-out 0.3] [--review review] [--max-iterations N] [--queue NAME]
                        [--part NAME]
                                                   (align the run's critic with its corrections)
    studio align-report ALIGN_RUN_ID [--json] [--no-measure]   (before/after on held-out labels)
    studio align-apply ALIGN_RUN_ID                (a project copy judging with the aligned critic)
    studio rescore RUN_ID --critic-from ALIGN_RUN_ID [--json]
    studio blame RUN_ID [--candidate N] [--json]   (where each sentence came from)
    studio decide PROPOSAL_ID accept|reject|edit|stop [--reason TEXT] [--text TEXT]
                                                   (stop ends the run; the proposal waits again)
    studio override TRIAL_ID [--score X] [--feedback TEXT]
    studio validate project.yaml
    studio schema
    studio ui [--port N] [--address ADDR --allow-remote] [--allow-code-refs]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import studio  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP first)
from studio.model.errors import StudioError
from studio.model.records import EventKind, RunStatus

# The engine, store and ADK are imported inside the commands that use them: `studio --help`,
# `studio schema` and `studio validate` do not pay for loading ADK and LiteLLM.


def quiet_library_logs() -> None:
    """ADK logs a full traceback for every failed model call; the trial records it already."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("google_adk", "google.adk", "LiteLLM", "litellm", "httpx"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


class ProgressBar:
    """One terminal line, redrawn on each event (a plain line per update when not a TTY)."""

    def __init__(self, stream: Any = None, width: int = 24) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.trials = 0
        self.last: dict[str, Any] = {}
        self.tty = getattr(stream, "isatty", lambda: False)()

    def __call__(self, event: Any) -> None:
        kind = event.kind
        if kind is EventKind.TRIAL_COMMITTED:
            self.trials += 1
            if self.tty:
                self.draw()
        elif kind is EventKind.PROGRESS:
            self.last = event.payload() | {"iteration": event.iteration}
            self.trials = self.last["metric_calls"]
            self.draw(newline=not self.tty)
        elif kind is EventKind.PROPOSAL_CREATED and event.payload()["proposal_kind"] == "merge":
            self.note(f"proposal {event.payload()['proposal_id']} merges the candidates with "
                      "ids " + " and ".join(map(str, event.payload()["parent_ids"])))
        elif kind is EventKind.AWAITING_DECISION:
            self.note(f"proposal {event.payload()['proposal_id']} waits for a decision: open the "
                      f"studio's Proposals page, or run `studio decide "
                      f"{event.payload()['proposal_id']} accept|reject|edit`")
        elif kind is EventKind.ITERATION_SKIPPED:
            self.note(f"iteration {event.iteration} skipped: {event.payload()['reason']}")
        elif kind is EventKind.RUN_FINISHED:
            self.note(f"run finished: {event.payload()['stop_reason']}")

    def draw(self, newline: bool = False) -> None:
        info = self.last
        total = info.get("max_iterations") or 1
        done = min(info.get("iteration", 0), total)
        filled = int(self.width * done / total)
        budget = info.get("max_metric_calls")
        best = info.get("best_score")
        eta = info.get("eta_seconds")
        line = (f"[{'#' * filled}{'-' * (self.width - filled)}] iteration {done}/{total}"
                f" | metric calls {self.trials}{f'/{budget}' if budget else ''}"
                f" | best {'-' if best is None else f'{best:.3f}'}"
                f" | ETA {'-' if eta is None else f'{eta:.0f}s'}")
        self.stream.write(("\r" + line) if self.tty and not newline else line + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        self.stream.write(("\n" if self.tty else "") + text + "\n")
        self.stream.flush()


def _store(args: argparse.Namespace):
    from studio.store import open_store

    return open_store(args.db)


def _stored_run(args: argparse.Namespace):
    """The project's run, checked and stored with its examples (not started): ``(store, run)``."""
    from studio.projects.files import create_project_run, load_project

    project, base_dir = load_project(args.project)
    config = _run_config(project.run, args)
    store = _store(args)
    return store, create_project_run(store, project, base_dir, name=args.name or project.name,
                                     config=config, source=str(args.project))


def cmd_run(args: argparse.Namespace) -> int:
    from studio.engine.dispatch import Placement, dispatch

    store, run = _stored_run(args)
    print(f"run {run.id} started (database: {database_label(store.url)}); watch it with "
          f"`studio ui`", file=sys.stderr)
    bar = ProgressBar()
    handle = dispatch(store, run.id, Placement.HERE, listeners=[bar]).handle
    return _wait(handle, store, run.id)


def cmd_queue(args: argparse.Namespace) -> int:
    """Store the run with everything needed to run it, for whichever worker claims it."""
    from studio.engine.dispatch import Placement, dispatch
    from studio.engine.queue import live_workers

    store, run = _stored_run(args)
    dispatch(store, run.id, Placement.QUEUE, queue=args.queue)
    workers = len(live_workers(store, args.queue))
    print(f"run {run.id} queued in {args.queue!r} (database: {database_label(store.url)}); "
          f"{workers} live worker{'s' if workers != 1 else ''} on that queue"
          + ("" if workers else ": start one with `studio worker`"), file=sys.stderr)
    print(run.id)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Take queued runs until ``--max-runs`` are done or SIGTERM/SIGINT (exit 0 either way)."""
    import signal

    from studio.engine.queue import QueueWorker

    store = _store(args)
    worker = QueueWorker(store, queue=args.queue, poll_seconds=args.poll_seconds,
                         max_runs=args.max_runs,
                         say=lambda text: print(text, file=sys.stderr, flush=True))
    previous = {signum: signal.signal(signum, lambda *_: worker.request_shutdown())
                for signum in (signal.SIGTERM, signal.SIGINT)}
    print(f"worker {worker.id} takes runs from queue {args.queue!r} "
          f"(database: {database_label(store.url)})", file=sys.stderr, flush=True)
    try:
        done = worker.serve()
    finally:  # called in-process (tests), the caller's handlers come back
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print(f"worker {worker.id} exits after {done} run{'s' if done != 1 else ''}",
          file=sys.stderr)
    return 0


def cmd_workers(args: argparse.Namespace) -> int:
    from studio.engine.queue import live_workers

    workers = live_workers(_store(args), args.queue)
    if not workers:
        print("no live worker: start one with `studio worker`")
    for w in workers:
        print(f"{w.id}  queue {w.queue:<12} seen {w.last_seen:%H:%M:%S} UTC  "
              f"{'running ' + w.run_id if w.run_id else 'idle'}")
    return 0


def _run_config(config: Any, args: argparse.Namespace) -> Any:
    """The project's run settings with the command line's on top, validated."""
    from pydantic import ValidationError

    from studio.model.errors import ConfigError

    updates = {k: v for k, v in (("review", args.review),
                                 ("max_iterations", args.max_iterations),
                                 ("max_metric_calls", args.max_metric_calls),
                                 ("seed", args.seed)) if v is not None}
    try:
        return config.model_validate(config.model_dump() | updates)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise ConfigError(error["msg"], where=f"--{field.replace('_', '-')}",
                          value=error.get("input")) from exc


def database_label(url: str) -> str:
    """The database for a person to read: a SQLite file's path, or a URL without password."""
    from studio.model.redaction import mask_url

    return url.split("///")[-1] if url.startswith("sqlite") else mask_url(url)


def cmd_resume(args: argparse.Namespace) -> int:
    from studio.engine.worker import get_manager

    store = _store(args)
    manager = get_manager(store)
    handle = manager.resume(args.run_id, listeners=[ProgressBar()],
                            max_metric_calls=args.max_metric_calls)
    print(f"run {args.run_id} resumed", file=sys.stderr)
    return _wait(handle, store, args.run_id)


def _wait(handle: Any, store: Any, run_id: str) -> int:
    from studio.engine.api import load_result

    try:
        while handle.running:
            time.sleep(0.2)
        handle.wait()
    except KeyboardInterrupt:
        return _stop_on_interrupt(handle, store, run_id)
    result = load_result(store, run_id)
    print(json.dumps({"run_id": run_id, "status": result.status,
                      "stop_reason": result.stop_reason,
                      "original_score": result.original_score,
                      "final_score": result.final_score,
                      "metric_calls": result.metric_calls,
                      "evolved_components": result.evolved_components}, indent=2))
    return 0 if result.status in ("completed", "stopped") else 1


def _stop_on_interrupt(handle: Any, store: Any, run_id: str) -> int:
    """Ctrl-C: ask the run to stop at its next step and wait for it; a second Ctrl-C (or a step
    that outlasts 30 s) stops it now. Either way the run is left ``stopped`` and resumable, and
    what it committed is kept (a trial in flight is redone by ``studio resume``)."""
    import signal

    from studio.engine.worker import get_manager

    manager = get_manager(store)
    try:
        print(f"\nstopping run {run_id} at its next step (Ctrl-C again to stop now)...",
              file=sys.stderr, flush=True)
        manager.stop(run_id)
        handle.join(30)
    except KeyboardInterrupt:
        pass
    except StudioError:  # the run ended meanwhile: nothing to stop
        handle.join(30)
    if handle.running:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's state is written first
        handle.cancel()  # the engine writes "stopped" as its task ends
        if not handle.join(10) and store.get_run(run_id).status.is_active:
            store.update_run(run_id, status=RunStatus.STOPPED, stop_reason="user")
            store.release_lease(run_id, manager.worker_id)
    print(f"run {run_id} stopped; resume it with `studio resume {run_id}`", file=sys.stderr)
    return 130


def cmd_test(args: argparse.Namespace) -> int:
    """Score a settled run's baseline and best candidate on its test set, then the verdict."""
    from studio.engine.api import start_test_scoring
    from studio.engine.holdout import load_holdout

    store = _store(args)
    handle = start_test_scoring(store, args.run_id, listeners=[ProgressBar()])
    handle.wait()
    report = load_holdout(store, args.run_id)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(holdout_lines(report))
    return 0


def holdout_lines(report: Any) -> str:
    """The guard's report as a person reads it in a terminal."""
    def score(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    lines = [f"{'':<6} {'baseline #' + str(report.baseline_index):>12} "
             f"{'best #' + str(report.best_index):>10}"]
    for split in ("train", "val", "test"):
        means = getattr(report, split)
        lines.append(f"{split:<6} {score(means.baseline):>12} {score(means.best):>10}"
                     f"   (n={means.baseline_n}/{means.best_n})")
    lines.append(f"{report.verdict.status.value.upper()}: {report.verdict.message}")
    return "\n".join(lines)


def cmd_fork(args: argparse.Namespace) -> int:
    """A new run seeded with a candidate of another run; run here, or queued with --queue."""
    from studio.engine.dispatch import Placement, dispatch
    from studio.projects.forking import fork_from_cli

    store = _store(args)
    run = fork_from_cli(store, args.run_id, args.candidate, critic=args.critic,
                        dataset=args.dataset, settings=args.config or [], name=args.name or "")
    origin = f"forked from run {args.run_id} candidate #{args.candidate}"
    if args.queue:
        dispatch(store, run.id, Placement.QUEUE, queue=args.queue)
        print(f"run {run.id} {origin}, queued in {args.queue!r}", file=sys.stderr)
        print(run.id)
        return 0
    print(f"run {run.id} started, {origin} (database: {database_label(store.url)})",
          file=sys.stderr)
    handle = dispatch(store, run.id, Placement.HERE, listeners=[ProgressBar()]).handle
    return _wait(handle, store, run.id)


def cmd_align(args: argparse.Namespace) -> int:
    """An align run of the run's critic: run here (then its report), or queued with --queue."""
    from studio.engine.dispatch import Placement, dispatch
    from studio.model.config import EvolutionConfig
    from studio.projects.aligning import create_align_run, report_measured
    from studio.views.aligning import align_lines

    store = _store(args)
    settings = {k: v for k, v in (("review", args.review), ("max_iterations", args.max_iterations),
                                  ("seed", args.seed)) if v is not None}
    run = create_align_run(store, args.run_id, held_out=args.held_out,
                           threshold=args.threshold, part=args.part,
                           config=EvolutionConfig(**{"max_iterations": 5, **settings}))
    if args.queue:
        dispatch(store, run.id, Placement.QUEUE, queue=args.queue)
        print(f"align run {run.id} queued in {args.queue!r}", file=sys.stderr)
        print(run.id)
        return 0
    print(f"align run {run.id} started for run {args.run_id}'s critic (database: "
          f"{database_label(store.url)})", file=sys.stderr)
    handle = dispatch(store, run.id, Placement.HERE, listeners=[ProgressBar()]).handle
    code = _wait(handle, store, run.id)
    print(align_lines(report_measured(store, run.id)))
    return code


def cmd_align_report(args: argparse.Namespace) -> int:
    from studio.model.redaction import redact
    from studio.projects.aligning import align_report, report_measured
    from studio.views.aligning import align_lines

    store = _store(args)
    report = align_report(store, args.align_run_id)
    if report.measure_pending and not args.no_measure:
        print(f"running the real judge on the {report.held_out} held-out labels (original and "
              "aligned text)…", file=sys.stderr)
        report = report_measured(store, args.align_run_id)
    print(redact(json.dumps(report.model_dump(mode="json"), indent=2) if args.json
                 else align_lines(report)))
    return 0


def cmd_align_apply(args: argparse.Namespace) -> int:
    from studio.projects.aligning import use_for_next_run

    project = use_for_next_run(_store(args), args.align_run_id)
    print(f"project {project.name!r} (id {project.id}) judges with the aligned critic; start "
          "its next run in the studio or from an exported project file")
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from studio.projects.aligning import rescore_run
    from studio.views.aligning import agreement_rows

    scoring = rescore_run(_store(args), args.run_id, args.critic_from)
    if args.json:
        print(json.dumps(scoring.model_dump(mode="json"), indent=2))
        return 0
    print(f"scoring pass {scoring.id}: {len(scoring.scores)} trials of run {args.run_id} "
          f"scored again (their old scores are kept); agreement on {scoring.scope}:")
    for row in agreement_rows(scoring.before, scoring.after, ("original", "aligned")):
        print(f"{row['statistic']:<22} {row['original']:>8} {row['aligned']:>8}")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    store = _store(args)
    for run in store.list_runs(limit=args.limit):
        print(f"{run.id}  {run.status.value:<10} {run.created_at:%Y-%m-%d %H:%M}  "
              f"{run.stop_reason or '':<16} {run.name}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from studio.projects.export import export_run, jsonl_lines

    if args.out == "-":  # the JSONL stream on stdout (CSV is three files: it needs a path)
        if args.format != "jsonl":
            raise StudioError("--out -: writing to stdout works with --format jsonl only (CSV "
                              "is three files): give a path")
        store = _store(args)
        store.get_run(args.run_id)
        sys.stdout.writelines(jsonl_lines(store, args.run_id))
        return 0
    for path in export_run(_store(args), args.run_id, args.format, args.out):
        print(path)
    return 0


def cmd_blame(args: argparse.Namespace) -> int:
    from studio.model.redaction import redact
    from studio.projects.provenance import load_provenance
    from studio.views.provenance import blame_lines

    provenance = load_provenance(_store(args), args.run_id, args.candidate)
    if args.json:
        print(redact(json.dumps(list(provenance.rows()), indent=2)))
        return 0
    for line in blame_lines(provenance):
        print(redact(line))
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    from studio.engine.gates import decide, when_applied
    from studio.projects.workspace import require_reason

    require_reason(args.action, args.reason or "")
    store = _store(args)
    decision = decide(args.proposal_id, args.action, reason=args.reason or "",
                      edited_text=args.text, author=args.author, store=store)
    run_id = store.get_proposal(args.proposal_id).run_id
    if decision is None:  # a stop: no decision, the proposal waits again on resume
        live = store.get_run(run_id).status.is_active
        print(f"run {run_id} {'stops' if live else 'is not running'}; proposal "
              f"{args.proposal_id} stays pending and comes back to the gate when the run "
              f"resumes (`studio resume {run_id}`)")
        return 0
    print(f"decision {decision.id}: {decision.action.value} proposal {decision.proposal_id}")
    later = when_applied(store, run_id)
    if later:
        print(later)
    return 0


def cmd_override(args: argparse.Namespace) -> int:
    from studio.engine.gates import override

    record = override(args.trial_id, score=args.score, feedback=args.feedback,
                      author=args.author, store=_store(args))
    print(f"override {record.id}: trial {record.trial_id} score {record.score} "
          f"(judge said {record.judge_score})")
    return 0


def cmd_proposals(args: argparse.Namespace) -> int:
    from studio.engine.history import proposal_rows

    rows = proposal_rows(_store(args), args.run_id, pending_only=args.pending)
    if args.json:
        print(json.dumps([row.as_dict() for row in rows], indent=2))
        return 0
    if not rows:
        print("no proposal waits for a decision" if args.pending else "no proposals yet")
    for r in rows:
        decided = (f"{r.decision.value} by {r.decided_by} at {r.decided_at:%Y-%m-%d %H:%M:%S}"
                   if r.decision else ("WAITING FOR YOU" if r.waiting_for_you else "-"))
        sums = r.sums_text() or "-"
        print(f"{r.id:>5}  iter {r.iteration:<3} {_changes(r):<24} {r.status.value:<10} "
              f"{sums}  {decided}" + (f"  ({r.invalid_reason})" if r.invalid_reason else ""))
        if r.merge:
            print("       " + ", ".join(f"{key} from #{source}"
                                        for key, source in r.merge.sources.items()))
    if not args.pending:
        _print_skipped(_store(args), args.run_id)
    return 0


def _print_skipped(store: Any, run_id: str) -> None:
    """Iterations that ended without a proposal to decide on, said plainly under the list."""
    from studio.views.skips import skip_text

    for event in store.events(run_id, kind=EventKind.ITERATION_SKIPPED):
        print(f"iteration {event.iteration} skipped: {skip_text(event.payload)}")


def _changes(row: Any) -> str:
    """What a proposal changes: its component, or which candidates a merge combines (for a
    merge, the parent's sum is the better parent's on the subsample)."""
    if not row.merge:
        return row.component
    a, b = row.merge.parents
    return f"merge #{a} + #{b}"


def cmd_trials(args: argparse.Namespace) -> int:
    """Trials are written as they are read, a page at a time: constant memory on any run."""
    from studio.projects.workspace import trial_rows

    rows = trial_rows(_store(args), args.run_id, candidate_id=args.candidate, phase=args.phase,
                      offset=args.offset, limit=args.limit)
    if args.json:
        _write_json_array(rows, sys.stdout)
        return 0
    for r in rows:
        score = "-" if r["effective_score"] is None else f"{r['effective_score']:.2f}"
        judge = "-" if r["score"] is None else f"{r['score']:.2f}"
        mark = " corrected" if r["overridden"] else ""
        feedback = " ".join((r["feedback"] or r["error"] or "").split())[:80]
        print(f"{r['id']:>6}  cand {r['candidate']:<4} ex {r['example']:<4} {r['phase']:<7} "
              f"score {score} (judge {judge}){mark}  {feedback}")
    return 0


def _write_json_array(rows: Any, stream: Any) -> None:
    """One JSON array, an element per line, written as the rows arrive (never all in memory)."""
    stream.write("[")
    for n, row in enumerate(rows):
        stream.write(("," if n else "") + "\n  " + json.dumps(row))
    stream.write("\n]\n")


def cmd_validate(args: argparse.Namespace) -> int:
    """Every check ``studio run`` makes before its first model call (:func:`check_project`)."""
    from studio.projects.files import check_project_datasets, load_project

    project, base_dir = load_project(args.project)
    sets = check_project_datasets(project, base_dir, source=str(args.project))
    test = f", {len(sets.test)} test rows" if sets.test is not None else ""
    print(f"{args.project}: ok ({len(sets.train)} training rows, "
          f"{len(sets.val) if sets.val is not None else 'no'} validation rows{test})")
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    """Start the studio's web server with its settings, on this machine unless told otherwise."""
    import os
    import subprocess

    from studio.projects.files import ALLOW_CODE_REFS_ENV
    from studio.projects.serving import ALLOW_REMOTE_ENV, check_bind_address, streamlit_command

    check_bind_address(args.address, allow_remote=args.allow_remote)
    env = dict(os.environ)
    if args.allow_remote:
        env[ALLOW_REMOTE_ENV] = "1"
    if args.allow_code_refs:
        env[ALLOW_CODE_REFS_ENV] = "1"
    if args.db:
        env["STUDIO_DB_URL"] = args.db
    command = streamlit_command(address=args.address, port=args.port,
                                allowed_hosts=args.allowed_host or None)
    print(f"studio on http://{args.address}:{args.port}", file=sys.stderr)
    if args.print_command:
        print(" ".join(command))
        return 0
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 130


def cmd_schema(args: argparse.Namespace) -> int:
    from studio.projects.files import PROJECT_JSON_SCHEMA

    print(json.dumps(PROJECT_JSON_SCHEMA, indent=2))
    return 0


def _run_options(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A project and the settings that override its ``run:`` section (run and queue)."""
    command.add_argument("project", type=Path)
    command.add_argument("--review", choices=["auto", "review"])
    command.add_argument("--max-iterations", type=whole_number(0))
    command.add_argument("--max-metric-calls", type=whole_number(1))
    command.add_argument("--seed", type=whole_number(0))
    command.add_argument("--name", type=bounded_name)
    return command


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="studio", description=__doc__.split("\n")[0])
    root.add_argument("--db", help="database URL (default: STUDIO_DB_URL or the SQLite file)")
    sub = root.add_subparsers(dest="command", required=True)
    run = _run_options(sub.add_parser("run", help="run a project headless"))
    run.set_defaults(func=cmd_run)
    queue = _run_options(sub.add_parser(
        "queue", help="queue a project's run for `studio worker` processes"))
    queue.add_argument("--queue", default="default", type=bounded_queue,
                       help="queue name (default: default)")
    queue.set_defaults(func=cmd_queue)
    worker = sub.add_parser("worker", help="run queued runs, one at a time, until SIGTERM")
    worker.add_argument("--max-runs", type=whole_number(1), help="exit after N runs")
    worker.add_argument("--poll-seconds", type=positive_seconds, default=1.0,
                        help="how often an idle worker looks for a run (default 1)")
    worker.add_argument("--queue", default="default", type=bounded_queue,
                        help="queue name (default: default)")
    worker.set_defaults(func=cmd_worker)
    workers = sub.add_parser("workers", help="list live workers")
    workers.add_argument("--queue", type=bounded_queue)
    workers.set_defaults(func=cmd_workers)
    resume = sub.add_parser("resume", help="continue a stopped or orphaned run")
    resume.add_argument("run_id")
    resume.add_argument("--max-metric-calls", type=whole_number(1),
                        help="raise the run's budget (e.g. to pay for an edit at its gate)")
    resume.set_defaults(func=cmd_resume)
    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--limit", type=whole_number(1), default=20)
    runs.set_defaults(func=cmd_runs)
    export = sub.add_parser("export", help="write a run's candidates and trials")
    export.add_argument("run_id")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--out")
    export.set_defaults(func=cmd_export)
    test = sub.add_parser("test", help="score a run's baseline and best candidate on its "
                          "held-out test set (the overfitting guard)")
    test.add_argument("run_id")
    test.add_argument("--json", action="store_true")
    test.set_defaults(func=cmd_test)
    fork = sub.add_parser("fork", help="start a new run seeded with any candidate of a run")
    fork.add_argument("run_id")
    fork.add_argument("--candidate", type=whole_number(0), required=True,
                      help="the candidate's number (#N on the Compare page)")
    fork.add_argument("--critic", help="another critic: a YAML file (a critic section or a "
                      "project file) or the YAML itself")
    fork.add_argument("--dataset", type=Path, help="other examples: a CSV/JSONL of training "
                      "rows, or a YAML file with a dataset section (train, val, test)")
    fork.add_argument("--config", action="append", metavar="KEY=VALUE",
                      help="a run setting, e.g. max_iterations=5 (repeatable)")
    fork.add_argument("--name", type=bounded_name)
    fork.add_argument("--queue", type=bounded_queue,
                      help="queue the fork for `studio worker` instead of running it")
    fork.set_defaults(func=cmd_fork)
    align = sub.add_parser("align", help="evolve a run's critic to agree with its corrections")
    align.add_argument("run_id")
    align.add_argument("--held-out", type=float, default=0.3,
                       help="share of the labels kept out of the loop to test on (default 0.3)")
    align.add_argument("--threshold", type=float, default=0.5,
                       help="pass threshold of kappa and the confusion matrix (default 0.5)")
    align.add_argument("--review", choices=["auto", "review"])
    align.add_argument("--max-iterations", type=whole_number(0))
    align.add_argument("--seed", type=whole_number(0))
    align.add_argument("--queue", type=bounded_queue,
                       help="queue the align run for `studio worker`")
    align.add_argument("--part", help="the part of a weighted critic to align (its label or "
                                      "evaluator name), when several could be")
    align.set_defaults(func=cmd_align)
    align_report = sub.add_parser("align-report", help="an align run's agreement before/after")
    align_report.add_argument("align_run_id")
    align_report.add_argument("--json", action="store_true")
    align_report.add_argument("--no-measure", action="store_true",
                              help="do not run a judge on the held-out labels when its "
                                   "measurement is missing")
    align_report.set_defaults(func=cmd_align_report)
    align_apply = sub.add_parser("align-apply", help="copy the source project with the aligned "
                                 "critic, for the next run")
    align_apply.add_argument("align_run_id")
    align_apply.set_defaults(func=cmd_align_apply)
    rescore = sub.add_parser("rescore", help="score a run's trials again with an aligned critic "
                             "(a new scoring pass; old scores kept)")
    rescore.add_argument("run_id")
    rescore.add_argument("--critic-from", required=True, metavar="ALIGN_RUN_ID")
    rescore.add_argument("--json", action="store_true")
    rescore.set_defaults(func=cmd_rescore)
    blame = sub.add_parser("blame", help="which proposal wrote each sentence of a candidate")
    blame.add_argument("run_id")
    blame.add_argument("--candidate", type=whole_number(0),
                       help="candidate index #N (default: the best)")
    blame.add_argument("--json", action="store_true")
    blame.set_defaults(func=cmd_blame)
    decide = sub.add_parser("decide", help="answer a proposal waiting at the gate")
    decide.add_argument("proposal_id", type=whole_number(1))
    decide.add_argument("action", choices=["accept", "reject", "edit", "stop"])
    decide.add_argument("--reason")
    decide.add_argument("--text", help="the edited text (for edit)")
    decide.add_argument("--author", default="cli", type=bounded_name)
    decide.set_defaults(func=cmd_decide)
    override = sub.add_parser("override", help="correct a trial's score and/or feedback")
    override.add_argument("trial_id", type=whole_number(1))
    override.add_argument("--score", type=float)
    override.add_argument("--feedback")
    override.add_argument("--author", default="cli", type=bounded_name)
    override.set_defaults(func=cmd_override)
    proposals = sub.add_parser("proposals", help="list a run's proposals and their decisions")
    proposals.add_argument("run_id")
    proposals.add_argument("--pending", action="store_true",
                           help="only the proposal waiting for your decision")
    proposals.add_argument("--json", action="store_true")
    proposals.set_defaults(func=cmd_proposals)
    trials = sub.add_parser("trials", help="list a run's trials with corrected scores")
    trials.add_argument("run_id")
    trials.add_argument("--candidate", type=whole_number(1))
    trials.add_argument("--phase", help="parent, child, valset or test")
    trials.add_argument("--offset", type=whole_number(0), default=0,
                        help="skip the first N matching trials (oldest first)")
    trials.add_argument("--limit", type=whole_number(1), help="show at most N trials")
    trials.add_argument("--json", action="store_true")
    trials.set_defaults(func=cmd_trials)
    validate = sub.add_parser("validate", help="check a project file and its datasets")
    validate.add_argument("project", type=Path)
    validate.set_defaults(func=cmd_validate)
    schema = sub.add_parser("schema", help="print the project file's JSON Schema")
    schema.set_defaults(func=cmd_schema)
    ui = sub.add_parser("ui", help="start the studio in the browser (localhost only)")
    ui.add_argument("--port", type=whole_number(1, 65535), default=8501)
    ui.add_argument("--address", default="localhost",
                    help="bind address; anything but localhost needs --allow-remote")
    ui.add_argument("--allow-remote", action="store_true",
                    help="serve on a non-loopback address (put authentication in front)")
    ui.add_argument("--allowed-host", action="append",
                    help="a Host name the browser uses to reach the server (repeatable)")
    ui.add_argument("--allow-code-refs", action="store_true",
                    help="let projects from the browser load Python agents (agent.ref)")
    ui.add_argument("--print-command", action="store_true", help=argparse.SUPPRESS)
    ui.set_defaults(func=cmd_ui)
    return root


STORE_INTEGER_MAX = 2**63 - 1
"""The largest id or count a store holds (SQLite and PostgreSQL integers are 64-bit signed):
beyond it a query raises ``OverflowError`` instead of finding nothing."""


def whole_number(minimum: int, maximum: int = STORE_INTEGER_MAX):
    """An argparse type for ids and counts: an integer in ``[minimum, maximum]``, refused with
    the value and the range named (argparse names the argument)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or value > maximum:
            bound = f"between {minimum} and {maximum}" if maximum != STORE_INTEGER_MAX else \
                f"at least {minimum} (and at most 2**63-1)"
            raise argparse.ArgumentTypeError(f"{value} is not allowed: give a number {bound}")
        return value
    return parse


def bounded_name(text: str) -> str:
    """An argparse type: a name (run, author) that fits its database column on every backend."""
    return _bounded(text, "MAX_NAME_CHARS")


def bounded_queue(text: str) -> str:
    """An argparse type: a queue name that fits its database column on every backend."""
    return _bounded(text, "MAX_QUEUE_CHARS")


def _bounded(text: str, limit_name: str) -> str:
    import studio.model.limits as limits

    limit = getattr(limits, limit_name)
    if len(text) > limit:
        raise argparse.ArgumentTypeError(
            f"{len(text):,} characters is too long: the limit is {limit:,}; shorten it")
    return text


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above zero."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give seconds above 0")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run one command; model-written text reaches the terminal inert (:class:`PrintableStream`)
    and every refusal is one line (exit 2), never a traceback."""
    from studio.model.printable import PrintableStream

    args = parser().parse_args(argv)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(sys.stdout), PrintableStream(sys.stderr)
    try:
        quiet_library_logs()
        return args.func(args)
    except StudioError as exc:
        from studio.model.redaction import redact

        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `studio trials RUN | head`: the reader has what it wanted
        _silence_stdout()
        return 0
    except KeyboardInterrupt:  # before a run started, or in a command that is not a run
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout, sys.stderr = streams


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so Python's flush at exit does not raise a second
    BrokenPipeError (the documented idiom of the ``signal`` module's notes)."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError, AttributeError):  # no real stdout (a test)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())


if __name__ == "__main__":
    sys.exit(main())
