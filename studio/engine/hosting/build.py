"""Create runs and build engines, from declarative specs (studio, CLI, resume) or from live ADK
objects (:func:`studio.evolve`).

Creating a run asks for a :class:`~studio.store.seams.BuildStore`; :func:`build_engine` takes
the whole :class:`~studio.store.Store`: the run's context hands it to every part of the engine.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, TypedDict

from google.adk.agents import BaseAgent
from pydantic import BaseModel

from studio.critics.adapters import as_critic, build_critic, metric_calls_per_trial
from studio.critics.agent import (
    ADVANCED_CRITIC_INSTRUCTION,
    SIMPLE_CRITIC_INSTRUCTION,
    CriticOutput,
    CriticScorer,
    SimpleCriticOutput,
)
from studio.critics.protocol import Critic
from studio.engine.loop.engine import Engine
from studio.engine.people.labels import LabelBook
from studio.engine.propose.reflection import check_reflection_instruction, create_reflection_agent
from studio.engine.run.agent_texts import (
    apply_components,
    check_components,
    check_seed_placeholders,
    find_llm_agent,
    graph_components,
    graph_primary,
)
from studio.engine.run.context import Listener, RunContext
from studio.engine.run.examples import RunExamples
from studio.engine.scoring.processes import ProcessFanOut, check_processes
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError, DatasetError, ModelConfigError, RunStateError
from studio.model.jsontools import JsonDict
from studio.model.limits import MAX_COMPONENT_CHARS, too_long
from studio.model.records import (
    EXPECTED_KEY,
    AgentSpec,
    CriticSpec,
    Run,
    RunSpec,
    RunStatus,
    Split,
    StopReason,
    expand_components,
    parse_components,
    utcnow,
    validate_examples,
)
from studio.model.redaction import redact
from studio.model.workflow import WorkflowSpec, last_agent, split_component
from studio.runtime.agent_models import check_overrides, code_models, with_models
from studio.runtime.agents import build_agent, load_agent
from studio.runtime.execution import AgentExecutor
from studio.runtime.graphs import graph_shape, is_graph_workflow
from studio.runtime.model_checks import agent_tree_models, check_agent_models
from studio.runtime.providers import LOCAL_MODEL, check_model, studio_provider
from studio.runtime.providers.adk_names import is_adk_model_name
from studio.runtime.providers.calls import set_rate_limits
from studio.runtime.workflows import (
    build_workflow,
    describe_workflow,
    is_workflow,
    primary_for,
    state_keys,
)
from studio.store import Store
from studio.store.seams import BuildStore, HasUpdateRun


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def check_valset(trainset: list[dict], valset: list[dict], name: str = "valset") -> None:
    """Validation (and test) rows must have the same input fields as training rows."""
    train_keys = set(trainset[0]) - {EXPECTED_KEY}
    for i, row in enumerate(valset):
        keys = set(row) - {EXPECTED_KEY}
        if keys != train_keys:
            extra, missing = sorted(keys - train_keys), sorted(train_keys - keys)
            raise DatasetError(
                f"{name} rows must have the same fields as trainset rows {sorted(train_keys)}; "
                f"this row has extra {extra} and lacks {missing}", where=f"{name}[{i}]")


def complete_spec(spec: RunSpec, root: Any = None) -> RunSpec:
    """A spec whose ``agent_ref`` names a workflow, with the workflow's shape, its primary and
    components qualified by agent (``instruction`` -> every agent's); a spec loading its agent
    from code also gets the models its code names (``code_models``, read when ``root`` is not
    given: ``root`` is then the built tree, its models chosen); other specs unchanged.

    Raises:
        ConfigError: a component names an agent the workflow does not have, or the run's
            model choice names an agent the tree does not have.
    """
    if not spec.agent_ref or spec.agents:
        return spec
    if root is None and (spec.workflow is None or not spec.code_models):
        root = load_agent(spec.agent_ref, folder=spec.agent_folder)
        check_overrides(root, spec.models)  # before anything is stored: a model for no agent
        spec = spec.model_copy(update={"code_models": code_models(root)})
    if spec.workflow is not None:
        return spec
    if is_graph_workflow(root):  # a graph by reference: its nodes' components, its shape
        return spec.model_copy(update={"components": graph_components(root, spec.components),
                                       "primary": graph_primary(root, spec.primary),
                                       "graph": graph_shape(root)})
    if not is_workflow(root):
        return spec
    shape, agents = describe_workflow(root)
    components = expand_components(spec.components, shape.agent_names())
    for key in components:
        if split_component(key)[0] not in agents:
            raise ConfigError(f"component {key!r} names no agent of workflow {root.name!r} "
                              f"({sorted(agents)})", where="components", value=key)
    return spec.model_copy(update={"workflow": shape, "components": components,
                                   "primary": primary_for(root, spec.primary)})


def _completed_if_loadable(spec: RunSpec) -> RunSpec:
    """:func:`complete_spec` at creation, so the stored spec names a referenced workflow's
    agents; a reference that cannot load now is stored as given, and the run fails when it
    starts, with the reason (as a run whose module went missing later would)."""
    try:
        return complete_spec(spec)
    except ConfigError:
        return spec


def spec_model(spec: RunSpec) -> str:
    """The model a run's critic and reflection default to: the (primary) agent's; for an agent
    loaded from code, the one it runs on (its override, else its code's); the embedded model
    only when no model can be named (a model object the studio cannot name)."""
    if spec.agents:
        primary = spec.primary or last_agent(group_workflow(spec))
        return next((a.model for a in spec.agents if a.name == primary), spec.agents[-1].model)
    if spec.agent is not None:
        return spec.agent.model
    return _code_primary_model(spec) or LOCAL_MODEL


def _code_primary_model(spec: RunSpec) -> str | None:
    """For an agent loaded from code: the model its primary agent (else its root, the first
    model-bearing agent read) runs on."""
    name = spec.primary or next(iter(spec.code_models), None)
    if name is None:
        return spec.models.every
    return spec.models.for_agent(name) or spec.code_models.get(name)


def with_reflection_model(spec: RunSpec) -> RunSpec:
    """``spec`` with its reflection model decided: the one given, else the agent's own
    (:func:`spec_model`), stored so the run says what writes its proposals. An agent from code
    not loaded yet keeps None: the engine decides when it builds the agent."""
    if spec.reflection.model is not None or (spec.agent_ref and not spec.code_models
                                              and spec.models.every is None):
        return spec
    reflection = spec.reflection.model_copy(update={"model": spec_model(spec)})
    return spec.model_copy(update={"reflection": reflection})


def check_spec_models(spec: RunSpec, root: Any = None) -> None:
    """Fail before the run starts if a model is unknown or lacks its API key; the error names
    the agent whose model it is (``agents[1] (writer).model``). An agent loaded from Python
    (``agent_ref``, an agent folder) has every model of its tree checked
    (:func:`studio.runtime.model_checks.check_agent_models`): ``root`` when the caller holds
    it, else loaded here; one that cannot be loaded on this machine is not (its run fails when
    it starts, as :func:`_completed_if_loadable` says). What is checked is what will run: the
    tree with the run's model overrides applied (``--model``), never the models its code names
    in their place."""
    root = root if root is not None else _referenced_agent(spec)
    if root is not None:
        tree = root if spec.models.is_empty else with_models(root, spec.models)
        check_agent_models(agent_tree_models(tree),
                           where="agent.folder" if spec.agent_folder else "agent.ref")
    models = [("agent.model", spec.agent.model)] if spec.agent is not None else []
    if spec.models.every is not None:
        models.append(("agent.model (every agent of the tree)", spec.models.every))
    models += [(f"agent.models.{name}", model) for name, model in spec.models.agents.items()]
    models += [(f"agents[{i}] ({a.name}).model", a.model) for i, a in enumerate(spec.agents)]
    if spec.critic.type == "agent" and spec.critic.agent is not None:
        models.append(("critic.model", spec.critic.agent.model))
    if spec.reflection.model is not None:  # else the agent's, checked as the agent's
        models.append(("reflection.model", spec.reflection.model))
    for where, model in models:
        try:
            check_model(model)
        except ModelConfigError as exc:
            raise ModelConfigError(exc.message, where=where, value=model) from exc


def _referenced_agent(spec: RunSpec) -> BaseAgent | None:
    """The agent a spec loads from Python, or None (a declared agent, or not loadable here)."""
    if not spec.agent_ref or spec.agents:
        return None
    try:
        return load_agent(spec.agent_ref, folder=spec.agent_folder)
    except ConfigError:
        return None


def agent_model_string(agent: object) -> str | None:
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model if "/" in model or is_adk_model_name(model) else None  # ADK's Gemini
    return getattr(model, "model", None)


def create_run(
    store: BuildStore,
    *,
    spec: RunSpec,
    trainset: list[dict],
    valset: list[dict] | None = None,
    config: EvolutionConfig | None = None,
    name: str = "",
    project_id: int | None = None,
    testset: list[dict] | None = None,
) -> Run:
    """Validate everything, then store the run and its examples (status ``pending``).

    ``testset``: held-out examples the loop never sees; the baseline and the best candidate
    are scored on them when the run ends (:mod:`studio.engine.scoring.holdout`)."""
    config = config or EvolutionConfig()
    trainset = validate_examples(trainset, name="trainset")
    valset = None if valset is None else validate_examples(valset, name="valset")
    testset = None if testset is None else validate_examples(testset, name="testset")
    for split_name, rows in (("valset", valset), ("testset", testset)):
        if rows is not None:
            check_valset(trainset, rows, split_name)
    spec = with_reflection_model(_completed_if_loadable(spec))
    check_components(spec.components)
    check_fork_seed(spec)
    if spec.reflection.instruction is not None:
        check_reflection_instruction(spec.reflection.instruction)
    check_spec_models(spec)
    spec = spec.model_copy(update={"val_is_train": valset is None})
    run = store.create_run(Run(id=new_run_id(), project_id=project_id, name=name,
                               config=config, spec=spec))
    store.add_examples(run.id, Split.TRAIN, trainset)
    if valset is not None:
        store.add_examples(run.id, Split.VAL, valset)
    if testset is not None:
        store.add_examples(run.id, Split.TEST, testset)
    return run


def mark_not_started(store: HasUpdateRun, run_id: str, exc: BaseException, *,
                     worker_id: str | None = None) -> None:
    """Record why a created run never started: failed with the reason, never left ``pending``
    (nor claimed again and again by workers that cannot build it). ``worker_id``: the worker
    that had claimed the run, which lets it go."""
    reason = redact(f"{type(exc).__name__}: {exc}")[:2000]
    if worker_id is None:
        who, release = "the run could not start", {}
    else:
        who, release = f"worker {worker_id} could not start the run", {"worker": None}
    store.update_run(run_id, status=RunStatus.FAILED, stop_reason=StopReason.NOT_STARTED,
                     error=f"{who}: {reason}", finished_at=utcnow(), **release)


def check_fork_seed(spec: RunSpec) -> None:
    """A fork's seed must give exactly the components the run evolves, each a valid text.

    Raises:
        ConfigError: naming the component that is missing, extra or invalid.
    """
    origin = spec.forked_from
    if origin is None:
        return
    missing = [k for k in spec.components if k not in origin.components]
    extra = [k for k in origin.components if k not in spec.components]
    if missing or extra:
        raise ConfigError(f"the forked candidate's components {sorted(origin.components)} do "
                          f"not match the run's {spec.components} (missing {missing}, extra "
                          f"{extra})", where="forked_from.components")
    for key, text in origin.components.items():
        oversize = too_long(text, MAX_COMPONENT_CHARS, f"the forked {key}")
        if oversize:
            raise ConfigError(oversize, where=f"forked_from.components.{key}")
        try:
            parse_components({split_component(key)[1]: text})
        except ConfigError as exc:
            raise ConfigError(exc.message, where=f"forked_from.components.{key}") from exc


def check_seed_state(spec: RunSpec, rows: list[dict]) -> None:
    """The seed's state guard (:func:`check_seed_placeholders`) for a run built from its spec,
    against the rows it will learn from: a fork's seed is the forked candidate's components,
    which another run's dataset may have filled. A run of live Python objects is checked by
    its caller (:func:`studio.engine.hosting.api.evolve_workflow`).

    Raises:
        ConfigError: naming the agent and the ``{placeholder}`` nothing fills.
    """
    if not spec.resumable:
        return
    rows = validate_examples(rows, name="trainset")
    seed = spec_agent(spec)
    if spec.forked_from is not None:
        seed = apply_components(seed, spec.forked_from.components)
    declared = {a.name: f"agents[{i}] ({a.name})" for i, a in enumerate(spec.agents)}
    check_seed_placeholders(seed, {key for row in rows for key in row if key != EXPECTED_KEY},
                            lambda name: declared.get(name)
                            or (f"agent.ref ({spec.agent_ref}) > {name}" if spec.agent_ref
                                else name))


def critic_agent_spec(critic: CriticSpec, default_model: str) -> AgentSpec:
    """The critic agent, with the seed's instruction and schema filled in where left out."""
    schemas: dict[str, type[BaseModel]] = {"simple": SimpleCriticOutput, "advanced": CriticOutput}
    schema = schemas.get(critic.schema_kind)
    instruction = (ADVANCED_CRITIC_INSTRUCTION if critic.schema_kind == "advanced"
                   else SIMPLE_CRITIC_INSTRUCTION)
    base = critic.agent or AgentSpec(name="critic", model=default_model)
    update: dict[str, object] = {}
    if not base.instruction.strip():
        update["instruction"] = instruction
    if schema is not None:
        update["output_schema"] = schema.model_json_schema()
    return base.model_copy(update=update)


def critic_for_run(critic: object, executor: AgentExecutor, default_model: str) -> Critic:
    """The critic a run (or "try it") judges with, from an ADK agent, an evaluator, a Critic or
    the run's :class:`CriticSpec`; a spec's agent uses ``default_model`` when it names none."""
    if isinstance(critic, CriticSpec):
        if critic.type == "evaluator":
            return build_critic(_judged_by(critic, default_model))
        return CriticScorer(build_agent(critic_agent_spec(critic, default_model)), executor)
    if critic is None:
        return critic_for_run(CriticSpec(), executor, default_model)
    if isinstance(critic, BaseAgent):
        return CriticScorer(critic, executor)
    if isinstance(critic, Critic):
        return critic
    if hasattr(critic, "evaluate") or hasattr(critic, "arun"):

        return as_critic(critic)
    raise ConfigError(f"critic must be an ADK agent, an evaluator or a Critic, got "
                      f"{type(critic).__name__}", where="critic")


def _judged_by(critic: CriticSpec, default_model: str) -> JsonDict:
    """An evaluator critic's config; ADK's criteria judged by a model ask ``default_model``
    (the agent's own) unless the critic names a judge."""
    config = {**(critic.evaluator or {}), "name": critic.name}
    if "adk_metrics" in config and not config.get("judge_model"):
        config["judge_model"] = default_model
    return config


def reflection_model(spec: RunSpec, default_model: str) -> str:
    """The model that writes the run's proposals: the spec's, else the agent's own
    (``default_model``: :func:`default_model_for`)."""
    return spec.reflection.model or default_model


def reflection_agents(spec: RunSpec, default_model: str, override: BaseAgent | None = None
                      ) -> dict[str, BaseAgent]:
    """One reflection agent per evolved component but ``few_shot``, on
    :func:`reflection_model`; ``override`` replaces the instruction's."""
    agents: dict[str, BaseAgent] = {}
    for component in spec.components:
        kind = split_component(component)[1]
        if kind == "few_shot":
            continue  # proposed by the demo selector, never a model (studio.engine.propose.demos)
        if override is not None and kind == "instruction":
            agents[component] = override
            continue
        instruction = spec.reflection.instruction if kind == "instruction" else None
        agents[component] = create_reflection_agent(kind, reflection_model(spec, default_model),
                                                    instruction=instruction)
    return agents


def build_engine(
    store: Store,
    run_id: str,
    *,
    agent: Any = None,
    critic: object = None,
    reflection_agent: BaseAgent | None = None,
    listeners: list[Listener] | None = None,
) -> Engine:
    """An engine for a stored run; live objects replace what the spec would rebuild.

    ``agent`` is Any: an ADK agent or a graph ``Workflow`` (a BaseNode, not a BaseAgent), which
    the run's context holds in its agent slot all the same."""
    run = store.get_run(run_id)
    spec = run.spec
    if agent is None and not spec.resumable:
        raise RunStateError(f"run {run_id} was started from Python objects; resume it with "
                            "evolve(..., resume=run_id) and the same agent and critic")
    config = run.config
    check_processes(config, spec, from_objects=agent is not None or critic is not None)
    agent = agent or spec_agent(spec)
    spec = complete_spec(spec, agent)  # a workflow loaded by reference: qualify its components
    set_rate_limits(config.rate_limits)  # shared with the other runs of this process
    executor = AgentExecutor(max_concurrency=config.max_concurrency,
                             timeout_s=config.call_timeout_seconds,
                             max_retries=config.max_retries, app_name=f"run_{run_id}")
    flow = workflow_context(agent, spec.primary)
    default_model = default_model_for(agent, spec, flow.get("primary"))
    examples = RunExamples(store, run_id)  # ids now, each example's data when needed
    train = examples.ids[Split.TRAIN]
    val = train if spec.val_is_train else examples.ids[Split.VAL]
    test = examples.ids[Split.TEST]
    built_critic = critic_for_run(critic if critic is not None else spec.critic, executor,
                                  default_model)
    ctx = RunContext(
        store=store, run=run, config=config, agent=agent, critic=built_critic,
        calls_per_trial=metric_calls_per_trial(built_critic),
        reflection_agents=reflection_agents(spec, default_model, reflection_agent),
        components=spec.components, executor=executor, train_ids=train, val_ids=val,
        test_ids=test, examples=examples, input_key=spec.input_key,
        reflection_strategy=spec.reflection.strategy, listeners=list(listeners or []),
        labels=LabelBook.for_run(spec, examples),
        agent_model=default_model, reflection_model=reflection_model(spec, default_model),
        serialized_model=any(serial_model(m) for m in (default_model,
                                                        reflection_model(spec, default_model))),
        fan_out=(ProcessFanOut(spec, config, default_model, process_setup)
                 if config.processes > 1 else None),
        **flow)
    ctx.refresh_labels()  # an align run resumes on the corrections as they are now
    return Engine(ctx)


def serial_model(model: str) -> bool:
    """Whether ``model``'s provider is one model in-process serving its calls one at a time
    (:attr:`~studio.runtime.providers.StudioProvider.serial`)."""
    provider = studio_provider(model)
    return provider is not None and provider.serial


def default_model_for(agent: object, spec: RunSpec, primary: str | None) -> str:
    """The model a run's critic and reflection default to: the built agent's, or in a workflow
    its primary agent's (a workflow loaded by reference has no agent specs to read it from)."""
    return agent_model_string(agent) or _primary_model(agent, primary) or spec_model(spec)


def _primary_model(root: object, primary: str | None) -> str | None:
    return agent_model_string(find_llm_agent(root, primary)) if primary else None


class WorkflowContext(TypedDict, total=False):
    """What a run's context knows of its workflow (:func:`workflow_context`)."""

    primary: str | None
    workflow: WorkflowSpec
    state_keys: dict[str, set[str]]


def workflow_context(agent: object, primary: str | None) -> WorkflowContext:
    """For a workflow: whose reply is scored, its shape, and what state each agent can read
    (a graph ``Workflow``: whose reply is scored,
    :func:`studio.engine.hosting.api.graph_primary`)."""
    if is_graph_workflow(agent):
        return {"primary": primary}
    if not is_workflow(agent):
        return {}
    workflow, _ = describe_workflow(agent)
    return {"primary": primary_for(agent, primary), "workflow": workflow,
            "state_keys": state_keys(agent)}


def process_setup(spec: RunSpec, config: EvolutionConfig, default_model: str,
                  concurrency: int) -> tuple[BaseAgent, Critic, AgentExecutor]:
    """What a worker process of :class:`ProcessFanOut` builds once: the agent template, the
    critic and an executor of its own (``concurrency`` is its share of the run's limit)."""
    set_rate_limits(config.rate_limits)  # each process has its own limiters
    executor = AgentExecutor(max_concurrency=concurrency, timeout_s=config.call_timeout_seconds,
                             max_retries=config.max_retries, app_name=f"run_p{os.getpid()}")
    return spec_agent(spec), critic_for_run(spec.critic, executor, default_model), executor


def group_workflow(spec: RunSpec) -> WorkflowSpec:
    """A group's workflow (a validated spec with agents always has one: sequential by default)."""
    if spec.workflow is None:
        raise ConfigError("a group of agents needs a workflow: build the RunSpec through its "
                          "validation (RunSpec(...) or model_validate), not model_construct",
                          where="workflow")
    return spec.workflow


def spec_agent(spec: RunSpec) -> BaseAgent:
    """The agent a spec describes (built, or loaded by its ``module:attribute`` reference); a
    group's workflow built from its agents."""
    if spec.agents:
        return build_workflow(spec.agents, group_workflow(spec))
    if spec.agent is not None:
        return build_agent(spec.agent)
    if spec.agent_ref:  # a copy, on the run's models (the module's tree is shared)
        return with_models(load_agent(spec.agent_ref, folder=spec.agent_folder), spec.models)
    raise ConfigError("the run has no agent: give an agent spec or a module:attribute reference",
                      where="agent")
