"""Importing a person's agent code in a guard: whatever the module raises while it is imported
(a syntax error, an exception, an invalid ADK 2 ``Workflow``, even ``sys.exit(3)``) becomes one
:class:`~studio.model.errors.AgentImportError` line naming the folder, the file and line in the
person's code, the cause and what to do, never a traceback through the studio's internals nor a
silent exit. Ctrl-C (``KeyboardInterrupt``) is not caught: it still stops the command.

A failed import leaves nothing of the package behind in ``sys.modules`` (a module imported
before the failure would otherwise be kept as it was), so once the file is fixed the next try
in the same process (the ``--agents`` form) reads the files again.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from studio.model.errors import AgentImportError, ConfigError

MAX_CAUSE_CHARS = 300
"""The longest cause quoted from an exception's text (a pydantic error lists every field)."""


def import_agent_module(module_name: str, *, reference: str, folder: Path | None = None
                        ) -> ModuleType:
    """``importlib.import_module(module_name)``, any failure of the module's own code raised
    as one :class:`AgentImportError` line.

    Raises:
        ConfigError: the module itself is not found (``reference`` names a missing package).
        AgentImportError: the module's code raised or exited while it was imported.
    """
    top = module_name.partition(".")[0]
    before = set(sys.modules)
    try:
        return importlib.import_module(module_name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: a module's sys.exit() fails this folder only
        _forget_package(top, before)
        if isinstance(exc, ModuleNotFoundError) and _is_the_module(exc, module_name):
            raise ConfigError(f"cannot import module {module_name!r}: {exc}", where="agent.ref",
                              value=reference) from exc
        raise import_failure(exc, module_name, reference=reference, folder=folder) from exc


def import_failure(exc: BaseException, module_name: str, *, reference: str,
                   folder: Path | None) -> AgentImportError:
    """The one-line error for ``exc`` raised while ``module_name`` was imported."""
    file, line = _place(exc, folder)
    cause = _cause(exc)
    subject = f"the agent folder {folder.name}" if folder is not None else \
        f"agent.ref {reference!r}"
    place = f"{file}, line {line}: " if file and line else (f"{file}: " if file else "")
    message = (f"{subject} could not be imported: {place}{cause}. "
               f"{_advice(exc, module_name, folder)}")
    return AgentImportError(message, where="agent.folder" if folder is not None else "agent.ref",
                            value=str(folder) if folder is not None else reference, file=file,
                            line=line, cause=cause)


def _is_the_module(exc: ModuleNotFoundError, module_name: str) -> bool:
    """Whether the module not found is ``module_name`` (or its package), not one it imports."""
    missing = exc.name or ""
    return bool(missing) and (module_name == missing or module_name.startswith(missing + "."))


def _forget_package(top: str, before: set[str]) -> None:
    """Drop what the failed import added of package ``top`` (``my_agent.prompt`` imported
    before ``my_agent.agent`` failed), so the next import reads every file again."""
    for name in set(sys.modules) - before:
        if name == top or name.startswith(top + "."):
            sys.modules.pop(name, None)


def _place(exc: BaseException, folder: Path | None) -> tuple[str | None, int | None]:
    """The file (relative to the folder's parent when it is inside the folder) and line in the
    person's code where ``exc`` was raised: the innermost frame inside ``folder``, else the
    innermost frame that is not Python's import machinery."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return _shown(exc.filename, folder), exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<")]
    inside = [f for f in frames if folder is not None and _is_inside(f.filename, folder)]
    if not inside and not frames:
        return None, None
    chosen = (inside or frames)[-1]
    return _shown(chosen.filename, folder), chosen.lineno


def _is_inside(filename: str, folder: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def _shown(filename: str, folder: Path | None) -> str:
    if folder is not None and _is_inside(filename, folder):
        return str(Path(filename).resolve().relative_to(folder.resolve().parent))
    return filename


def _cause(exc: BaseException) -> str:
    """What the module raised, in one line."""
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        return f"it called sys.exit({code}) while being imported"
    if isinstance(exc, SyntaxError):
        return f"{type(exc).__name__}: {exc.msg}"
    errors = getattr(exc, "errors", None)
    title = getattr(exc, "title", None)
    if callable(errors) and isinstance(title, str):  # pydantic: ADK's agents and Workflow
        text = _pydantic_cause(title, errors())
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= MAX_CAUSE_CHARS else text[:MAX_CAUSE_CHARS].rstrip() + " [...]"


def _pydantic_cause(title: str, errors: list[Any]) -> str:
    """The deepest error (the value itself, not the union branches around it), with the value
    when it is short."""
    if not errors:
        return f"{title} is invalid"
    chosen = max(errors, key=lambda error: len(error.get("loc", ())))
    place = ".".join(str(part) for part in chosen.get("loc", ())
                     if isinstance(part, int) or "[" not in str(part))
    message = str(chosen.get("msg", "invalid")).removeprefix("Value error, ")
    value = chosen.get("input")
    got = f", got {value!r}" if isinstance(value, str | int | float) and len(repr(value)) <= 80 \
        else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{title} is invalid: {place + ': ' if place else ''}{message}{got}{more}"


def _advice(exc: BaseException, module_name: str, folder: Path | None) -> str:
    """What to do, after the cause."""
    if isinstance(exc, SystemExit):
        return ("Code that exits belongs under `if __name__ == \"__main__\":`; an agent "
                "module is imported by adk web, adk run and the studio, and must not exit")
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f"Install the package that provides {exc.name!r} in the studio's environment"
    where = f"cd {folder.parent} && " if folder is not None else ""
    hint = ("If it reads an environment variable, set it (or put it in the folder's .env). "
            if isinstance(exc, KeyError) else "")
    return (f"{hint}Fix it and run again (`{where}python -c 'import {module_name}'` shows the "
            "whole traceback)")
