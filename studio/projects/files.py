"""Project files (YAML): the agent, critic, reflection agent, datasets and run settings.

Validation errors name the file, the field and what is wrong. :data:`PROJECT_JSON_SCHEMA` is the
JSON Schema of the format (``studio schema`` prints it). Dataset paths are relative to the
project file; CSV cells are strings, JSONL rows are JSON objects.

Example::

    name: haiku
    agent: {name: writer, model: local/smollm2, instruction: Write a haiku about the topic.}
    critic: {type: agent, schema: simple, model: local/smollm2}
    dataset:
      train: [{topic: autumn leaves}, {topic: city rain}]
    run: {max_iterations: 5, review: auto}
"""

from __future__ import annotations

import csv
import difflib
import json
import random
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from studio.engine.build import create_run
from studio.model.config import EvolutionConfig
from studio.model.errors import DatasetError, ProjectFileError, StudioError
from studio.model.records import (
    EXPECTED_KEY,
    AgentSpec,
    CriticSpec,
    GenerationConfig,
    ReflectionSpec,
    RunSpec,
    validate_examples,
)


class AgentSection(BaseModel):
    """The agent to evolve: declared here, or loaded from Python with ``ref``."""

    model_config = ConfigDict(extra="forbid")

    name: str = "agent"
    model: str = "local/smollm2"
    instruction: str = ""
    output_schema: dict[str, Any] | None = None
    generate_content_config: GenerationConfig = Field(default_factory=GenerationConfig)
    ref: str | None = None
    """``package.module:attribute`` of an existing ADK agent (then the fields above are unused)."""


class CriticSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str = Field(default="agent", pattern="^(agent|evaluator)$")
    name: str = "critic"
    model: str = "local/smollm2"
    instruction: str = ""
    """Empty: the seed's SIMPLE or ADVANCED critic instruction, by ``schema``."""
    schema_kind: str = Field(default="simple", alias="schema",
                             pattern="^(simple|advanced|custom)$")
    output_schema: dict[str, Any] | None = None
    """Only for ``schema: custom``."""
    evaluator: dict[str, Any] | None = None
    """For ``type: evaluator``: see :func:`studio.critics.adapters.build_critic`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_spec(self) -> CriticSpec:
        if self.type == "evaluator":
            return CriticSpec(type="evaluator", name=self.name, evaluator=self.evaluator or {})
        agent = AgentSpec(name=_identifier(self.name), model=self.model,
                          instruction=self.instruction, output_schema=self.output_schema)
        return CriticSpec(type="agent", name=self.name, agent=agent, schema=self.schema_kind)


class DataSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    """CSV or JSONL file, relative to the project file."""


class SplitSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    val_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    seed: int = 0


class DatasetSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    train: list[dict[str, Any]] | DataSource | None = None
    val: list[dict[str, Any]] | DataSource | None = None
    split: SplitSection = Field(default_factory=SplitSection)
    """Carve a validation set out of ``train`` when ``val`` is not given."""
    input_column: str | None = None
    """Column whose value is the agent's input text (default: all fields as ``key: value``)."""
    expected_column: str | None = None
    """Column holding the reference answer (stored as ``expected``)."""

    @model_validator(mode="after")
    def _needs_train(self) -> DatasetSection:
        if self.train is None:
            raise ValueError("dataset.train is required (inline rows or {path: ...})")
        return self


class ProjectFile(BaseModel):
    """A whole project."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    agent: AgentSection
    critic: CriticSection = Field(default_factory=CriticSection)
    reflection: ReflectionSpec = Field(default_factory=ReflectionSpec)
    components: list[str] = Field(default_factory=lambda: ["instruction"])
    dataset: DatasetSection
    run: EvolutionConfig = Field(default_factory=EvolutionConfig)

    def run_spec(self) -> RunSpec:
        agent = None if self.agent.ref else AgentSpec(
            name=_identifier(self.agent.name), model=self.agent.model,
            instruction=self.agent.instruction, output_schema=self.agent.output_schema,
            generate_content_config=self.agent.generate_content_config)
        return RunSpec(agent=agent, agent_ref=self.agent.ref, critic=self.critic.to_spec(),
                       reflection=self.reflection, components=self.components,
                       input_key=self._input_key(), project=self.name)

    def _input_key(self) -> str | None:
        return self.dataset.input_column


PROJECT_JSON_SCHEMA: dict[str, Any] = ProjectFile.model_json_schema(by_alias=True)


def _identifier(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name.strip()) or "agent"
    return cleaned if not cleaned[0].isdigit() else f"_{cleaned}"


# --------------------------------------------------------------------------- parsing


def parse_project(text: str, *, source: str = "<project>") -> ProjectFile:
    """Parse and validate YAML text.

    Raises:
        ProjectFileError: naming ``source``, the field path and what is wrong.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}, line {mark.line + 1}" if mark else source
        raise ProjectFileError(f"YAML does not parse: {getattr(exc, 'problem', exc)}",
                               where=where) from exc
    if not isinstance(data, dict):
        raise ProjectFileError("a project file must be a YAML mapping (name:, agent:, ...)",
                               where=source)
    try:
        return ProjectFile.model_validate(data)
    except ValidationError as exc:
        raise ProjectFileError(_explain(exc), where=source) from exc
    except StudioError as exc:
        raise ProjectFileError(str(exc), where=source) from exc


def _explain(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        path = ".".join(str(p) for p in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field" + _suggestion(error["loc"])
        problems.append(f"{path}: {message}")
    return "; ".join(problems)


def _suggestion(loc: tuple) -> str:
    model: Any = ProjectFile
    for part in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(str(part))
        if field is None:
            return ""
        annotation = field.annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation,
                                                                          BaseModel) else None
        if model is None:
            return ""
    names = list(getattr(model, "model_fields", {}))
    names += [f.alias for f in getattr(model, "model_fields", {}).values() if f.alias]
    close = difflib.get_close_matches(str(loc[-1]), names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known fields: {', '.join(names)})"


def load_project(path: str | Path) -> tuple[ProjectFile, Path]:
    """Read a project file; returns it with the folder its dataset paths are relative to."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProjectFileError("file not found", where=str(path)) from None
    except OSError as exc:
        raise ProjectFileError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    return parse_project(text, source=str(path)), path.parent


def dump_project(project: ProjectFile) -> str:
    data = project.model_dump(mode="json", by_alias=True, exclude_defaults=False)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


# --------------------------------------------------------------------------- datasets


def load_rows(source: list[dict[str, Any]] | DataSource, base_dir: Path, where: str
              ) -> list[dict[str, Any]]:
    if isinstance(source, list):
        return source
    path = (base_dir / source.path) if not Path(source.path).is_absolute() else Path(source.path)
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}", where=f"{where}.path")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return read_csv(path)
    if suffix in (".jsonl", ".ndjson"):
        return read_jsonl(path)
    raise DatasetError(f"unsupported dataset file type {suffix!r}: use .csv or .jsonl",
                       where=f"{where}.path")


def read_csv(path: Path | str, text: str | None = None) -> list[dict[str, Any]]:
    import io

    try:
        handle = io.StringIO(text) if text is not None else open(path, newline="",  # noqa: SIM115
                                                                  encoding="utf-8-sig")
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror}", where=str(path)) from exc
    with handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames:
            raise DatasetError("the CSV has no header row", where=str(path))
        rows = []
        for line, row in enumerate(reader, start=2):
            if None in row:
                raise DatasetError(f"line {line} has more cells than the header", where=str(path))
            rows.append({k: v for k, v in row.items() if k})
    return rows


def read_jsonl(path: Path | str, text: str | None = None) -> list[dict[str, Any]]:
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise DatasetError(f"cannot read {path}: {exc.strerror}", where=str(path)) from exc
    rows = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"line {line_number} is not JSON: {exc.msg}",
                               where=str(path)) from exc
        if not isinstance(row, dict):
            raise DatasetError(f"line {line_number} is not a JSON object", where=str(path))
        rows.append(row)
    return rows


def prepare_rows(rows: list[dict[str, Any]], dataset: DatasetSection, where: str
                 ) -> list[dict[str, Any]]:
    """Check the chosen columns exist and rename the expected column to ``expected``."""
    prepared = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DatasetError(f"row {i} is not a mapping", where=where)
        for column, role in ((dataset.input_column, "input_column"),
                             (dataset.expected_column, "expected_column")):
            if column and column not in row:
                raise DatasetError(
                    f"row {i} has no column {column!r} (dataset.{role}); columns: "
                    f"{sorted(row)}", where=where)
        row = dict(row)
        if dataset.expected_column and dataset.expected_column != EXPECTED_KEY:
            row[EXPECTED_KEY] = row.pop(dataset.expected_column)
        prepared.append(row)
    return validate_examples(prepared, name=where)


def resolve_datasets(project: ProjectFile, base_dir: Path, *, source: str | None = None
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """``(trainset, valset or None)`` with files read, columns checked, split applied.

    Raises:
        DatasetError: naming the project file (``source``), the field and the problem.
    """
    try:
        return _resolve_datasets(project, base_dir)
    except DatasetError as exc:
        if source is None:
            raise
        where = f"{source}: {exc.where}" if exc.where else source
        raise DatasetError(exc.message, where=where) from exc


def _resolve_datasets(project: ProjectFile, base_dir: Path
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    dataset = project.dataset
    train = prepare_rows(load_rows(dataset.train, base_dir, "dataset.train"), dataset,
                         "dataset.train")
    val = None
    if dataset.val is not None:
        val = prepare_rows(load_rows(dataset.val, base_dir, "dataset.val"), dataset,
                           "dataset.val")
    elif dataset.split.val_fraction > 0:
        train, val = split_rows(train, dataset.split)
    return train, val


def split_rows(rows: list[dict[str, Any]], split: SplitSection
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shuffled = list(rows)
    random.Random(split.seed).shuffle(shuffled)
    n_val = max(1, round(len(rows) * split.val_fraction))
    if n_val >= len(rows):
        raise DatasetError(f"val_fraction {split.val_fraction} leaves no training rows "
                           f"out of {len(rows)}", where="dataset.split")
    return shuffled[n_val:], shuffled[:n_val]


def inline_datasets(project: ProjectFile, base_dir: Path) -> ProjectFile:
    """A self-contained copy (file sources replaced by their rows), for storing in the DB."""
    dataset = project.dataset.model_copy(update={
        "train": load_rows(project.dataset.train, base_dir, "dataset.train"),
        "val": None if project.dataset.val is None else load_rows(project.dataset.val, base_dir,
                                                                  "dataset.val"),
    })
    return project.model_copy(update={"dataset": dataset})


def start_run(store: Any, project: ProjectFile, base_dir: Path = Path("."), *,
              name: str = "", project_id: int | None = None,
              config: EvolutionConfig | None = None, source: str | None = None):
    """Create a run for a project (it starts when handed to the run manager)."""

    train, val = resolve_datasets(project, base_dir, source=source)
    return create_run(store, spec=project.run_spec(), trainset=train, valset=val,
                      config=config or project.run, name=name or project.name,
                      project_id=project_id)
