"""The project editor's logic: a project as flat editor fields and back, with an error per field.

The Projects page keeps one value per field (``agent_model``, ``critic_schema``...) in its widgets;
:func:`from_fields` turns them into a :class:`ProjectFile` and says, per field, what is wrong, so
the page can show each error next to the field that has it. Datasets are parsed here too (CSV,
JSONL or a JSON array, uploaded or pasted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import yaml
from pydantic import ValidationError

from studio.critics.adapters import build_critic
from studio.engine.propose.reflection import check_reflection_instruction
from studio.evaluators import list_evaluators
from studio.model.errors import ConfigError, DatasetError, ModelConfigError, StudioError
from studio.model.records import demos_from_text, demos_to_text, validate_json_schema
from studio.projects.files import (
    DatasetSection,
    DataSource,
    ProjectFile,
    parse_json_array,
    prepare_rows,
    read_csv,
    read_jsonl,
    split_rows,
)
from studio.runtime.providers import check_model
from studio.views import builder

DATASET_FORMATS = ("auto", "csv", "jsonl", "json")
ALL_FIELDS = "(all fields, one 'key: value' per line)"
NO_EXPECTED = "(none)"


REFLECTION_STRATEGY_LABELS = {
    "llm": "llm: the reflection model reads the trials and rewrites the text",
    "rules": "rules: no model; failed checks become rules, training examples are shown",
    "rules+llm": "rules+llm: rules when they have something to add, else the model",
}
"""The project editor's choices for ``reflection.strategy`` (see ReflectionSpec)."""


def to_fields(project: ProjectFile) -> dict[str, Any]:
    """Flat editor values for ``project`` (a workflow's agents as :mod:`builder` fields; the
    single-agent fields then hold the first agent, ready if it becomes one agent again)."""
    agent, critic, dataset = project.agent or project.agents[0], project.critic, project.dataset
    config = agent.generate_content_config
    return builder.workflow_fields(project) | {
        "name": project.name, "description": project.description,
        "agent_name": agent.name, "agent_model": agent.model,
        "agent_instruction": agent.instruction,
        "agent_schema": json.dumps(agent.output_schema, indent=2) if agent.output_schema else "",
        "agent_temperature": config.temperature, "agent_top_p": config.top_p,
        "agent_max_tokens": config.max_output_tokens, "agent_ref": agent.ref,
        "agent_tools": "\n".join(agent.tools),
        "agent_few_shot": demos_to_text(agent.few_shot) if agent.few_shot else "",
        "critic_type": critic.type, "critic_name": critic.name, "critic_model": critic.model,
        "critic_schema": critic.schema_kind, "critic_instruction": critic.instruction,
        "critic_output_schema": json.dumps(critic.output_schema, indent=2)
        if critic.output_schema else "",
        "critic_evaluator": json.dumps(critic.evaluator, indent=2) if critic.evaluator else "",
        "reflection_model": project.reflection.model or "",
        "reflection_instruction": project.reflection.instruction or "",
        "reflection_strategy": project.reflection.strategy,
        "components": list(project.components),
        "train_rows": dataset.train if isinstance(dataset.train, list) else None,
        "train_path": dataset.train.path if isinstance(dataset.train, DataSource) else None,
        "val_rows": dataset.val if isinstance(dataset.val, list) else None,
        "val_path": dataset.val.path if isinstance(dataset.val, DataSource) else None,
        "test_rows": dataset.test if isinstance(dataset.test, list) else None,
        "input_column": dataset.input_column, "expected_column": dataset.expected_column,
        "val_fraction": dataset.split.val_fraction, "split_seed": dataset.split.seed,
        "images": list(dataset.images),
        "run": project.run.model_dump(mode="json"),
    }


# --------------------------------------------------------------------------- field checks


def model_problem(model: str) -> str | None:
    """None when ``model`` can be called from this machine, else what to do about it."""

    try:
        check_model((model or "").strip())
    except ModelConfigError as exc:
        return exc.message if hasattr(exc, "message") else str(exc)
    return None


def parse_schema(text: str, where: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(schema or None, error)``: empty text means no schema."""

    if not (text or "").strip():
        return None, None
    try:
        return validate_json_schema(text, where=where), None
    except ConfigError as exc:
        return None, exc.message


def parse_demos(text: str) -> tuple[list[dict[str, str]], str | None]:
    """``(demos, error)`` from the editor's JSON box; empty text means no demonstrations."""
    try:
        return [demo.model_dump() for demo in demos_from_text(text or "",
                                                               where="agent.few_shot")], None
    except ConfigError as exc:
        return [], str(exc)


def check_reflection(text: str) -> str | None:
    """Empty is fine (the default template); otherwise both placeholders must be there."""

    if not (text or "").strip():
        return None
    try:
        check_reflection_instruction(text)
    except ConfigError as exc:
        return exc.message
    return None


def parse_evaluator(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """An evaluator critic config from JSON or YAML text, checked by building it."""
    if not (text or "").strip():
        return None, "choose an evaluator (or write its config as JSON)"
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, f"not valid JSON or YAML: {exc}"
    if not isinstance(config, dict):
        return None, ("the evaluator config must be a mapping such as "
                      '{"evaluator": "exact_match"}')
    try:
        build_critic(config)
    except StudioError as exc:
        return None, str(exc)
    except (TypeError, ValueError) as exc:
        return None, str(exc)
    return config, None


def available_evaluators() -> list[dict[str, str]]:
    """Programmatic evaluators to offer, or [] when the evaluators package is unavailable."""
    try:
        return list(list_evaluators())
    except Exception:  # an evaluator registry problem must not break the editor
        return []


# --------------------------------------------------------------------------- datasets


def parse_rows(text: str, fmt: str = "auto", *, source: str = "pasted data"
               ) -> list[dict[str, Any]]:
    """Rows from CSV, JSONL or a JSON array.

    Raises:
        DatasetError: the text is empty or does not parse (naming the line).
    """
    if fmt not in DATASET_FORMATS:
        raise DatasetError(f"format {fmt!r} is not one of {DATASET_FORMATS}", where=source)
    text = (text or "").lstrip("\ufeff")
    if not text.strip():
        raise DatasetError("no data: paste rows or upload a file", where=source)
    if fmt == "auto":
        fmt = detect_format(text)
    if fmt == "json":
        rows = parse_json_array(text, source)
    elif fmt == "jsonl":
        rows = read_jsonl(source, text=text)
    else:
        rows = read_csv(source, text=text)
    if not rows:
        raise DatasetError("the data has no rows", where=source)
    return rows


def detect_format(text: str, filename: str = "") -> str:
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".json"):
        return "json"
    if name.endswith(".csv"):
        return "csv"
    stripped = text.lstrip()
    if stripped.startswith("["):
        return "json"
    if stripped.startswith("{"):
        return "jsonl"
    return "csv"


def columns(rows: list[dict[str, Any]] | None) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows or []:
        for key in row:
            seen.setdefault(str(key), None)
    return list(seen)


class RowsTarget(StrEnum):
    """Which of a project's datasets loaded rows go into (the value is the editor field)."""

    TRAIN = "train_rows"
    VAL = "val_rows"
    TEST = "test_rows"

    @property
    def label(self) -> str:
        return {"train_rows": "training rows", "val_rows": "validation rows",
                "test_rows": "test rows"}[self.value]


INPUT_NAMES = ("input", "question", "prompt", "query", "text", "topic", "message")
"""Column names taken for the agent's input when new rows come without the current one."""
EXPECTED_NAMES = ("expected", "answer", "reference", "output", "label", "target", "ground_truth")
"""Column names taken for the reference answer likewise."""


def suggest_columns(names: list[str], input_column: str | None,
                    expected_column: str | None) -> tuple[str, str]:
    """``(input, expected)`` columns for rows with these column ``names``: the current choice
    where the new rows still have it, else a column with a usual name (``question``,
    ``answer``...), else for the input all fields (when that was the choice) or the first
    other column, and no reference for the expected. ``""`` means all fields for the input and
    no reference for the expected (as the pickers)."""
    lowered = {name.lower(): name for name in names}

    def usual(candidates: tuple[str, ...], taken: str = "") -> str:
        return next((lowered[c] for c in candidates if c in lowered and lowered[c] != taken), "")

    expected = expected_column if expected_column in names else usual(EXPECTED_NAMES)
    if input_column in names and input_column != expected:
        return input_column or "", expected or ""
    chosen = usual(INPUT_NAMES, expected)
    if not chosen and input_column:  # a named column that is gone: the first other one
        chosen = next((n for n in names if n != expected), "")
    return chosen, expected or ""


@dataclass(frozen=True)
class RowsImport:
    """Rows read from an upload or a paste, waiting for the person to confirm them: where they
    go, their columns, and how many rows they would replace."""

    target: RowsTarget
    rows: list[dict[str, Any]]
    source: str
    replaces: int
    """How many rows the target holds now (0: nothing is replaced)."""

    @property
    def columns(self) -> list[str]:
        return columns(self.rows)

    def summary(self) -> str:
        names = ", ".join(repr(name) for name in self.columns[:20])
        more = f" and {len(self.columns) - 20} more" if len(self.columns) > 20 else ""
        return (f"{len(self.rows)} row(s) from {self.source} for the {self.target.label}, "
                f"with the columns {names}{more}.")


def read_import(text: str, fmt: str, source: str, target: RowsTarget,
                current: list[dict[str, Any]] | None) -> RowsImport:
    """Parse rows for ``target`` and say what they would replace (nothing is changed yet).

    Raises:
        DatasetError: the text is empty or does not parse (naming the line).
    """
    rows = parse_rows(text, fmt, source=source)
    return RowsImport(target, rows, source, len(current or []))


def unsaved(current: Mapping[str, object], stored: Mapping[str, object]) -> bool:
    """True when the editor's fields differ from the stored project's: compared field by field
    with an empty text and None alike (a text box holds "" where the project has nothing) and
    numbers by value, so a field merely drawn is not a change."""
    return any(_comparable(current.get(name)) != _comparable(value)
               for name, value in stored.items())


def _comparable(value: object) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def check_dataset(fields: dict[str, Any]) -> dict[str, str]:
    """Errors by field (``train_rows``, ``input_column``, ``val_fraction``...)."""
    errors: dict[str, str] = {}
    rows = fields.get("train_rows")
    if rows is None:
        path = fields.get("train_path")
        errors["train_rows"] = (
            f"the training data points to a file ({path}) that the studio cannot read from a "
            "stored project: upload the file or paste its rows here" if path else
            "no training rows: upload a CSV/JSONL file or paste rows")
        return errors
    section = _dataset_section(fields)
    try:
        train = prepare_rows(rows, section, "dataset.train")
    except DatasetError as exc:
        key = "input_column" if "input_column" in exc.message else (
            "expected_column" if "expected_column" in exc.message else "train_rows")
        errors[key] = exc.message
        return errors
    for split in ("val", "test"):
        if fields.get(f"{split}_rows") is not None:
            try:
                prepare_rows(fields[f"{split}_rows"], section, f"dataset.{split}")
            except DatasetError as exc:
                errors[f"{split}_rows"] = exc.message
    if fields.get("val_rows") is None and (fields.get("val_fraction") or 0) > 0:
        try:
            split_rows(train, section.split)
        except DatasetError as exc:
            errors["val_fraction"] = exc.message
    return errors


def _dataset_section(fields: dict[str, Any]) -> DatasetSection:
    return DatasetSection.model_validate({
        "train": fields.get("train_rows") or [{"input": ""}],
        "val": fields.get("val_rows"),
        "split": {"val_fraction": fields.get("val_fraction") or 0.0,
                  "seed": int(fields.get("split_seed") or 0)},
        "input_column": fields.get("input_column") or None,
        "expected_column": fields.get("expected_column") or None,
    })


def training_examples(project: ProjectFile) -> list[dict[str, Any]]:
    """The project's training rows, prepared as a run sees them (``expected`` renamed)."""
    if not isinstance(project.dataset.train, list):
        return []
    return prepare_rows(project.dataset.train, project.dataset, "dataset.train")


# --------------------------------------------------------------------------- assembling


def from_fields(fields: dict[str, Any]) -> tuple[ProjectFile | None, dict[str, str]]:
    """The project the editor describes, or None with an error per field."""
    errors: dict[str, str] = {}
    workflow = builder.is_workflow_draft(fields)
    if not str(fields.get("name") or "").strip():
        errors["name"] = "a project needs a name"
    if workflow:
        errors.update(builder.check_agents(fields, model_problem))
    for key in ("reflection_model",) + (() if workflow else ("agent_model",)) + (
            ("critic_model",) if fields.get("critic_type", "agent") == "agent" else ()):
        if fields.get("agent_ref") and key == "agent_model":
            continue
        if key == "reflection_model" and not str(fields.get(key) or "").strip():
            continue  # empty: the agent's own model writes the proposals
        problem = model_problem(str(fields.get(key) or ""))
        if problem:
            errors[key] = problem
    agent_schema, problem = (None, None) if workflow else parse_schema(
        fields.get("agent_schema", ""), "agent.output_schema")
    if problem:
        errors["agent_schema"] = problem
    demos, problem = ([], None) if workflow else parse_demos(fields.get("agent_few_shot", ""))
    if problem:
        errors["agent_few_shot"] = problem
    critic_schema = None
    if fields.get("critic_schema") == "custom":
        critic_schema, problem = parse_schema(fields.get("critic_output_schema", ""),
                                              "critic.output_schema")
        if problem or critic_schema is None:
            errors["critic_output_schema"] = problem or "a custom critic needs its output schema"
    evaluator = None
    if fields.get("critic_type") == "evaluator":
        evaluator, problem = parse_evaluator(fields.get("critic_evaluator", ""))
        if problem:
            errors["critic_evaluator"] = problem
    problem = check_reflection(fields.get("reflection_instruction", ""))
    if problem:
        errors["reflection_instruction"] = problem
    if not fields.get("components") and not workflow:
        errors["components"] = "choose at least one component to evolve"
    errors.update(check_dataset(fields))
    if errors:
        return None, errors
    data = _project_data(fields, agent_schema, critic_schema, evaluator)
    if demos:
        data["agent"]["few_shot"] = demos
    if workflow:
        data = {k: v for k, v in data.items() if k != "agent"} | builder.project_data(fields)
    try:
        return ProjectFile.model_validate(data), {}
    except ValidationError as exc:
        return None, _field_errors(exc, fields)
    except StudioError as exc:
        return None, {"agent_order" if workflow else "project": str(exc)}


def _project_data(fields: dict[str, Any], agent_schema: object, critic_schema: object,
                  evaluator: object) -> dict[str, Any]:
    config = {k: v for k, v in (("temperature", fields.get("agent_temperature")),
                                ("top_p", fields.get("agent_top_p")),
                                ("max_output_tokens", fields.get("agent_max_tokens")))
              if v is not None}
    agent: dict[str, Any] = {
        "name": fields.get("agent_name") or "agent", "model": fields.get("agent_model"),
        "instruction": fields.get("agent_instruction") or "", "output_schema": agent_schema,
        "generate_content_config": config}
    tools = tool_lines(fields.get("agent_tools"))
    if tools:
        agent["tools"] = tools
    if fields.get("agent_ref"):
        agent["ref"] = fields["agent_ref"]
    critic: dict[str, Any] = {"type": fields.get("critic_type") or "agent",
                              "name": fields.get("critic_name") or "critic"}
    if critic["type"] == "evaluator":
        critic["evaluator"] = evaluator
    else:
        critic.update({"model": fields.get("critic_model"),
                       "instruction": fields.get("critic_instruction") or "",
                       "schema": fields.get("critic_schema") or "simple",
                       "output_schema": critic_schema})
    dataset: dict[str, Any] = {
        "train": fields.get("train_rows"),
        "split": {"val_fraction": fields.get("val_fraction") or 0.0,
                  "seed": int(fields.get("split_seed") or 0)},
        "input_column": fields.get("input_column") or None,
        "expected_column": fields.get("expected_column") or None,
        "images": list(fields.get("images") or [])}
    for split in ("val", "test"):
        if fields.get(f"{split}_rows") is not None:
            dataset[split] = fields[f"{split}_rows"]
    return {
        "name": str(fields.get("name")).strip(), "description": fields.get("description") or "",
        "agent": agent, "critic": critic,
        "reflection": {"model": str(fields.get("reflection_model") or "").strip() or None,
                       "instruction": fields.get("reflection_instruction") or None,
                       "strategy": fields.get("reflection_strategy") or "llm"},
        "components": list(fields.get("components") or []), "dataset": dataset,
        "run": fields.get("run") or {},
    }


def tool_lines(text: object) -> list[str]:
    """The editor's tools box: one ``package.module:function`` per line, blank lines skipped."""
    return [line.strip() for line in str(text or "").splitlines() if line.strip()]


_LOC_TO_FIELD = {
    ("agent", "tools"): "agent_tools", ("agent", "few_shot"): "agent_few_shot",
    ("agent", "name"): "agent_name", ("agent", "model"): "agent_model",
    ("agent", "instruction"): "agent_instruction", ("agent", "output_schema"): "agent_schema",
    ("agent", "generate_content_config", "temperature"): "agent_temperature",
    ("agent", "generate_content_config", "top_p"): "agent_top_p",
    ("agent", "generate_content_config", "max_output_tokens"): "agent_max_tokens",
    ("critic", "name"): "critic_name", ("critic", "model"): "critic_model",
    ("critic", "evaluator"): "critic_evaluator", ("components",): "components",
    ("reflection", "instruction"): "reflection_instruction",
    ("reflection", "strategy"): "reflection_strategy", ("name",): "name",
}


def _field_errors(exc: ValidationError, fields: dict[str, Any]) -> dict[str, str]:
    errors: dict[str, str] = {}
    for error in exc.errors():
        loc = tuple(str(p) for p in error["loc"])
        field = builder.field_for(loc, fields) if builder.is_workflow_draft(fields) else None
        field = field or next((f for prefix, f in _LOC_TO_FIELD.items()
                               if loc[:len(prefix)] == prefix),
                              "run" if loc[:1] == ("run",) else "project")
        message = error["msg"].removeprefix("Value error, ")
        errors.setdefault(field, f"{'.'.join(loc)}: {message}")
    return errors
