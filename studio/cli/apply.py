"""``studio apply RUN``: write the run's best (or chosen) candidate into the agent folder's
source, print the unified diff (:mod:`studio.projects.applying`)."""

from __future__ import annotations

import argparse
import getpass
import sys

from studio.cli.common import _store
from studio.projects.applying import apply_plan, plan_apply


def cmd_apply(args: argparse.Namespace) -> int:
    """The diff goes to stdout (``studio apply RUN --dry-run > fix.patch``), what is written
    where to stderr. Exit 1 when a component could not be written into the source (its text
    went to a ``.txt`` file instead)."""
    store = _store(args)
    plan = plan_apply(store, args.run_id, candidate=args.candidate, folder=args.to)
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731
    say(f"candidate #{plan.candidate.index} of run {args.run_id} into {plan.folder}:")
    for line in plan.lines():
        say("  " + line)
    sys.stdout.write(plan.patch())
    if args.dry_run:
        files = [str(p) for p in plan.files] + [str(plan.folder / n) for n in plan.text_files]
        say("dry run: nothing written" + (f" (would write {', '.join(files)})" if files else ""))
        return 1 if plan.refused else 0
    if not plan.files and not plan.text_files:
        say("nothing to write: the candidate's components are the folder's already")
        return 0
    record = apply_plan(store, plan, author=args.author or _login())
    say(f"written: {', '.join(record.files + record.text_files)}; recorded on run "
        f"{args.run_id}")
    return 1 if plan.refused else 0


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in this environment (a container)
        return "cli"
