"""Reading what a run holds: ``studio trials``, ``export`` and ``blame``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import TextIO

from studio.cli.common import _store
from studio.model.errors import StudioError
from studio.model.redaction import redact
from studio.projects.export import export_run, jsonl_lines
from studio.projects.provenance import load_provenance
from studio.projects.workspace import trial_rows
from studio.views.provenance import blame_lines


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "adk-evalset-result":
        from studio.projects.adk_results import write_adk_results  # ADK's models: when used

        for path in write_adk_results(_store(args), args.run_id, args.out,
                                      threshold=args.threshold):
            print(path)
        return 0
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
    provenance = load_provenance(_store(args), args.run_id, args.candidate)
    if args.json:
        print(redact(json.dumps(list(provenance.rows()), indent=2)))
        return 0
    for line in blame_lines(provenance):
        print(redact(line))
    return 0


def cmd_trials(args: argparse.Namespace) -> int:
    """Trials are written as they are read, a page at a time: constant memory on any run. Each
    line leads with the trial's number in the run and its database id (what ``studio
    override`` takes)."""
    rows = trial_rows(_store(args), args.run_id, candidate=args.candidate, phase=args.phase,
                      offset=args.offset, limit=args.limit)
    if args.json:
        _write_json_array(rows, sys.stdout)
        return 0
    for r in rows:
        score = "-" if r["effective_score"] is None else f"{r['effective_score']:.2f}"
        judge = "-" if r["score"] is None else f"{r['score']:.2f}"
        mark = " corrected" if r["overridden"] else ""
        feedback = " ".join((r["feedback"] or r["error"] or "").split())[:80]
        trial = f"{r['number']} (id {r['id']})"
        example = f"{r['split']} {r['example_index']}"
        print(f"{trial:>14}  cand #{r['candidate']:<3} ex {example:<9} {r['phase']:<7} "
              f"score {score} (judge {judge}){mark}  {feedback}")
    return 0


def _write_json_array(rows: Iterable[object], stream: TextIO) -> None:
    """One JSON array, an element per line, written as the rows arrive (never all in memory)."""
    stream.write("[")
    for n, row in enumerate(rows):
        stream.write(("," if n else "") + "\n  " + json.dumps(row))
    stream.write("\n]\n")
