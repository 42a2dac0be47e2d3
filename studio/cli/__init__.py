"""``studio``, the command line: :func:`main` parses the arguments (:mod:`studio.cli.commands`,
which also lists every command and the module that runs it) and runs one command.

One module per command group: :mod:`.runs` (run, queue, resume, test, fork), :mod:`.workers`,
:mod:`.listing` (runs), :mod:`.data` (trials, export, blame), :mod:`.proposals` (proposals,
decide, override), :mod:`.aligning` (align, align-report, align-apply, rescore),
:mod:`.projects` (validate, schema, ui), :mod:`.gate` (the review gate in the shell);
:mod:`.common` holds what they share.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any

import studio  # noqa: F401  (sets LITELLM_LOCAL_MODEL_COST_MAP first)
from studio.cli.commands import load, parser, run_command
from studio.model.errors import StudioError
from studio.model.printable import PrintableStream
from studio.model.redaction import redact
from studio.runtime.logs import quiet_library_logs
from studio.runtime.tracing import flush_tracing

__all__ = ["ProgressBar", "database_label", "holdout_lines", "main", "parser",
           "quiet_library_logs"]

LAZY_EXPORTS = {
    "ProgressBar": "studio.cli.common:ProgressBar",
    "database_label": "studio.cli.common:database_label",
    "holdout_lines": "studio.cli.runs:holdout_lines",
}
"""Names kept importable from ``studio.cli``, loaded on first use like the commands."""


def __getattr__(name: str) -> Any:
    if name in LAZY_EXPORTS:
        return load(LAZY_EXPORTS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ENDS_AT_ONCE = frozenset({"worker"})
"""Commands that, run as the program, end the process as soon as they return (their work is
committed and their run released by then): Python's own teardown of a process that loaded ADK
and LiteLLM (about a thousand modules) is garbage collection over their objects, which took
25-37 s on a busy 2-core machine, and a worker told to stop must be gone within seconds."""


def main(argv: list[str] | None = None) -> int:
    """Run one command; model-written text reaches the terminal inert (:class:`PrintableStream`)
    and every refusal is one line (exit 2), never a traceback. Run as the program (``argv``
    None), a command of :data:`ENDS_AT_ONCE` ends the process when it returns."""
    args = parser().parse_args(argv)
    code = _run(args)
    if argv is None and args.command in ENDS_AT_ONCE:
        end_process(code)
    return code


def end_process(code: int) -> None:
    """Flush what the process still holds (its output, its log, its trace spans) and end it
    without the interpreter's teardown."""
    flush_tracing()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _run(args: Any) -> int:
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(sys.stdout), PrintableStream(sys.stderr)
    try:
        quiet_library_logs()
        return run_command(args)
    except StudioError as exc:
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
    real = sys.__stdout__
    if real is None:  # no stdout at all (a daemon)
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no real stdout (a test)
        os.dup2(os.open(os.devnull, os.O_WRONLY), real.fileno())

