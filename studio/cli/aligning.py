"""Aligning a run's critic with its corrections: ``studio align``, ``align-report``,
``align-apply`` and ``rescore``."""

from __future__ import annotations

import argparse
import json
import sys

from studio.cli.common import ProgressBar, _store, database_label
from studio.cli.runs import _wait
from studio.engine.hosting.dispatch import Placement, dispatch
from studio.model.config import EvolutionConfig
from studio.model.costs import format_cost
from studio.model.redaction import redact
from studio.projects.aligning import (
    align_report,
    create_align_run,
    report_measured,
    rescore_run,
    use_for_next_run,
)
from studio.views.aligning import agreement_rows, align_lines


def cmd_align(args: argparse.Namespace) -> int:
    """An align run of the run's critic: run here (then its report), or queued with --queue."""
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
    project = use_for_next_run(_store(args), args.align_run_id)
    print(f"project {project.name!r} (id {project.id}) judges with the aligned critic; start "
          "its next run in the studio or from an exported project file")
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    scoring = rescore_run(_store(args), args.run_id, args.critic_from)
    if args.json:
        print(json.dumps(scoring.model_dump(mode="json"), indent=2))
        return 0
    print(f"scoring pass {scoring.id}: {len(scoring.scores)} trials of run {args.run_id} "
          f"scored again (their old scores are kept; cost {format_cost(scoring.cost_usd)}); "
          f"agreement on {scoring.scope}:")
    for row in agreement_rows(scoring.before, scoring.after, ("original", "aligned")):
        print(f"{row['statistic']:<22} {row['original']:>8} {row['aligned']:>8}")
    return 0
