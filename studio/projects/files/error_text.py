"""Pydantic's validation errors as one line a person can act on: the field named as the file
names it (``agents[1] (writer).model``), with "did you mean" for an unknown field."""

from __future__ import annotations

import difflib
from typing import get_args

from pydantic import (
    BaseModel,
    ValidationError,
)
from pydantic_core import ErrorDetails

from studio.model.errors import ConfigError
from studio.model.limits import too_long
from studio.projects.files.sections import ProjectFile


def explain_validation(exc: ValidationError, data: object = None) -> str:
    errors = [e for e in exc.errors() if not _other_branch_failed(e, exc.errors())]
    problems = []
    for error in errors[:5]:
        path = _readable_path(error["loc"], data)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field" + _suggestion(error["loc"])
        elif error["type"] == "string_too_long" and isinstance(error.get("input"), str):
            message = too_long(error["input"], (error.get("ctx") or {}).get("max_length", 0),
                               "the text") or message
        path, message = _refined(error, path, message)
        problems.append(f"{path}: {message}" if path else message)
    return "; ".join(problems)


_STEP_BRANCHES = ("str", "WorkflowSpec")
"""Pydantic's names for the two kinds of workflow step (an agent's name, a nested workflow)."""


def _other_branch_failed(error: ErrorDetails, errors: list[ErrorDetails]) -> bool:
    """A step that is a nested workflow fails the "agent name" branch too: report only why the
    workflow is wrong."""
    loc = error["loc"]
    return bool(loc) and loc[-1] == "str" and any(
        e["loc"][:len(loc)] == (*loc[:-1], "WorkflowSpec") for e in errors)


def _readable_path(loc: tuple, data: object) -> str:
    """``agents.1.model`` as ``agents[1] (writer).model`` and a nested workflow's
    ``workflow.steps.1.WorkflowSpec.type`` as ``workflow.steps[1] (refine).type``: errors name
    the agent or the workflow."""
    parts: list[str] = []
    node = data
    for part in loc:
        if part in _STEP_BRANCHES:
            continue
        if isinstance(part, int) and parts and parts[-1] in ("agents", "steps"):
            node = node[part] if isinstance(node, list) and part < len(node) else None
            name = node.get("name") if isinstance(node, dict) else None
            parts[-1] += f"[{part}]" + (f" ({name})" if name else "")
            continue
        node = node.get(part) if isinstance(node, dict) else None
        parts.append(str(part))
    return ".".join(parts)


def _refined(error: ErrorDetails, path: str, message: str) -> tuple[str, str]:
    """A field validator's ConfigError places itself inside the field (``tools[2]``): use its
    place rather than repeat it (``agent.tools[2]: ...``, not ``agent.tools: tools[2]: ...``)."""
    cause = (error.get("ctx") or {}).get("error")
    where = getattr(cause, "where", None)
    field = str(error["loc"][-1]) if error["loc"] else ""
    if not isinstance(cause, ConfigError) or not where or not field or \
            not where.startswith(field):
        return path, message
    return path[:len(path) - len(field)] + where, cause.message


def _suggestion(loc: tuple) -> str:
    model: type[BaseModel] | None = ProjectFile
    for part in loc[:-1]:
        if isinstance(part, int) or part in _STEP_BRANCHES:
            continue  # a list index or a union branch: the model stays the item's
        field = getattr(model, "model_fields", {}).get(str(part))
        model = _model_in(field.annotation) if field is not None else None
        if model is None:
            return ""
    names = list(getattr(model, "model_fields", {}))
    names += [f.alias for f in getattr(model, "model_fields", {}).values() if f.alias]
    close = difflib.get_close_matches(str(loc[-1]), names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known fields: {', '.join(names)})"


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The pydantic model a field holds: itself, or the item of a list or an optional."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)
