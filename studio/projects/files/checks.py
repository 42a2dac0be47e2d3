"""The whole-project check every way of starting a run makes before its first model call
(``studio validate`` too), and :func:`create_project_run`, which stores a checked project's run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.critics.adapters import metric_calls_per_trial
from studio.engine.hosting.build import (
    check_spec_models,
    check_valset,
    complete_spec,
    create_run,
    critic_for_run,
    spec_agent,
    spec_model,
)
from studio.engine.propose.reflection import check_reflection_instruction
from studio.engine.run.agent_texts import check_components, check_seed_placeholders
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, DatasetError, ProjectFileError
from studio.model.records import (
    EXPECTED_KEY,
    RunSpec,
    validate_examples,
)
from studio.projects.files.datasets import resolve_datasets, resolve_testset
from studio.projects.files.sections import CriticSection, DatasetSection, ProjectFile
from studio.projects.files.trust import Origin, check_browser_config, check_trust
from studio.runtime.execution import AgentExecutor
from studio.store.seams import BuildStore


def create_project_run(store: BuildStore, project: ProjectFile, base_dir: Path = Path("."), *,
                       name: str = "", project_id: int | None = None,
                       config: EvolutionConfig | None = None, source: str | None = None,
                       origin: Origin = Origin.LOCAL):
    """Check the project as ``studio validate`` does, then create its run (``pending``: it
    starts when :func:`studio.engine.hosting.dispatch.dispatch` hands it to a worker or this
    process)."""
    config = config or project.run
    sets = check_project_datasets(project, base_dir, source=source or project.name,
                                  origin=origin, config=config)
    return create_run(store, spec=project.run_spec(base_dir), trainset=sets.train,
                      valset=sets.val, testset=sets.test, config=config,
                      name=name or project.name, project_id=project_id)


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
    if origin is Origin.BROWSER:
        check_browser_config(config, source)
    _check_columns(project.dataset, source)
    train, val = resolve_datasets(project, base_dir, source=source, origin=origin)
    test = resolve_testset(project, base_dir, source=source, origin=origin)
    check_critic_section(project.critic, source)
    try:
        spec = complete_spec(project.run_spec(base_dir))  # a workflow ref: components qualified
        _check_run_inputs(spec, train, val, test)
    except ConfigError as exc:
        raise _located(exc, source, "project") from exc
    _check_budget(config, train, val, source, metric_calls_per_trial(spec.critic))
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


def check_critic_section(critic: CriticSection, source: str) -> None:
    """A custom critic schema must describe a JSON object with a numeric ``score``."""
    where = f"{source}: critic.output_schema"
    if critic.type == "adk_metrics":
        if not critic.adk_metrics:
            raise ProjectFileError("a critic of type 'adk_metrics' needs an 'adk_metrics:' eval "
                                   "config ({criteria: {response_match_score: 0.8}}) or the path "
                                   "of a test_config.json", where=f"{source}: critic")
        return
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
    """What :func:`studio.engine.hosting.build.create_run` checks, before anything is stored."""
    train = validate_examples(train, name="trainset")
    for name, rows in (("valset", val), ("testset", test)):
        if rows is not None:
            check_valset(train, validate_examples(rows, name=name), name)
    check_components(spec.components)
    if spec.reflection.instruction is not None:
        check_reflection_instruction(spec.reflection.instruction)
    check_spec_models(spec)


def _check_budget(config: EvolutionConfig, train: list, val: list | None, source: str,
                  calls_per_trial: int = 1) -> None:
    """A budget that cannot pay for the baseline evaluation would "complete" having done nothing
    (each trial costs ``calls_per_trial`` metric calls: its critic's judge samples)."""
    baseline = len(val if val is not None else train)
    cost = baseline * calls_per_trial
    if config.max_metric_calls is not None and config.max_metric_calls < cost:
        each = (f", {calls_per_trial} metric calls each (the critic's judge samples)"
                if calls_per_trial > 1 else "")
        raise ConfigError(
            f"max_metric_calls {config.max_metric_calls} cannot pay for the baseline evaluation "
            f"of {baseline:,} validation rows{each}: raise it to at least {cost:,} (plus "
            f"{config.minibatch_size * 2 * calls_per_trial:,} per iteration) or use fewer rows",
            where=f"{source}: run.max_metric_calls", value=config.max_metric_calls)


def _check_seed_state(agent: object, project: ProjectFile, rows: list[dict[str, Any]],
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
