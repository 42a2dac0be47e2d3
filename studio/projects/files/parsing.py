"""Project text to :class:`~studio.projects.files.sections.ProjectFile` and back: parse (size
bounded first, :data:`MAX_PROJECT_BYTES`), load from a path, dump for storing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    ValidationError,
)

from studio.model.errors import ProjectFileError, StudioError
from studio.model.redaction import redact_data
from studio.projects.files.error_text import explain_validation
from studio.projects.files.readers import decode_text, read_bounded
from studio.projects.files.sections import ProjectFile
from studio.projects.files.yaml_loader import BoundedLoader

MAX_PROJECT_BYTES = 2_000_000
"""A project file larger than this (2 MB) is refused before it is parsed."""


def parse_project(text: str, *, source: str = "<project>") -> ProjectFile:
    """Parse and validate YAML text (size, nesting and aliases are bounded first).

    Raises:
        ProjectFileError: naming ``source``, the field path and what is wrong.
    """
    if len(text) > MAX_PROJECT_BYTES:
        raise ProjectFileError(f"the project file is {len(text):,} characters; the limit is "
                               f"{MAX_PROJECT_BYTES:,}: move large datasets to CSV/JSONL files",
                               where=source)
    try:
        data = yaml.load(text, Loader=BoundedLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}, line {mark.line + 1}" if mark else source
        raise ProjectFileError(f"YAML does not parse: {getattr(exc, 'problem', None) or exc}",
                               where=where) from exc
    if not isinstance(data, dict):
        raise ProjectFileError("a project file must be a YAML mapping (name:, agent:, ...)",
                               where=source)
    try:
        return ProjectFile.model_validate(data)
    except ValidationError as exc:
        raise ProjectFileError(explain_validation(exc, data), where=source) from exc
    except StudioError as exc:
        raise ProjectFileError(str(exc), where=source) from exc


def load_project(path: str | Path) -> tuple[ProjectFile, Path]:
    """Read a project file; returns it with the folder its dataset paths are relative to."""
    path = Path(path)
    text = decode_text(read_bounded(path, MAX_PROJECT_BYTES, ProjectFileError), str(path),
                       ProjectFileError)
    return parse_project(text, source=str(path)), path.parent


def dump_project(project: ProjectFile) -> str:
    """The project as YAML, for storing: secrets from the environment redacted in the values
    (so the text always parses again, unlike replacing inside the YAML text)."""
    data = redact_data(project.model_dump(mode="json", by_alias=True, exclude_defaults=False))
    return yaml.safe_dump(_without_unused_sections(data), sort_keys=False, allow_unicode=True)


_OPTIONAL_KEYS = {"": ("agent", "agents", "workflow", "primary"),
                  "agent": ("output_key", "tools"), "dataset": ("images",),
                  "critic": ("adk_metrics", "score")}
"""Keys left out of a stored project while unused (empty or None), so a one-agent project reads
as it always did; every other field is written out with its value."""


def _without_unused_sections(data: dict[str, Any]) -> dict[str, Any]:
    def prune(section: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        return {k: v for k, v in section.items() if k not in keys or v not in (None, [], {})}

    data = prune(data, _OPTIONAL_KEYS[""])
    for name in ("agent", "dataset", "critic"):
        if isinstance(data.get(name), dict):
            data[name] = prune(data[name], _OPTIONAL_KEYS[name])
    if data.get("agents"):
        data["agents"] = [prune(a, _OPTIONAL_KEYS["agent"]) for a in data["agents"]]
    return data
