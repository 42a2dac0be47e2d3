"""The project file's sections as pydantic models (:class:`ProjectFile` and its parts), and
:data:`PROJECT_JSON_SCHEMA`, the JSON Schema ``studio schema`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from studio.model.agent_models import LOCAL_MODEL, ModelOverrides, checked_models
from studio.model.base import ConfigModel
from studio.model.config import EvolutionConfig
from studio.model.limits import MAX_COMPONENT_CHARS, MAX_DEMOS, MAX_NAME_CHARS
from studio.model.records import (
    COMPONENTS,
    AgentSpec,
    CriticSpec,
    Demo,
    GenerationConfig,
    ReflectionSpec,
    RunSpec,
    validate_json_schema,
)
from studio.model.tools import TOOLS_JSON_SCHEMA, check_tool_refs
from studio.model.workflow import WorkflowSpec
from studio.projects.adk_folders import folder_section
from studio.projects.files.criteria import criteria_config
from studio.runtime.agents import resolve_agent_folder


class AgentSection(ConfigModel):
    """The agent to evolve: declared here, or loaded from Python with ``ref``."""

    name: str = Field(default="agent", max_length=64)
    """The agent's name (at most 64 characters; in ``agents:`` an identifier)."""
    model: str = LOCAL_MODEL
    """The agent's model; given with ``folder`` or ``ref``, every model-bearing agent of the
    loaded tree runs on it instead of the one its code names."""
    models: dict[str, str] = Field(default_factory=dict)
    """With ``folder`` or ``ref``: a model per agent of the tree, by name
    (``{searcher: openai/gpt-4o-mini}``); wins over ``model``."""
    instruction: str = Field(default="", max_length=MAX_COMPONENT_CHARS)
    """At most 50,000 characters (``studio.model.limits``), refused when the file is read."""
    output_schema: dict[str, Any] | None = None
    """A JSON Schema the agent's reply must follow (ADK's ``output_schema``)."""
    generate_content_config: GenerationConfig = Field(default_factory=GenerationConfig)
    """The model's sampling settings (ADK's ``generate_content_config``)."""
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

    def model_overrides(self) -> ModelOverrides:
        """For an agent loaded from code: the models given here in place of its code's."""
        if not self.ref:
            return ModelOverrides()
        every = self.model if "model" in self.model_fields_set else None
        return ModelOverrides(every=every, agents=self.models)

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

    @field_validator("models")
    @classmethod
    def _models_are_models(cls, value: dict[str, str]) -> dict[str, str]:
        return checked_models(value)

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
        if self.models and not self.ref:
            raise ValueError(f"agent {self.name!r}: 'models' chooses models for the agents of a "
                             "tree loaded with 'folder' or 'ref'; a declared agent's model is "
                             "its 'model'")
        if self.ref and self.few_shot:
            raise ValueError(f"agent {self.name!r}: 'few_shot' is for a declared agent; evolve "
                             "the few_shot component to give demos to an agent loaded with 'ref'")
        return self


class CriticSection(ConfigModel):
    type: str = Field(default="agent", pattern="^(agent|evaluator|adk_metrics)$")
    """``agent``: a critic agent scores each reply; ``evaluator``: a programmatic evaluator or
    judge (``evaluator``); ``adk_metrics``: ADK's evaluation criteria (``adk_metrics``)."""
    name: str = "critic"
    """The critic agent's name."""
    model: str = LOCAL_MODEL
    """The critic agent's model; for ``type: adk_metrics``, the judge model of the metrics
    judged by a model whose criterion names none (not given: the agent's own model)."""
    instruction: str = Field(default="", max_length=MAX_COMPONENT_CHARS)
    """Empty: the seed's SIMPLE or ADVANCED critic instruction, by ``schema``; at most 50,000
    characters."""
    schema_kind: str = Field(default="simple", alias="schema",
                             pattern="^(simple|advanced|custom)$")
    """The critic's reply: ``simple`` or ``advanced`` (the seed's two critic schemas), or
    ``custom`` with ``output_schema``."""
    output_schema: dict[str, Any] | None = None
    """Only for ``schema: custom``."""
    evaluator: dict[str, Any] | None = None
    """For ``type: evaluator``: see :func:`studio.critics.adapters.build_critic`."""
    adk_metrics: dict[str, Any] | str | None = None
    """For ``type: adk_metrics``: ADK's eval criteria config (``{criteria: {metric: threshold or
    criterion}}``, as in ``test_config.json``), or the path of such a file relative to the
    project file (see :mod:`studio.critics.adk_metrics`)."""
    score: str | None = Field(default=None, pattern="^(pass|graded|mean)$")
    """For ``type: adk_metrics``, the number GEPA optimises: ``pass`` (the default: 1 when every
    metric passes, as ``adk optimize``), ``graded`` (each metric's share of its threshold,
    averaged: 1 only when every metric passes) or ``mean`` (the mean of the metrics' scores).
    The verdict shown beside it is ADK's whatever the rule."""

    model_config = ConfigDict(populate_by_name=True)

    def to_spec(self, base_dir: Path | None = None) -> CriticSpec:
        """The run's critic; a criteria file is read from ``base_dir`` (the project file's
        folder, once its origin is checked), and left as its path without one."""
        if self.type == "adk_metrics":
            config = self.adk_metrics or {}
            if base_dir is not None:
                config = criteria_config(config, base_dir, "critic.adk_metrics")
            judge = self.model if "model" in self.model_fields_set else None
            return CriticSpec(type="evaluator", name=self.name, evaluator={
                "adk_metrics": config, "judge_model": judge, "score": self.score or "pass"})
        if self.type == "evaluator":
            return CriticSpec(type="evaluator", name=self.name, evaluator=self.evaluator or {})
        agent = AgentSpec(name=_identifier(self.name), model=self.model,
                          instruction=self.instruction, output_schema=self.output_schema)
        return CriticSpec(type="agent", name=self.name, agent=agent, schema=self.schema_kind)


class DataSource(ConfigModel):
    path: str
    """CSV, JSONL or ADK eval set (``.evalset.json``, ``.test.json``) file, relative to the
    project file."""


class SplitSection(ConfigModel):
    val_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    """The share of ``train`` moved to the validation set when ``val`` is not given (0: none)."""
    seed: int = 0
    """Seed of the shuffle that picks them: the same file splits the same way every time."""


class DatasetSection(ConfigModel):
    train: list[dict[str, Any]] | DataSource | None = None
    """The examples the reflection learns from: inline rows, or ``{path: ...}`` to a file.
    Required."""
    val: list[dict[str, Any]] | DataSource | None = None
    """The examples whose scores choose and keep candidates, in the same forms as ``train``;
    not given: carved out of ``train`` by ``split``, or ``train`` serves as both."""
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


class ProjectFile(ConfigModel):
    """A whole project."""

    name: str = Field(max_length=MAX_NAME_CHARS)
    """The project's name, as the studio's pages and the CLI show it (at most 200 characters)."""
    description: str = ""
    """What the project is for, in a few words, for the people who open it."""
    agent: AgentSection | None = None
    """One agent (or ``ref:`` to an agent or workflow in Python code)."""
    agents: list[AgentSection] = Field(default_factory=list)
    """Several agents, run as ``workflow`` says (default: one after the other)."""
    workflow: WorkflowSpec | None = None
    """How ``agents`` run: ``{type: sequential|loop|parallel, steps: [name or workflow, ...]}``."""
    primary: str | None = None
    """The agent whose output the critic scores (default: the workflow's last agent)."""
    critic: CriticSection = Field(default_factory=CriticSection)
    """How each reply is scored, with feedback the reflection reads."""
    reflection: ReflectionSpec = Field(default_factory=ReflectionSpec)
    """How new texts are proposed from the scored trials."""
    components: list[str] | dict[str, list[str]] = Field(default_factory=lambda: ["instruction"])
    """Names (``instruction``: every agent's), ``agent.component`` keys, or per agent
    ``{writer: [instruction]}``."""
    dataset: DatasetSection
    """The examples: ``train``, and optionally ``val`` and ``test``."""
    run: EvolutionConfig = Field(default_factory=EvolutionConfig)
    """The run's settings: its stop conditions, how it picks parents, whether a person gates
    proposals."""

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

    def run_spec(self, base_dir: Path | None = None) -> RunSpec:
        """The run's spec; files the project names (a criteria file) are read only with
        ``base_dir``, which callers give once the project's origin is checked."""
        single = self.agent
        agent = single.to_spec() if single is not None and not single.ref else None
        folder = resolve_agent_folder(single.ref, single.folder, base_dir or Path(".")) \
            if single else None
        return RunSpec(agent=agent, agent_ref=single.ref if single else None,
                       agent_folder=folder,
                       models=single.model_overrides() if single else ModelOverrides(),
                       agents=[a.to_spec() for a in self.agents], workflow=self.workflow,
                       primary=self.primary, critic=self.critic.to_spec(base_dir),
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
