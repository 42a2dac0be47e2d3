"""``studio import-sessions URL --app NAME``: an ADK app's recorded sessions as examples
(:mod:`studio.projects.session_import`)."""

from __future__ import annotations

import argparse
import sys

from studio.cli.common import _store
from studio.model.errors import ConfigError
from studio.model.redaction import mask_url
from studio.projects.session_import import into_project, write_examples
from studio.runtime.adk_sessions import SessionFilter, read_sessions


def cmd_import_sessions(args: argparse.Namespace) -> int:
    if (args.out is None) == (args.project is None):
        raise ConfigError("say where the examples go: --out FILE (NAME.evalset.json or "
                          "NAME.jsonl) or --project NAME", where="--out")
    read = read_sessions(args.url, args.app, session_filter(args))
    source = f"{len(read.turns)} examples from {read.sessions} session" \
             f"{'s' if read.sessions != 1 else ''} of {args.app} in {mask_url(args.url)}"
    if args.out is not None:
        write_examples(read, args.out, args.app)
        print(f"{source} written to {args.out}")
    else:
        replaced = into_project(_store(args), args.project, read)
        print(f"{source} are project {args.project!r}'s training rows now "
              f"({replaced} rows replaced)")
    for reason in read.left_out:
        print(f"left out: {reason}", file=sys.stderr)
    return 0


def session_filter(args: argparse.Namespace) -> SessionFilter:
    return SessionFilter(session_ids=tuple(args.session), user_id=args.user,
                         since=args.since, until=args.until,
                         state=tuple(_state(item) for item in args.state),
                         all_turns=args.all_turns)


def _state(item: str) -> tuple[str, str | None]:
    key, equals, value = item.partition("=")
    if not key:
        raise ConfigError(f"--state {item!r}: give KEY or KEY=VALUE", where="--state",
                          value=item)
    return key, value if equals else None
