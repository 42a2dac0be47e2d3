"""Starting and driving runs: ``studio run``, ``queue``, ``resume``, ``test`` and ``fork``."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from studio.cli.common import ProgressBar, _store, database_label
from studio.cli.gate import ShellGate
from studio.engine.hosting.api import load_result, start_test_scoring
from studio.engine.hosting.dispatch import Placement, dispatch
from studio.engine.hosting.queue import live_workers
from studio.engine.hosting.worker import RunHandle, get_manager
from studio.engine.scoring.holdout import load_holdout
from studio.model.config import ReviewMode
from studio.model.errors import (
    ConfigError,
    StoreFullError,
    StoreUnavailableError,
    StudioError,
)
from studio.model.records import Run, RunStatus, StopReason
from studio.projects.adk_runs import FolderRunRequest, folder_project
from studio.projects.files import create_project_run, file_kind, load_project
from studio.projects.forking import fork_from_cli
from studio.runtime.tracing import enable_tracing
from studio.store import Store
from studio.views.models import model_notes

if TYPE_CHECKING:
    from studio.engine.run.context import Listener
    from studio.engine.scoring.guard import HoldoutReport
    from studio.model.config import EvolutionConfig
    from studio.projects.files import ProjectFile


def _stored_run(args: argparse.Namespace):
    """The project's run, checked and stored with its examples (not started): ``(store, run)``.
    An agent folder is made into its project first (:func:`folder_project_from_args`)."""
    if args.project.is_dir():
        project, base_dir = folder_project_from_args(args)
    else:
        refuse_folder_options(args)
        project, base_dir = load_project(args.project)
    config = _run_config(project.run, args)
    store = _store(args)
    return store, create_project_run(store, project, base_dir, name=args.name or project.name,
                                     config=config, source=str(args.project))



_FOLDER_OPTIONS = ("evalset", "val_evalset", "sampler_config", "optimizer_config", "criteria",
                   "model", "critic_model", "reflection_model", "write_project")


def folder_project_from_args(args: argparse.Namespace) -> tuple[ProjectFile, Path]:
    """``studio run my_agent --evalset ...``: the project an agent folder and its eval sets
    make, saved first with ``--write-project``."""
    target = args.write_project
    made = folder_project(FolderRunRequest(
        folder=args.project, evalsets=tuple(args.evalset), val_evalsets=tuple(args.val_evalset),
        sampler_config=args.sampler_config, optimizer_config=args.optimizer_config,
        criteria=args.criteria, model=args.model, critic_model=args.critic_model,
        reflection_model=args.reflection_model),
        project_dir=target.resolve().parent if target else None)
    if target is not None:
        target.write_text(made.text, encoding="utf-8")
        print(f"project written to {target}", file=sys.stderr)
    return made.project, made.base_dir


def refuse_folder_options(args: argparse.Namespace) -> None:
    """The agent folder options with anything but an agent folder: a project file says all of
    it, and a path that is missing or not a folder is named for what it is."""
    given = [name for name in _FOLDER_OPTIONS if getattr(args, name, None)]
    if not given:
        return
    flag = "--" + given[0].replace("_", "-")
    raise ConfigError(f"{flag} is for an agent folder (`studio run my_agent {flag} ...`); "
                      f"{args.project} {_not_a_folder(args.project)}", where=flag,
                      value=str(args.project))


def _not_a_folder(path: Path) -> str:
    """What ``path`` is instead of an agent folder, and what to give."""
    if not path.exists():
        return "does not exist: give the path of the agent folder (the folder holding agent.py)"
    if path.is_file() and path.suffix.lower() in (".yaml", ".yml"):
        return "is a project file, which names its own agent and datasets"
    if path.is_file() and path.suffix == ".py":
        return (f"is a Python file, not an agent folder: give the folder holding it "
                f"({path.parent})")
    return f"is {file_kind(path)}, not an agent folder"


def cmd_run(args: argparse.Namespace) -> int:
    store, run = _stored_run(args)
    print(f"run {run.id} started (database: {database_label(store.url)}); watch it with "
          f"`studio ui`", file=sys.stderr)
    for line in model_notes(run.spec):
        print(line, file=sys.stderr)
    watch = RunWatch.of(store, run)
    enable_tracing()
    handle = dispatch(store, run.id, Placement.HERE, listeners=watch.listeners()).handle
    return _wait(handle, store, run.id, watch)


@dataclass
class RunWatch:
    """What a terminal shows of a run it drives: the progress bar, and in review mode the
    gate that shows each waiting proposal and asks for the decision (:mod:`studio.cli.gate`)."""

    bar: ProgressBar
    gate: ShellGate | None = None

    @classmethod
    def of(cls, store: Store, run: Run) -> RunWatch:
        if run.config.review is not ReviewMode.REVIEW:
            return cls(ProgressBar())
        bar = ProgressBar(gated=True)
        return cls(bar, ShellGate(store, run.id, hold=bar.hold))

    def listeners(self) -> list[Listener]:
        return [self.bar] + ([self.gate] if self.gate else [])

    def poll(self) -> None:
        if self.gate is not None:
            self.gate.poll()



def cmd_queue(args: argparse.Namespace) -> int:
    """Store the run with everything needed to run it, for whichever worker claims it."""
    store, run = _stored_run(args)
    dispatch(store, run.id, Placement.QUEUE, queue=args.queue)
    workers = len(live_workers(store, args.queue))
    print(f"run {run.id} queued in {args.queue!r} (database: {database_label(store.url)}); "
          f"{workers} live worker{'s' if workers != 1 else ''} on that queue"
          + ("" if workers else ": start one with `studio worker`"), file=sys.stderr)
    print(run.id)
    return 0


def _run_config(config: EvolutionConfig, args: argparse.Namespace) -> EvolutionConfig:
    """The project's run settings with the command line's on top, validated."""
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



def cmd_resume(args: argparse.Namespace) -> int:
    store = _store(args)
    manager = get_manager(store)
    enable_tracing()
    watch = RunWatch.of(store, store.get_run(args.run_id))
    handle = manager.resume(args.run_id, listeners=watch.listeners(),
                            max_metric_calls=args.max_metric_calls)
    print(f"run {args.run_id} resumed", file=sys.stderr)
    return _wait(handle, store, args.run_id, watch)


def _wait(handle: Any, store: Store, run_id: str, watch: RunWatch | None = None) -> int:
    """Wait for the run to end; one stopped by a database outage is resumed once the database
    answers (``studio run`` waits through a server restart), Ctrl-C stops it (also at the
    gate's question). Between two looks at the run, the gate shows what waits, and the bar
    is kept current (the time a long phase has taken so far). ``handle``: a RunHandle
    (Any: dispatch types its handle optional, and a run placed here always has one)."""
    watch = watch or RunWatch(ProgressBar())
    while True:
        try:
            ticked = time.monotonic()
            while handle.running:
                watch.poll()
                time.sleep(0.2)
                if time.monotonic() - ticked >= 1.0:
                    ticked = time.monotonic()
                    watch.bar.tick()
            handle.wait()
            break
        except KeyboardInterrupt:
            return _stop_on_interrupt(handle, store, run_id)
        except StoreFullError:  # a disk rarely frees itself: the message says what to do
            raise
        except StoreUnavailableError as exc:
            resumed = get_manager(store).resume_after_outage(
                handle, exc, say=lambda line: print(line, file=sys.stderr),
                stopping=lambda: False, sleep=time.sleep, listeners=watch.listeners())
            if resumed in (StopReason.LEASE_LOST, StopReason.ERROR,
                           StopReason.DATABASE_UNAVAILABLE):  # said why; not resumed here
                return 1
            if isinstance(resumed, StopReason):  # it completed, or a person stopped it
                break
            handle = resumed
    result = load_result(store, run_id)
    print(json.dumps({"run_id": run_id, "status": result.status,
                      "stop_reason": result.stop_reason,
                      "original_score": result.original_score,
                      "final_score": result.final_score,
                      "metric_calls": result.metric_calls,
                      "evolved_components": result.evolved_components}, indent=2))
    return 0 if result.status in ("completed", "stopped") else 1



def _stop_on_interrupt(handle: RunHandle, store: Store, run_id: str) -> int:
    """Ctrl-C: ask the run to stop at its next step and wait for it; a second Ctrl-C (or a step
    that outlasts 30 s) stops it now. Either way the run is left ``stopped`` and resumable, and
    what it committed is kept (a trial in flight is redone by ``studio resume``)."""
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
            store.update_run(run_id, status=RunStatus.STOPPED, stop_reason=StopReason.USER)
            store.release_lease(run_id, manager.worker_id)
    print(f"run {run_id} stopped; resume it with `studio resume {run_id}`", file=sys.stderr)
    return 130


def cmd_test(args: argparse.Namespace) -> int:
    """Score a settled run's baseline and best candidate on its test set, then the verdict."""
    store = _store(args)
    handle = start_test_scoring(store, args.run_id, listeners=[ProgressBar()])
    handle.wait()
    report = load_holdout(store, args.run_id)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print(holdout_lines(report))
    return 0


def holdout_lines(report: HoldoutReport) -> str:
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
