"""Bad inputs through the studio's real entry points: the CLI (``studio.cli.main``), the functions
behind the Projects page (upload, YAML editor, "Try it"), and the Run page's "Start run"."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

BASE: dict[str, Any] = {
    "name": "bad-input",
    "agent": {"name": "writer", "model": "scripted/demo",
              "instruction": "Write a haiku about the given topic."},
    "critic": {"type": "agent", "schema": "advanced", "model": "scripted/demo"},
    "reflection": {"model": "scripted/demo"},
    "dataset": {"train": [{"topic": "autumn leaves"}, {"topic": "city rain"}]},
    "run": {"max_iterations": 1, "minibatch_size": 2},
}


def project(**sections: Any) -> dict[str, Any]:
    """The base project with some sections replaced (``agent={...}`` merges into the agent)."""
    data = copy.deepcopy(BASE)
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict) and key != "dataset":
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def write_project(folder: Path, data: dict[str, Any], name: str = "project.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def saved(store):
    """A project already stored, which no failed input may lose or change."""
    from studio.projects.workspace import import_yaml

    record = import_yaml(store, yaml.safe_dump(project(name="keep-me")), "keep.yaml")

    def intact() -> bool:
        from studio.projects.workspace import stored_project

        names = [p.name for p in store.list_projects()]
        return names == ["keep-me"] and stored_project(store, record.id).name == "keep-me"

    return intact
