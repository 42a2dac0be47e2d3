"""Project files (YAML): the agent, critic, reflection agent, datasets and run settings.

Validation errors name the file, the field and what is wrong. :data:`PROJECT_JSON_SCHEMA` is the
JSON Schema of the format (``studio schema`` prints it). Dataset paths are relative to the
project file; CSV cells are strings, JSONL rows are JSON objects.

What a project may do depends on where it came from (:class:`Origin`): a file the CLI user runs
is theirs and trusted; a project that arrives through the browser (upload, YAML editor, stored
project) may not load Python code (``agent.ref``) unless the server opted in
(``STUDIO_ALLOW_CODE_REFS=1`` / ``studio ui --allow-code-refs``), and must inline its datasets.
Limits, checked before parsing: :data:`MAX_PROJECT_BYTES`, :data:`MAX_YAML_DEPTH`, no YAML aliases;
datasets: :data:`MAX_DATASET_BYTES`, :data:`MAX_CELL_CHARS`, :data:`MAX_JSON_DEPTH`, UTF-8 only.

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
import io
import json
import math
import os
import random
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from studio.engine.build import (
    check_spec_models,
    check_valset,
    complete_spec,
    create_run,
    critic_for_run,
    spec_agent,
    spec_model,
)
from studio.engine.components import check_components, check_seed_placeholders
from studio.engine.reflection import check_reflection_instruction
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, DatasetError, ProjectFileError, StudioError
from studio.model.jsontools import unique_keys
from studio.model.limits import MAX_DEMOS, MAX_NAME_CHARS
from studio.model.media import is_media_uri, media_from_path
from studio.model.records import (
    COMPONENTS,
    EXPECTED_KEY,
    AgentSpec,
    CriticSpec,
    Demo,
    GenerationConfig,
    ReflectionSpec,
    RunSpec,
    validate_examples,
    validate_json_schema,
)
from studio.model.redaction import redact_data
from studio.model.tools import TOOLS_JSON_SCHEMA, check_tool_refs
from studio.model.workflow import WorkflowSpec
from studio.projects.adk_folders import check_folder_trust, folder_section
from studio.runtime.adk_evalsets import eval_set_rows, is_eval_set_file
from studio.runtime.agents import resolve_agent_folder
from studio.runtime.execution import AgentExecutor


class Origin(StrEnum):
    """Where a project comes from, which decides what it may do."""

    LOCAL = "local"
    """A file the CLI user runs from their own disk: may load code and read dataset files."""
    BROWSER = "browser"
    """An upload, the YAML editor or a stored project run from the studio: untrusted."""


ALLOW_CODE_REFS_ENV = "STUDIO_ALLOW_CODE_REFS"
MAX_PROJECT_BYTES = 2_000_000
"""A project file larger than this (2 MB) is refused before it is parsed."""
MAX_YAML_DEPTH = 64
MAX_DATASET_BYTES = 100_000_000
"""A dataset file larger than this (100 MB) is refused before it is read."""
MAX_CELL_CHARS = 1_000_000
"""The longest CSV cell read (1 MB of text)."""
MAX_JSON_DEPTH = 64
"""How deeply a JSONL row may nest objects and arrays."""


def code_refs_allowed() -> bool:
    """Whether the server's operator opted in to projects from the browser loading Python code."""
    return os.environ.get(ALLOW_CODE_REFS_ENV, "").strip().lower() in ("1", "true", "yes")


class AgentSection(BaseModel):
    """The agent to evolve: declared here, or loaded from Python with ``ref``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(default="agent", max_length=64)
    """The agent's name (at most 64 characters; in ``agents:`` an identifier)."""
    model: str = "local/smollm2"
    instruction: str = ""
    output_schema: dict[str, Any] | None = None
    generate_content_config: GenerationConfig = Field(default_factory=GenerationConfig)
    output_key: str | None = None
    """In a workflow: the state key this agent's reply is written to (``{key}`` for later
    agents)."""
    tools: list[str] = Field(default_factory=list, json_schema_extra=TOOLS_JSON_SCHEMA)
    """Python function tools, ``package.module:function``, from installed packages only."""
    few_shot: list[Demo] = Field(default_factory=list, max_length=MAX_DEMOS)
    """Demonstrations ``{input, output}`` shown to the model as prior conversation turns (the
    ``few_shot`` component)."""
    ref: str | None = None
    """``package.module:attribute`` of an existing ADK agent or workflow agent (then the fields
    above are unused)."""
    folder: str | None = None
    """An ADK agent folder (``my_agent/agent.py`` defining ``root_agent``, optional ``.env``),
    relative to the project file: its agent is ``ref`` (default ``my_agent.agent:root_agent``),
    imported without ``PYTHONPATH`` and with the folder's ``.env`` loaded, as ``adk web`` does."""

    @model_validator(mode="before")
    @classmethod
    def _folder_names_its_agent(cls, data: Any) -> Any:
        return folder_section(data)

    def to_spec(self) -> AgentSpec:
        return AgentSpec(name=_identifier(self.name), model=self.model,
                         instruction=self.instruction, output_schema=self.output_schema,
                         generate_content_config=self.generate_content_config,
                         output_key=self.output_key, tools=self.tools,
                         few_shot=self.few_shot)

    @field_validator("tools")
    @classmethod
    def _tools_are_refs(cls, value: list[str], info: ValidationInfo) -> list[str]:
        return check_tool_refs(value, agent=str(info.data.get("name", "agent")))

    @field_validator("output_schema")
    @classmethod
    def _schema_is_valid(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        """Checked when the file is read (the UI's import too), not first by *Try it*."""
        return None if value is None else validate_json_schema(value)

    @model_validator(mode="after")
    def _tools_need_a_declared_agent(self) -> AgentSection:
        if self.ref and self.tools:
            raise ValueError(f"agent {self.name!r}: 'tools' are for a declared agent; an agent "
                             "loaded with 'ref' keeps the tools its Python code gives it")
        if self.ref and self.few_shot:
            raise ValueError(f"agent {self.name!r}: 'few_shot' is for a declared agent; evolve "
                             "the few_shot component to give demos to an agent loaded with 'ref'")
        return self


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
    """CSV, JSONL or ADK eval set (``.evalset.json``, ``.test.json``) file, relative to the
    project file."""


class SplitSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    val_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    seed: int = 0


class DatasetSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    train: list[dict[str, Any]] | DataSource | None = None
    val: list[dict[str, Any]] | DataSource | None = None
    test: list[dict[str, Any]] | DataSource | None = None
    """Held out: never seen by the loop; the baseline and the best candidate are scored on it
    when the run ends (the overfitting guard). Same rules and input fields as ``train``."""
    split: SplitSection = Field(default_factory=SplitSection)
    """Carve a validation set out of ``train`` when ``val`` is not given."""
    input_column: str | None = None
    """Column whose value is the agent's input text (default: all fields as ``key: value``)."""
    expected_column: str | None = None
    """Column holding the reference answer (stored as ``expected``)."""
    images: list[str] = Field(default_factory=list)
    """Columns holding image (or MP4/WEBM video) paths, relative to the dataset file's folder
    (inline rows: the project file's) and never outside it, or data URIs. Paths are read when
    the dataset loads and stored as data URIs. A value that is an image data URI is an image
    in any column."""

    @model_validator(mode="after")
    def _needs_train(self) -> DatasetSection:
        if self.train is None:
            raise ValueError("dataset.train is required (inline rows or {path: ...})")
        if self.val is not None and self.split.val_fraction > 0:
            raise ValueError("split.val_fraction carves a validation set out of train "
                             "only when dataset.val is not given, and val is given: remove one")
        return self


class ProjectFile(BaseModel):
    """A whole project."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(max_length=MAX_NAME_CHARS)
    description: str = ""
    agent: AgentSection | None = None
    """One agent (or ``ref:`` to an agent or workflow in Python code)."""
    agents: list[AgentSection] = Field(default_factory=list)
    """Several agents, run as ``workflow`` says (default: one after the other)."""
    workflow: WorkflowSpec | None = None
    """How ``agents`` run: ``{type: sequential|loop|parallel, steps: [name or workflow, ...]}``."""
    primary: str | None = None
    """The agent whose output the critic scores (default: the workflow's last agent)."""
    critic: CriticSection = Field(default_factory=CriticSection)
    reflection: ReflectionSpec = Field(default_factory=ReflectionSpec)
    components: list[str] | dict[str, list[str]] = Field(default_factory=lambda: ["instruction"])
    """Names (``instruction``: every agent's), ``agent.component`` keys, or per agent
    ``{writer: [instruction]}``."""
    dataset: DatasetSection
    run: EvolutionConfig = Field(default_factory=EvolutionConfig)

    @model_validator(mode="after")
    def _one_way_to_give_agents(self) -> ProjectFile:
        if (self.agent is None) == (not self.agents):
            raise ValueError("give either 'agent:' (one agent, or ref: to one in Python) or "
                             "'agents:' (several, with an optional 'workflow:')")
        for index, agent in enumerate(self.agents):
            if agent.ref:
                raise ValueError(f"agents[{index}] ({agent.name}): ref is only for 'agent:'; "
                                 "to evolve a workflow written in Python use agent: {ref: ...}")
            if not (agent.name.isascii() and agent.name.isidentifier()):
                raise ValueError(f"agents[{index}]: name {agent.name!r} must be an identifier "
                                 "(ASCII letters, digits, _), as ADK requires")
        if self.agent is not None and not self.agent.name.isascii():
            raise ValueError(f"agent.name {self.agent.name!r}: ADK agent names are ASCII "
                             "identifiers (letters A-Z, digits, _): e.g. 'writer'")
        if self.agents and self.workflow is None and (self.primary or "") and \
                self.primary not in [a.name for a in self.agents]:
            raise ValueError(f"primary {self.primary!r} is not one of the agents "
                             f"{[a.name for a in self.agents]}")
        if self.agent is not None and not self.agent.ref and self.primary:
            raise ValueError(f"primary {self.primary!r}: 'primary' picks the agent whose output "
                             "is scored among 'agents:' (or in a workflow given by agent.ref); "
                             "with one agent leave it out")
        if self.agent is not None and self.workflow is not None:
            raise ValueError("'workflow:' describes how 'agents:' run; with 'agent:' leave it out")
        if self.agents:
            self.run_spec()  # the workflow names its agents; components name an agent each
        return self

    def component_keys(self) -> list[str]:
        if isinstance(self.components, dict):
            return [f"{agent}.{name}" for agent, names in self.components.items()
                    for name in names]
        return list(self.components)

    def run_spec(self, base_dir: Path = Path(".")) -> RunSpec:
        single = self.agent
        agent = single.to_spec() if single is not None and not single.ref else None
        return RunSpec(agent=agent, agent_ref=single.ref if single else None,
                       agent_folder=resolve_agent_folder(single.ref, single.folder, base_dir)
                       if single else None,
                       agents=[a.to_spec() for a in self.agents], workflow=self.workflow,
                       primary=self.primary, critic=self.critic.to_spec(),
                       reflection=self.reflection, components=self.component_keys(),
                       input_key=self._input_key(), project=self.name)

    def _input_key(self) -> str | None:
        return self.dataset.input_column


def _project_json_schema() -> dict[str, Any]:
    """The model's schema, plus what its validators check that a schema can say: one of
    ``agent:`` / ``agents:``, and component keys (``instruction``, ``writer.instruction``, or
    ``{writer: [instruction]}``)."""
    schema = ProjectFile.model_json_schema(by_alias=True)
    agent_name, names = "[A-Za-z_][A-Za-z0-9_]*", "|".join(COMPONENTS)
    schema["properties"]["components"]["anyOf"] = [
        {"type": "array", "items": {"type": "string",
                                    "pattern": f"^({agent_name}\\.)?({names})$"}},
        {"type": "object", "propertyNames": {"pattern": f"^{agent_name}$"},
         "additionalProperties": {"type": "array", "items": {"enum": list(COMPONENTS)}}}]
    schema["oneOf"] = [{"required": ["agent"]}, {"required": ["agents"]}]
    return schema


PROJECT_JSON_SCHEMA: dict[str, Any] = _project_json_schema()


def _identifier(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name.strip()) or "agent"
    return cleaned if not cleaned[0].isdigit() else f"_{cleaned}"


# --------------------------------------------------------------------------- parsing


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
        data = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 (a SafeLoader subclass)
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
        raise ProjectFileError(_explain(exc, data), where=source) from exc
    except StudioError as exc:
        raise ProjectFileError(str(exc), where=source) from exc


class _BoundedLoader(yaml.SafeLoader):
    """Safe YAML without aliases (an alias bomb expands 1 KB into gigabytes), with a depth limit
    (deep nesting would exhaust the stack), and without duplicate keys (the last would silently
    win)."""

    depth = 0

    def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201 (PyYAML's signature)
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key_node.value!r} appears twice in the same mapping: "
                        "keep one", key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)

    def compose_node(self, parent, index):  # noqa: ANN001, ANN201 (PyYAML's signature)
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in project files: write the "
                "value out in full", self.peek_event().start_mark)
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                    self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def check_trust(project: ProjectFile, origin: Origin, source: str) -> None:
    """Refuse Python references in a project from the browser unless the server opted in.

    Raises:
        ProjectFileError: naming the reference and how to opt in.
    """
    check_folder_trust(project.agent.folder if project.agent else None,
                       origin is not Origin.BROWSER or code_refs_allowed(), source)
    check_code_ref(project.agent.ref if project.agent else None, origin, f"{source}: agent.ref")
    for agent in ([project.agent] if project.agent else []) + list(project.agents):
        where = f"{source}: " + ("agent" if agent is project.agent else f"agents.{agent.name}")
        check_tool_trust(agent.tools, agent.name, origin, where)


def check_spec_trust(spec: RunSpec, origin: Origin, where: str) -> None:
    """The same rule for a stored run's spec (resuming it, trying it on one example)."""
    check_code_ref(spec.agent_ref, origin, f"{where}: agent.ref")
    if spec.agent is not None:
        check_tool_trust(spec.agent.tools, spec.agent.name, origin, f"{where}: agent")
    for agent in spec.agents:
        check_tool_trust(agent.tools, agent.name, origin, f"{where}: agents.{agent.name}")


def check_tool_trust(tools: list[str], agent: str, origin: Origin, where: str) -> None:
    """Function tools run Python code on the server each time the model calls one: from the
    browser only when the server opted in, as for ``agent.ref``."""
    if not tools or origin is not Origin.BROWSER or code_refs_allowed():
        return
    raise ProjectFileError(
        f"agent {agent!r} tool {tools[0]!r} runs Python code on the server whenever the model "
        "calls it, which projects from the browser (upload, YAML editor, stored projects) may "
        "not do. Remove the agent's tools, run the file from the command line (`studio run "
        "project.yaml`), or start the studio with `studio ui --allow-code-refs` "
        f"({ALLOW_CODE_REFS_ENV}=1) on a machine whose users you trust",
        where=f"{where}.tools[0]", value=tools[0])


def check_code_ref(ref: str | None, origin: Origin, where: str) -> None:
    """A ``module:attribute`` reference may be loaded only from a trusted origin."""
    if ref and origin is Origin.BROWSER and not code_refs_allowed():
        raise ProjectFileError(
            f"agent.ref {ref!r} loads Python code on the server, which projects from the "
            "browser (upload, YAML editor, stored projects) may not do. Declare the agent "
            "(name, model, instruction) instead, run the file from the command line (`studio "
            f"run project.yaml`), or start the studio with `studio ui --allow-code-refs` "
            f"({ALLOW_CODE_REFS_ENV}=1) on a machine whose users you trust",
            where=where, value=ref)


def _explain(exc: ValidationError, data: Any = None) -> str:
    errors = [e for e in exc.errors() if not _other_branch_failed(e, exc.errors())]
    problems = []
    for error in errors[:5]:
        path = _readable_path(error["loc"], data)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field" + _suggestion(error["loc"])
        path, message = _refined(error, path, message)
        problems.append(f"{path}: {message}" if path else message)
    return "; ".join(problems)


_STEP_BRANCHES = ("str", "WorkflowSpec")
"""Pydantic's names for the two kinds of workflow step (an agent's name, a nested workflow)."""


def _other_branch_failed(error: dict, errors: list[dict]) -> bool:
    """A step that is a nested workflow fails the "agent name" branch too: report only why the
    workflow is wrong."""
    loc = error["loc"]
    return bool(loc) and loc[-1] == "str" and any(
        e["loc"][:len(loc)] == (*loc[:-1], "WorkflowSpec") for e in errors)


def _readable_path(loc: tuple, data: Any) -> str:
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


def _refined(error: Any, path: str, message: str) -> tuple[str, str]:
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
    model: Any = ProjectFile
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


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds: itself, or the item of a list or an optional."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)


def load_project(path: str | Path) -> tuple[ProjectFile, Path]:
    """Read a project file; returns it with the folder its dataset paths are relative to."""
    path = Path(path)
    text = decode_text(read_bounded(path, MAX_PROJECT_BYTES, ProjectFileError), str(path),
                       ProjectFileError)
    return parse_project(text, source=str(path)), path.parent


def read_bounded(path: Path, limit: int, error: type[ConfigError]) -> bytes:
    """The bytes of a regular file no larger than ``limit``."""
    try:
        if not path.is_file():
            raise error("file not found" if not path.exists() else "not a regular file",
                        where=str(path))
        size = path.stat().st_size
        if size > limit:
            raise error(f"the file is {size:,} bytes; the limit is {limit:,}", where=str(path))
        return path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", where=str(path)) from exc


def decode_text(data: bytes, source: str, error: type[ConfigError] = DatasetError) -> str:
    """UTF-8 text (a UTF-8 byte-order mark is dropped); any other encoding is refused with the
    line of the first bad byte, so nothing is silently garbled."""
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                      (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if data.startswith(bom):
            raise error(f"the file is {name}; save it as UTF-8", where=source)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise error(f"line {line} is not UTF-8 (byte 0x{data[exc.start]:02x}); the file looks "
                    "like Latin-1/Windows-1252 or UTF-16: save it as UTF-8",
                    where=f"{source}, line {line}") from exc


def dump_project(project: ProjectFile) -> str:
    """The project as YAML, for storing: secrets from the environment redacted in the values
    (so the text always parses again, unlike replacing inside the YAML text)."""
    data = redact_data(project.model_dump(mode="json", by_alias=True, exclude_defaults=False))
    return yaml.safe_dump(_without_unused_sections(data), sort_keys=False, allow_unicode=True)


_OPTIONAL_KEYS = {"": ("agent", "agents", "workflow", "primary"),
                  "agent": ("output_key", "tools"), "dataset": ("images",)}
"""Keys left out of a stored project while unused (empty or None), so a one-agent project reads
as it always did; every other field is written out with its value."""


def _without_unused_sections(data: dict[str, Any]) -> dict[str, Any]:
    def prune(section: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        return {k: v for k, v in section.items() if k not in keys or v not in (None, [], {})}

    data = prune(data, _OPTIONAL_KEYS[""])
    for name in ("agent", "dataset"):
        if isinstance(data.get(name), dict):
            data[name] = prune(data[name], _OPTIONAL_KEYS[name])
    if data.get("agents"):
        data["agents"] = [prune(a, _OPTIONAL_KEYS["agent"]) for a in data["agents"]]
    return data


# --------------------------------------------------------------------------- datasets


def load_rows(source: list[dict[str, Any]] | DataSource, base_dir: Path, where: str,
              origin: Origin = Origin.LOCAL, images: list[str] | None = None
              ) -> list[dict[str, Any]]:
    """The rows of a dataset source, image paths in the ``images`` columns read as data URIs
    (relative to the dataset file's folder, or ``base_dir`` for inline rows)."""
    if isinstance(source, list):
        return resolve_images(source, images or [], base_dir, where, origin)
    path = dataset_path(source, base_dir, where, origin)
    return resolve_images(read_rows(path, source, where), images or [], path.parent, where,
                          origin)


def read_rows(path: Path, source: DataSource, where: str) -> list[dict[str, Any]]:
    """The rows of a CSV, JSONL or ADK eval set dataset file (bounded, UTF-8 only)."""
    if is_eval_set_file(path):  # ADK's *.evalset.json / *.test.json: studio.runtime.adk_evalsets
        text = decode_text(read_bounded(path, MAX_DATASET_BYTES, DatasetError), str(path))
        return eval_set_rows(text, source=source.path, where=where)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise DatasetError(f"unsupported dataset file type {suffix!r} ({source.path}): use .csv "
                           "or .jsonl (or ADK's .evalset.json / .test.json)",
                           where=f"{where}.path", value=source.path)
    text = decode_text(read_bounded(path, MAX_DATASET_BYTES, DatasetError), str(path))
    rows = read_csv(path, text=text) if suffix == ".csv" else read_jsonl(path, text=text)
    if not rows:
        raise DatasetError(f"the file {source.path} has no rows", where=f"{where}.path",
                           value=source.path)
    return rows


def resolve_images(rows: list[Any], columns: list[str], folder: Path, where: str,
                   origin: Origin) -> list[Any]:
    """Rows with each image path in ``columns`` replaced by the file's data URI (empty cells
    and data URIs are kept as they are).

    Raises:
        DatasetError: naming the row and the column of a missing column, a path that leads
            outside ``folder``, a file that is missing, too large or not an image, or a path
            in a project from the browser (which cannot read server files).
    """
    if not columns:
        return rows
    resolved = []
    for i, row in enumerate(rows):
        updates = {}
        for column in columns if isinstance(row, dict) else ():
            cell = f"{where}[{i}].{column}"
            if column not in row:
                raise DatasetError(f"row {i} has no column {column!r} (dataset.images); "
                                   f"columns: {sorted(row)}", where=cell)
            value = row[column]
            if value is None or value == "" or is_media_uri(value):
                continue
            updates[column] = _image_from_cell(value, folder, cell, origin)
        resolved.append({**row, **updates} if updates else row)
    return resolved


def _image_from_cell(value: Any, folder: Path, cell: str, origin: Origin) -> str:
    if not isinstance(value, str):
        raise DatasetError(f"an image column holds a path or a data URI, got "
                           f"{type(value).__name__} {value!r}"[:200], where=cell)
    if origin is Origin.BROWSER:
        raise DatasetError(f"image {value[:100]!r}: a project from the browser cannot read "
                           "files on the server; embed the image as a data URI "
                           "(data:image/png;base64,...)", where=cell, value=value[:100])
    return media_from_path(value, folder, where=cell)


def dataset_path(source: DataSource, base_dir: Path, where: str, origin: Origin) -> Path:
    """The file of a dataset source: inside the project's folder, and only for local projects.

    Raises:
        DatasetError: naming the path and why it is refused.
    """
    if origin is Origin.BROWSER:
        raise DatasetError(
            f"dataset file {source.path!r}: a project from the browser cannot read files on the "
            "server; inline its rows (dataset.train: [{...}]) or upload the CSV/JSONL with the "
            "dataset editor", where=f"{where}.path", value=source.path)
    raw = Path(source.path)
    if raw.is_absolute():
        raise DatasetError(f"dataset file {source.path!r} is an absolute path; give a path "
                           "relative to the project file's folder", where=f"{where}.path",
                           value=source.path)
    folder = base_dir.resolve()
    path = (folder / raw).resolve()
    if not path.is_relative_to(folder):
        raise DatasetError(f"dataset file {source.path!r} is outside the project's folder "
                           f"{folder}; move it next to the project file", where=f"{where}.path",
                           value=source.path)
    if path.exists() and not path.is_file():
        raise DatasetError(f"dataset file {path} is not a regular file (a folder or a device)",
                           where=f"{where}.path", value=source.path)
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}", where=f"{where}.path",
                           value=source.path)
    return path


csv.field_size_limit(MAX_CELL_CHARS)


def read_csv(path: Path | str, text: str | None = None) -> list[dict[str, Any]]:
    """Rows of a CSV with a header: every row has every column (an empty cell is ``""``)."""
    if text is None:
        text = decode_text(read_bounded(Path(path), MAX_DATASET_BYTES, DatasetError), str(path))
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise DatasetError("the CSV has no header row", where=str(path))
        check_header(header, str(path))
        rows = []
        for cells in reader:
            if not cells:
                continue
            rows.append(_csv_row(header, cells, reader.line_num, str(path)))
    except csv.Error as exc:
        limit = (f" (the longest cell read is {MAX_CELL_CHARS:,} characters)"
                 if "field limit" in str(exc) else "")
        raise DatasetError(f"the CSV does not parse: {exc}{limit}",
                           where=f"{path}, line {reader.line_num}") from exc
    return rows


def check_header(header: list[str], source: str) -> None:
    """Column names must be present and distinct, or a column's data would be dropped."""
    seen: set[str] = set()
    for number, name in enumerate(header, start=1):
        if not name.strip():
            raise DatasetError(f"column {number} of the header has no name; name every column",
                               where=f"{source}, line 1")
        if name in seen:
            raise DatasetError(f"column name {name!r} appears twice in the header; rename one",
                               where=f"{source}, line 1", value=name)
        seen.add(name)


def _csv_row(header: list[str], cells: list[str], line: int, source: str) -> dict[str, str]:
    if len(cells) > len(header):
        raise DatasetError(f"line {line} has {len(cells)} cells but the header has "
                           f"{len(header)} columns", where=f"{source}, line {line}")
    if len(cells) < len(header):
        missing = ", ".join(header[len(cells):])
        raise DatasetError(f"line {line} has {len(cells)} cells but the header has "
                           f"{len(header)} columns (missing: {missing}); an empty cell is "
                           "written as nothing between two commas", where=f"{source}, line {line}")
    return dict(zip(header, cells, strict=True))


def read_jsonl(path: Path | str, text: str | None = None) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file: one object per line; NaN/Infinity and deep nesting refused."""
    if text is None:
        text = decode_text(read_bounded(Path(path), MAX_DATASET_BYTES, DatasetError), str(path))
    rows = []
    # "\n" only: str.splitlines also splits at U+2028, U+0085 ..., which JSON allows raw in strings
    for line_number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = f"{path}, line {line_number}"
        row = _json_line(line, line_number, where)
        if not isinstance(row, dict):
            raise DatasetError(f"line {line_number} is not a JSON object", where=where)
        rows.append(row)
    return rows


def parse_json_array(text: str, source: str) -> list[dict[str, Any]]:
    """Rows from a JSON array of objects, bounded like JSONL (nesting, NaN/Infinity)."""
    rows = _json_line(text, 1, source, label="the data")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DatasetError("a JSON dataset must be an array of objects", where=source)
    return rows


def _json_line(line: str, line_number: int, where: str, label: str = "") -> Any:
    label = label or f"line {line_number}"
    if _nesting(line) > MAX_JSON_DEPTH:
        raise DatasetError(f"{label} nests more than {MAX_JSON_DEPTH} levels deep",
                           where=where)
    try:
        return json.loads(line, parse_constant=_refuse_constant, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        where = where if label.startswith("line") else f"{where}, line {exc.lineno}"
        raise DatasetError(f"{label} is not JSON: {exc.msg}", where=where) from exc
    except ValueError as exc:
        raise DatasetError(f"{label}: {exc}", where=where) from exc


def _nesting(line: str) -> int:
    """The deepest bracket nesting of a JSON text (strings skipped), without parsing it."""
    if line.count("[") + line.count("{") <= MAX_JSON_DEPTH:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for char in line:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON can hold; write null or a number")


def check_finite(value: Any, where: str) -> None:
    """Refuse NaN and infinities anywhere in a row (they would export as invalid JSON)."""
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise DatasetError(f"{path} is {item}: write null or a number", where=path)
        if isinstance(item, dict):
            stack += [(v, f"{path}.{k}") for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(item)]


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
        check_finite(row, f"{where}[{i}]")
        row = dict(row)
        if dataset.expected_column and dataset.expected_column != EXPECTED_KEY:
            row[EXPECTED_KEY] = row.pop(dataset.expected_column)
        prepared.append(row)
    return validate_examples(prepared, name=where)


def resolve_datasets(project: ProjectFile, base_dir: Path, *, source: str | None = None,
                     origin: Origin = Origin.LOCAL
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """``(trainset, valset or None)`` with files read, columns checked, split applied.

    Raises:
        DatasetError: naming the project file (``source``), the field and the problem.
    """
    try:
        return _resolve_datasets(project, base_dir, origin)
    except DatasetError as exc:
        if source is None:
            raise
        where = f"{source}: {exc.where}" if exc.where else source
        raise DatasetError(exc.message, where=where, value=exc.value) from exc


def _resolve_datasets(project: ProjectFile, base_dir: Path, origin: Origin
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    dataset = project.dataset
    train = prepare_rows(load_rows(dataset.train, base_dir, "dataset.train", origin,
                                   dataset.images), dataset, "dataset.train")
    val = None
    if dataset.val is not None:
        val = prepare_rows(load_rows(dataset.val, base_dir, "dataset.val", origin,
                                     dataset.images), dataset, "dataset.val")
    elif dataset.split.val_fraction > 0:
        train, val = split_rows(train, dataset.split)
    return train, val


def resolve_testset(project: ProjectFile, base_dir: Path, *, source: str | None = None,
                    origin: Origin = Origin.LOCAL) -> list[dict[str, Any]] | None:
    """The project's held-out test rows (``dataset.test``), read and checked as ``train`` is;
    None without one.

    Raises:
        DatasetError: naming the project file (``source``), the field and the problem.
    """
    dataset = project.dataset
    if dataset.test is None:
        return None
    try:
        rows = load_rows(dataset.test, base_dir, "dataset.test", origin, dataset.images)
        return prepare_rows(rows, dataset, "dataset.test")
    except DatasetError as exc:
        if source is None:
            raise
        where = f"{source}: {exc.where}" if exc.where else source
        raise DatasetError(exc.message, where=where, value=exc.value) from exc


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
    """A self-contained copy (file sources replaced by their rows, image paths by data URIs),
    for storing in the DB."""
    images = project.dataset.images
    dataset = project.dataset.model_copy(update={
        "train": load_rows(project.dataset.train, base_dir, "dataset.train", images=images),
        "val": None if project.dataset.val is None else load_rows(
            project.dataset.val, base_dir, "dataset.val", images=images),
        "test": None if project.dataset.test is None else load_rows(
            project.dataset.test, base_dir, "dataset.test", images=images),
    })
    return project.model_copy(update={"dataset": dataset})


def start_run(store: Any, project: ProjectFile, base_dir: Path = Path("."), *,
              name: str = "", project_id: int | None = None,
              config: EvolutionConfig | None = None, source: str | None = None,
              origin: Origin = Origin.LOCAL):
    """Check the project as ``studio validate`` does, then create its run (it starts when handed
    to the run manager)."""
    config = config or project.run
    sets = check_project_datasets(project, base_dir, source=source or project.name,
                                  origin=origin, config=config)
    return create_run(store, spec=project.run_spec(base_dir), trainset=sets.train,
                      valset=sets.val, testset=sets.test, config=config,
                      name=name or project.name, project_id=project_id)


# --------------------------------------------------------------------------- whole-project check


@dataclass(frozen=True)
class ProjectDatasets:
    """A checked project's rows, as its run stores them."""

    train: list[dict[str, Any]]
    val: list[dict[str, Any]] | None
    test: list[dict[str, Any]] | None


def check_project(project: ProjectFile, base_dir: Path, *, source: str,
                  origin: Origin = Origin.LOCAL, config: EvolutionConfig | None = None
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """:func:`check_project_datasets`, returning ``(trainset, valset or None)``."""
    sets = check_project_datasets(project, base_dir, source=source, origin=origin,
                                  config=config)
    return sets.train, sets.val


def check_project_datasets(project: ProjectFile, base_dir: Path, *, source: str,
                           origin: Origin = Origin.LOCAL, config: EvolutionConfig | None = None
                           ) -> ProjectDatasets:
    """Every check a run makes before its first model call; ``studio validate`` and every way of
    starting a run use this one function.

    Raises:
        ConfigError (and subclasses): naming ``source``, the field and what to do.
    """
    config = config or project.run
    check_trust(project, origin, source)
    _check_columns(project.dataset, source)
    train, val = resolve_datasets(project, base_dir, source=source, origin=origin)
    test = resolve_testset(project, base_dir, source=source, origin=origin)
    _check_critic(project.critic, source)
    _check_budget(config, train, val, source)
    try:
        spec = complete_spec(project.run_spec(base_dir))  # a workflow ref: components qualified
        _check_run_inputs(spec, train, val, test)
    except ConfigError as exc:
        raise _located(exc, source, "project") from exc
    agent = _check_buildable(spec, config, source)
    _check_seed_state(agent, project, train + (val or []), source)
    return ProjectDatasets(train, val, test)


def _located(exc: ConfigError, source: str, field: str) -> ConfigError:
    """The same error, its place prefixed with the project file."""
    where = f"{source}: {getattr(exc, 'where', None) or field}"
    message = getattr(exc, "message", None) or str(exc)
    try:
        return type(exc)(message, where=where, value=getattr(exc, "value", None))
    except TypeError:  # an error class with its own constructor
        return ProjectFileError(message, where=where, value=getattr(exc, "value", None))


def _check_columns(dataset: DatasetSection, source: str) -> None:
    if dataset.input_column and dataset.input_column == dataset.expected_column:
        raise DatasetError(f"input_column and expected_column are both {dataset.input_column!r}: "
                           "the agent would be shown the answer; choose two columns",
                           where=f"{source}: dataset.expected_column",
                           value=dataset.expected_column)


def _check_critic(critic: CriticSection, source: str) -> None:
    """A custom critic schema must describe a JSON object with a numeric ``score``."""
    where = f"{source}: critic.output_schema"
    if critic.type != "agent":
        if not critic.evaluator:
            raise ProjectFileError("a critic of type 'evaluator' needs an 'evaluator:' config "
                                   "(e.g. {evaluator: exact_match})", where=f"{source}: critic")
        return
    schema = critic.output_schema
    if critic.schema_kind != "custom":
        return
    if schema is None:
        raise ProjectFileError("'schema: custom' needs an output_schema: a JSON object schema "
                               "with a numeric 'score' property", where=where)
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        raise ProjectFileError(f"the critic's output_schema must be {{type: object, properties: "
                               f"{{score: {{type: number}}, ...}}}}; got type "
                               f"{schema.get('type')!r}", where=where, value=schema)
    score = properties.get("score")
    if not isinstance(score, dict) or score.get("type") not in ("number", "integer"):
        raise ProjectFileError("the critic's output_schema needs a 'score' property of type "
                               "number (0.0 to 1.0)", where=f"{where}.properties.score",
                               value=score)


def _check_run_inputs(spec: RunSpec, train: list[dict], val: list[dict] | None,
                      test: list[dict] | None = None) -> None:
    """What :func:`studio.engine.build.create_run` checks, before anything is stored."""
    train = validate_examples(train, name="trainset")
    for name, rows in (("valset", val), ("testset", test)):
        if rows is not None:
            check_valset(train, validate_examples(rows, name=name), name)
    check_components(spec.components)
    if spec.reflection.instruction is not None:
        check_reflection_instruction(spec.reflection.instruction)
    check_spec_models(spec)


def _check_budget(config: EvolutionConfig, train: list, val: list | None, source: str) -> None:
    """A budget that cannot pay for the baseline evaluation would "complete" having done nothing."""
    baseline = len(val if val is not None else train)
    if config.max_metric_calls is not None and config.max_metric_calls < baseline:
        raise ConfigError(
            f"max_metric_calls {config.max_metric_calls} cannot pay for the baseline evaluation "
            f"of {baseline:,} validation rows: raise it to at least {baseline:,} (plus "
            f"{config.minibatch_size * 2} per iteration) or use fewer rows",
            where=f"{source}: run.max_metric_calls", value=config.max_metric_calls)


def _check_seed_state(agent: Any, project: ProjectFile, rows: list[dict[str, Any]],
                      source: str) -> None:
    """The seed's state guard (:func:`check_seed_placeholders`), naming a declared agent as
    ``agents[1] (writer)`` and one of a referenced workflow as ``agent.ref (ref) > writer``."""
    example_keys = {key for row in rows for key in row if key != EXPECTED_KEY}
    declared = {a.name: f"agents[{i}] ({a.name})" for i, a in enumerate(project.agents)}
    ref = project.agent.ref if project.agent is not None else None
    try:
        check_seed_placeholders(agent, example_keys,
                                lambda name: f"agent.ref ({ref}) > {name}" if ref
                                else declared.get(name, name))
    except ConfigError as exc:
        raise _located(exc, source, "agent") from exc


def _check_buildable(spec: RunSpec, config: EvolutionConfig, source: str) -> Any:
    """Build the agent and the critic as the engine will (no model is called); returns the
    agent."""
    built: dict[str, Any] = {}
    for field, build in (("agents" if spec.agents else "agent", lambda: spec_agent(spec)),
                         ("critic", lambda: critic_for_run(
                             spec.critic, AgentExecutor(max_concurrency=1, timeout_s=1.0),
                             spec_model(spec)))):
        try:
            built[field] = build()
        except ConfigError as exc:
            raise _located(exc, source, field) from exc
        except Exception as exc:  # ADK/pydantic refusing a spec: name the section, not a trace
            raise ProjectFileError(f"the {field} cannot be built: {type(exc).__name__}: "
                                   f"{str(exc)[:300]}", where=f"{source}: {field}") from exc
    return built["agents" if spec.agents else "agent"]
