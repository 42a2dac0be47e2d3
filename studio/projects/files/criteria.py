"""A project's ADK eval criteria (``critic: {type: adk_metrics, adk_metrics: ...}``): inline, or
a ``test_config.json`` beside the project file, read when the project loads so a run's stored
spec carries the criteria themselves (a worker never reads the project's folder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studio.model.errors import ProjectFileError
from studio.projects.files.readers import decode_text, read_bounded

MAX_CRITERIA_BYTES = 1_000_000


def criteria_config(value: dict[str, Any] | str, base_dir: Path, where: str) -> dict[str, Any]:
    """The eval config ``value`` names: itself, or the JSON file at that relative path.

    Raises:
        ProjectFileError: the path is absolute, outside the project's folder, missing, too large,
            not JSON or not an object.
    """
    if isinstance(value, dict):
        return value
    path = criteria_path(value, base_dir, where)
    text = decode_text(read_bounded(path, MAX_CRITERIA_BYTES, ProjectFileError), str(path),
                       ProjectFileError)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProjectFileError(f"the eval criteria file {value!r} is not JSON: {exc}",
                               where=where, value=value) from exc
    if not isinstance(data, dict):
        raise ProjectFileError(f"the eval criteria file {value!r} must hold a JSON object "
                               '({"criteria": {...}}), as ADK\'s test_config.json does',
                               where=where, value=value)
    return data


def criteria_path(value: str, base_dir: Path, where: str) -> Path:
    """A criteria file's path: relative, and inside the project's folder."""
    raw = Path(value)
    if raw.is_absolute():
        raise ProjectFileError(f"the eval criteria file {value!r} is an absolute path; give a "
                               "path relative to the project file's folder", where=where,
                               value=value)
    folder = base_dir.resolve()
    path = (folder / raw).resolve()
    if not path.is_relative_to(folder):
        raise ProjectFileError(f"the eval criteria file {value!r} is outside the project's "
                               f"folder {folder}; move it next to the project file",
                               where=where, value=value)
    return path
