"""``evolve()``: improve an ADK agent from Python code, and the result it returns.

The results read what :class:`~studio.store.seams.ApiStore` lists; what builds and runs an
engine (:func:`start_test_scoring`, :func:`score_test_set`, ``_new_run``, ``_run_objects``)
takes the whole :class:`~studio.store.Store`, which the engine's context carries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, get_args

from google.adk.agents import BaseAgent, LlmAgent
from pydantic import BaseModel, Field, ValidationError

from studio.critics.agent import CriticScorer, own_schema_critic
from studio.engine.hosting.build import agent_model_string, build_engine, create_run
from studio.engine.hosting.worker import RunHandle, get_manager
from studio.engine.loop.engine import TestScoring
from studio.engine.people.history import proposal_rows
from studio.engine.policies.limits import spent_metric_calls
from studio.engine.policies.pool import load_view
from studio.engine.run.agent_texts import check_seed_placeholders, graph_components, graph_primary
from studio.engine.run.context import Listener
from studio.engine.scoring.guard import HoldoutReport
from studio.engine.scoring.holdout import check_testable, load_holdout
from studio.model.agent_models import LOCAL_MODEL
from studio.model.config import EvolutionConfig, Selection
from studio.model.errors import ConfigError
from studio.model.jsontools import JsonDict
from studio.model.records import (
    EXPECTED_KEY,
    AgentSpec,
    CriticSpec,
    ReflectionSpec,
    ReflectionStrategy,
    RunSpec,
    Split,
    StopReason,
    expand_components,
    stored_id,
)
from studio.model.workflow import MAX_WORKFLOW_DEPTH, WorkflowSpec, split_component
from studio.runtime.graphs import graph_agents, graph_shape, is_graph_workflow
from studio.runtime.protocol import AgentExecutorProtocol
from studio.runtime.workflows import (
    describe_workflow,
    is_workflow,
    primary_for,
    refuse_graph_workflow,
)
from studio.store import Store, open_store
from studio.store.seams import ApiStore

if TYPE_CHECKING:
    from google.adk.workflow import Workflow

RESULT_SCHEMA_VERSION = 1
"""gepa-adk's ``CURRENT_SCHEMA_VERSION`` for results; the studio's result starts at the same."""


class CandidateSummary(BaseModel):
    id: int
    index: int
    parent_ids: list[int]
    components: dict[str, str]
    pooled: bool
    val_scores: dict[int, float | None] = Field(default_factory=dict)
    """Validation example index -> effective score."""
    mean_score: float | None = None
    on_front: bool = False


class EvolutionResult(BaseModel):
    """What a run produced. Scores are validation means in [0, 1] (None: nothing evaluable)."""

    run_id: str
    status: str
    original_score: float | None
    final_score: float | None
    evolved_components: dict[str, str]
    """The best candidate's components."""
    best_candidate_id: int | None
    iteration_history: list[dict[str, Any]]
    """One dict per proposal, oldest first
    (:meth:`studio.engine.people.history.ProposalRow.as_dict`):
    gepa-adk's keys (``iteration``, ``proposal_id``, ``parent_sum``, ``child_sum``, ``accepted``
    ...; the sums are the effective ones now) and the evidence ``now`` and ``at_decision``."""
    stop_reason: StopReason | None
    candidates: list[CandidateSummary]
    metric_calls: int
    """The loop's critic evaluations (the test set's are outside its budget)."""
    test: dict[str, Any] | None = None
    """With a test set: train/val/test means of the baseline and the best candidate, the
    paired gains and the overfitting guard's verdict
    (:class:`studio.engine.scoring.guard.HoldoutReport`
    as a dict)."""

    primary_agent: str | None = None
    """In a workflow run: the agent whose output was scored."""
    schema_version: int = RESULT_SCHEMA_VERSION
    """Version of this result's serialized shape (gepa-adk's ``schema_version``)."""

    def to_dict(self) -> JsonDict:
        return self.model_dump(mode="json")

    # gepa-adk's result names, derived (so porting code reads the same numbers)
    @property
    def original_components(self) -> dict[str, str]:
        return dict(self.candidates[0].components) if self.candidates else {}

    @property
    def total_iterations(self) -> int:
        return len({h["iteration"] for h in self.iteration_history})

    @property
    def improvement(self) -> float | None:
        if self.final_score is None or self.original_score is None:
            return None
        return self.final_score - self.original_score

    @property
    def improved(self) -> bool:
        """gepa-adk's: the final score is strictly above the original (False when either could
        not be evaluated)."""
        improvement = self.improvement
        return improvement is not None and improvement > 0


def load_result(store: ApiStore, run_id: str) -> EvolutionResult:
    """The result of any run in the store (finished or not), with overrides applied."""
    view = load_view(store, run_id)
    examples = {e.id: e for e in store.examples(run_id)}
    summaries = [
        CandidateSummary(
            id=stored_id(c), index=c.index, parent_ids=c.parent_ids, components=c.components,
            pooled=c.pooled, mean_score=view.means.get(stored_id(c)), on_front=c.id in view.front,
            val_scores={examples[e].index: view.matrix[stored_id(c)][e] for e in view.val_ids}
            if c.pooled else {})
        for c in view.candidates]
    seed = view.candidates[0] if view.candidates else None
    best = view.candidate(view.best_id) if view.best_id is not None else seed
    return EvolutionResult(
        run_id=run_id, status=view.run.status.value,
        original_score=view.means.get(stored_id(seed)) if seed else None,
        final_score=view.best_score,
        evolved_components=dict(best.components) if best else {},
        best_candidate_id=view.best_id, iteration_history=_history(store, run_id),
        stop_reason=view.run.stop_reason, candidates=summaries,
        metric_calls=spent_metric_calls(store, view.run), test=_test_report(store, run_id),
        primary_agent=view.run.spec.primary)


def _test_report(store: ApiStore, run_id: str) -> dict[str, object] | None:
    if not store.examples(run_id, Split.TEST):
        return None
    return load_holdout(store, run_id).to_dict()


def _history(store: ApiStore, run_id: str) -> list[dict[str, object]]:
    """One dict per proposal (:meth:`ProposalRow.as_dict`): gepa-adk's keys and the evidence at
    decision and now."""
    return [row.as_dict() for row in proposal_rows(store, run_id)]


def describe_agent(agent: BaseAgent) -> AgentSpec | None:
    """A declarative copy of a live LlmAgent, when it has one (for display and export)."""
    model = agent_model_string(agent)
    instruction = getattr(agent, "instruction", "")
    if model is None or not isinstance(instruction, str):
        return None
    try:
        return AgentSpec(name=agent.name, model=model, instruction=instruction)
    except ValueError:
        return None


def reflection_spec(model: str, strategy: str) -> ReflectionSpec:
    """The run's reflection settings; an unknown strategy is a ConfigError naming it."""
    try:
        return ReflectionSpec.model_validate({"model": model, "strategy": strategy})
    except ValidationError as exc:
        raise ConfigError(f"reflection_strategy {strategy!r} is not one of "
                          f"{list(get_args(ReflectionStrategy))}", where="reflection_strategy",
                          value=strategy) from exc


async def evolve(
    agent: BaseAgent,
    trainset: list[dict[str, Any]],
    critic: object = None,
    valset: list[dict[str, Any]] | None = None,
    components: list[str] | tuple[str, ...] | dict[str, list[str]] = ("instruction",),
    reflection_agent: BaseAgent | None = None,
    config: EvolutionConfig | None = None,
    *,
    scorer: object = None,
    executor: AgentExecutorProtocol | None = None,
    candidate_selector: str | None = None,
    primary: str | None = None,
    parallel_proposals: int | None = None,
    **run: Unpack[RunKeywords],
) -> EvolutionResult:
    """Evolve ``agent``'s components on ``trainset``, judged by ``critic``.

    The run executes in the shared background run manager and is recorded in the store as it
    happens, so it can be watched (and steered) in the studio. ``agent`` is never mutated.

    Args:
        agent: the ADK ``LlmAgent`` to improve, or an ADK 2 graph ``Workflow`` (its
            ``LlmAgent`` nodes evolve, the graph kept: see :func:`evolve_graph`).
        trainset: examples as dicts, e.g. ``{"topic": "autumn leaves"}``; ``expected`` is the
            optional reference.
        critic: an ADK critic agent (``output_schema=SimpleCriticOutput``), an evaluator from
            :mod:`studio.evaluators`, or any :class:`studio.critics.protocol.Critic`.
            Default, as in gepa-adk: the ``score`` field of the agent's own ``output_schema``
            (:class:`studio.critics.agent.SchemaBasedScorer`); an agent without one is refused.
        valset: validation examples (the trainset when None).
        testset: held-out examples the loop never sees; when the run completes the baseline
            and the best candidate are scored on them (``result.test``: the overfitting guard).
        components: any of ``instruction``, ``output_schema``, ``generate_content_config``,
            ``few_shot`` (demos chosen from the training set: :mod:`studio.engine.propose.demos`).
        reflection_agent: reflection agent for the instruction (default per component).
        reflection_strategy: ``llm``, ``rules`` (no model: failed checks become instruction
            rules, training examples few-shot pairs) or ``rules+llm``; see ReflectionSpec.
        config: :class:`EvolutionConfig`; ``review="review"`` waits for a person at each gate.
        run: :class:`RunKeywords` (``store``, ``name``, ``resume``, ``on_event``...).
        scorer, executor, candidate_selector: gepa-adk's names: ``scorer`` is a critic;
            ``executor`` (any :class:`studio.AgentExecutorProtocol`) runs an ADK critic agent;
            ``candidate_selector`` sets ``config.candidate_selection``.
        parallel_proposals: proposals in flight at once (sets ``config.parallel_proposals``;
            unset: chosen from ``max_concurrency`` and ``minibatch_size``).
    """
    check_agent(agent, components)
    if parallel_proposals is not None:  # validated (bounds) like the config's own field
        config = EvolutionConfig(**{**(config or EvolutionConfig()).model_dump(),
                                    "parallel_proposals": parallel_proposals})
    if scorer is not None:
        if critic is not None:
            raise ConfigError("give critic or scorer, not both", where="scorer")
        critic = scorer
    if executor is not None and isinstance(critic, BaseAgent):
        critic = CriticScorer(critic, executor=executor)
    if candidate_selector is not None:
        if candidate_selector not in {s.value for s in Selection}:
            raise ConfigError(f"candidate_selector {candidate_selector!r} is not one of "
                              f"{[s.value for s in Selection]}", where="candidate_selector")
        config = (config or EvolutionConfig()).model_copy(
            update={"candidate_selection": Selection(candidate_selector)})

    if is_graph_workflow(agent):
        return await evolve_graph(
            agent, trainset, critic=critic, valset=valset, components=components,
            primary=primary, reflection_agent=reflection_agent, config=config, **run)
    if is_workflow(agent):  # gepa-adk users pass workflows to evolve() too
        return await evolve_workflow(
            agent, trainset, critic=critic, valset=valset, components=list(components),
            reflection_agent=reflection_agent, config=config, **run)
    reflection = _reflection(run, agent_model_string(agent) or LOCAL_MODEL)  # checked first
    critic = critic if critic is not None else own_schema_critic(agent)  # as gepa-adk

    def spec() -> RunSpec:
        return RunSpec(agent=describe_agent(agent), critic=CriticSpec(name=_critic_name(critic)),
                       reflection=reflection,
                       components=list(components), input_key=run.get("input_key"),
                       resumable=False)

    return await _start(run, agent, critic, spec, trainset, valset,
                        config or EvolutionConfig(), reflection_agent,
                        f"evolve {getattr(agent, 'name', 'agent')}")


class RunKeywords(TypedDict, total=False):
    """The keywords every ``evolve*`` entry point takes, each said once here."""

    store: Store | None
    """The database (default: ``STUDIO_DB_URL`` or the default SQLite file)."""
    name: str
    """The run's name (default: ``evolve <agent or workflow name>``)."""
    input_key: str | None
    """The example field given to the agent as its input (default: every field)."""
    reflection_model: str | None
    """The reflection's model (default: the agent's, or the primary agent's)."""
    on_event: Listener | None
    """Called with each of the run's events as it happens."""
    resume: str | None
    """The id of an earlier run of the same agent to continue instead of starting anew."""
    testset: list[dict[str, Any]] | None
    """Held-out examples the loop never sees, scored when the run completes (``result.test``)."""
    reflection_strategy: str
    """``llm`` (default), ``rules`` or ``rules+llm``: see :class:`ReflectionSpec`."""


def _reflection(run: RunKeywords, model: str) -> ReflectionSpec:
    return reflection_spec(run.get("reflection_model") or model,
                           run.get("reflection_strategy", "llm"))


async def _start(run: RunKeywords, target: BaseAgent | Workflow, critic: object,
                 spec: Callable[[], RunSpec],
                 trainset: list[dict[str, Any]], valset: list[dict[str, Any]] | None,
                 config: EvolutionConfig | None, reflection_agent: BaseAgent | None,
                 default_name: str) -> EvolutionResult:
    """Store a new run of ``spec()`` (or take up ``run["resume"]``) and run ``target`` in it:
    the tail every ``evolve*`` entry point shares."""
    unknown = sorted(set(run) - set(RunKeywords.__annotations__))
    if unknown:  # as Python says it for a named parameter: a misspelt keyword is not ignored
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}; the run's keywords are "
                        f"{', '.join(RunKeywords.__annotations__)}")
    store, resume = run.get("store"), run.get("resume")
    if resume is None:
        store, run_id = _new_run(store, spec(), trainset, valset, config,
                                 run.get("name") or default_name, run.get("testset"))
    else:
        run_id = resume
    return await _run_objects(store, run_id, target, critic, reflection_agent,
                              run.get("on_event"), resumed=resume is not None)


def check_agent(agent: object, components: str | Iterable[str] | None) -> None:
    """What gepa-adk checks before a run starts: ``agent`` is an ADK agent, and a single agent
    has every component asked for (``output_schema`` needs one). Nothing is stored before.

    Raises:
        ConfigError: naming the argument and what to pass instead.
    """
    if is_graph_workflow(agent):
        graph_components(agent, components)  # what cannot evolve is refused, naming it
        return
    if not isinstance(agent, BaseAgent):
        shown = repr(agent) if len(repr(agent)) <= 60 else repr(agent)[:57] + "..."
        raise ConfigError(f"agent must be an ADK agent (an LlmAgent, or a SequentialAgent, "
                          f"LoopAgent or ParallelAgent), got {type(agent).__name__} {shown}",
                          field="agent", value=type(agent).__name__,
                          constraint="must be an ADK BaseAgent")
    wanted = [components] if isinstance(components, str) else list(components or [])
    if ("output_schema" in wanted and not is_workflow(agent)
            and getattr(agent, "output_schema", None) is None):
        raise ConfigError(f"cannot evolve 'output_schema': agent {agent.name!r} has no "
                          "output_schema; give it one, or leave 'output_schema' out of "
                          "components", field="components", value="output_schema",
                          constraint="agent must have output_schema to evolve it")


def evolve_sync(*args: Any, **kwargs: Any) -> EvolutionResult:
    """:func:`evolve` for code without an event loop."""
    return asyncio.run(evolve(*args, **kwargs))


def start_test_scoring(store: Store, run_id: str, *, agent: BaseAgent | None = None,
                       critic: object = None, listeners: list | None = None) -> RunHandle:
    """Score a settled run's baseline and best candidate on its test set in this process's run
    manager (``handle.wait()`` for the end); pairs already judged are reused. ``agent`` and
    ``critic``: the live objects of a run started from Python objects.

    Raises:
        RunStateError: the run is still going (it scores its test set when it completes), has
            no test set or no scored baseline, or another worker holds it.
    """
    check_testable(store, run_id)
    engine = build_engine(store, run_id, agent=agent, critic=critic, listeners=listeners)
    return get_manager(store).start(TestScoring(engine.ctx))


async def score_test_set(store: Store, run_id: str, **live_objects: Any) -> HoldoutReport:
    """:func:`start_test_scoring`, then the overfitting guard's report."""
    await start_test_scoring(store, run_id, **live_objects).wait_async()
    return load_holdout(store, run_id)


async def evolve_workflow(
    workflow: BaseAgent,
    trainset: list[dict[str, Any]],
    *,
    critic: object = None,
    primary: str | None = None,
    max_depth: int = MAX_WORKFLOW_DEPTH,
    config: EvolutionConfig | None = None,
    round_robin: bool = False,
    components: dict[str, list[str]] | list[str] | None = None,
    valset: list[dict[str, Any]] | None = None,
    reflection_agent: BaseAgent | None = None,
    **run: Unpack[RunKeywords],
) -> EvolutionResult:
    """Evolve the agents of an ADK workflow (``SequentialAgent``, ``LoopAgent``,
    ``ParallelAgent``, nested up to ``max_depth``) on ``trainset``, judged on ``primary``'s
    output (default: the workflow's last agent). Arguments mean what they mean in gepa-adk.

    The workflow runs as it is built (loops keep their iterations, parallel branches stay
    concurrent); each candidate is a copy of the whole tree, never the original.
    ``components`` maps agent names to component names (an empty list leaves an agent out; a
    plain list of names means those components of every agent). Without it, ``round_robin``
    decides as in gepa-adk: False evolves the first agent's instruction only, True every
    agent's. Each iteration mutates one (agent, component) pair, in turn. The result's
    ``evolved_components`` is flat, keyed ``agent.component``. With no ``critic``, as in
    gepa-adk, the primary agent's own ``output_schema`` scores it (refused when it has none).
    """
    refuse_graph_workflow(workflow, where="workflow")
    shape, agents = describe_workflow(workflow, max_depth=max_depth)
    keys = qualified_components(components, shape, round_robin=round_robin)
    chosen = primary_for(workflow, primary)
    if chosen is None:
        raise ConfigError(f"{getattr(workflow, 'name', workflow)!r} is a single agent, not a "
                          "workflow: evolve it with evolve()", where="workflow",
                          value=type(workflow).__name__)
    if run.get("resume") is None:
        check_seed_placeholders(workflow, {k for row in trainset if isinstance(row, dict)
                                           for k in row if k != EXPECTED_KEY})
    critic = critic if critic is not None else own_schema_critic(agents[chosen])  # gepa-adk

    def spec() -> RunSpec:
        return RunSpec(critic=CriticSpec(name=_critic_name(critic)),
                       reflection=_reflection(run, _agent_model(agents[chosen])),
                       components=keys, input_key=run.get("input_key"), resumable=False,
                       primary=chosen).model_copy(
            update={"workflow": shape, "agents": describe_agents(agents)})

    return await _start(run, workflow, critic, spec, trainset, valset, config,
                        reflection_agent, f"evolve {workflow.name}")


async def evolve_graph(
    workflow: Workflow,
    trainset: list[dict[str, Any]],
    *,
    critic: object = None,
    components: dict[str, list[str]] | list[str] | tuple[str, ...] | None = None,
    primary: str | None = None,
    config: EvolutionConfig | None = None,
    valset: list[dict[str, Any]] | None = None,
    reflection_agent: BaseAgent | None = None,
    **run: Unpack[RunKeywords],
) -> EvolutionResult:
    """Evolve the ``LlmAgent`` nodes of an ADK 2 graph ``Workflow`` (chains, fan-out, routes,
    ``FunctionNode``s, ``JoinNode``s, nested workflows), the graph kept: each candidate is a new
    ``Workflow`` with the same edges and routes, the evolved nodes' agents swapped
    (:func:`studio.runtime.graphs.rebuild_graph`); ``workflow`` is never changed.

    ``components`` maps node names to components (``{"pros": ["instruction"]}``); a plain list
    means those components of every ``LlmAgent`` node. ``primary`` names the node whose reply
    is scored (default: the graph's only terminal ``LlmAgent`` node, else the run's last reply).
    Reflection is told each node's neighbours (what it receives from, what it feeds). Anything
    the studio cannot evolve raises :class:`ConfigError` before a model is called.
    """
    keys = graph_components(workflow, components)
    chosen = graph_primary(workflow, primary)
    agents = graph_agents(workflow)
    lead = agents[chosen or split_component(keys[0])[0] or ""]  # keys are node-qualified
    critic = critic if critic is not None else own_schema_critic(lead)

    def spec() -> RunSpec:
        return RunSpec(critic=CriticSpec(name=_critic_name(critic)),
                       reflection=_reflection(run, _agent_model(lead)),
                       components=keys, input_key=run.get("input_key"), resumable=False,
                       primary=chosen, graph=graph_shape(workflow))

    return await _start(run, workflow, critic, spec, trainset, valset, config,
                        reflection_agent, f"evolve {workflow.name}")


async def evolve_group(
    agents: dict[str, BaseAgent] | list[BaseAgent],
    primary: str,
    trainset: list[dict[str, Any]],
    *,
    components: dict[str, list[str]] | list[str] | None = None,
    critic: object = None,
    share_session: bool = True,
    config: EvolutionConfig | None = None,
    **kwargs: Any,
) -> EvolutionResult:
    """Evolve ``LlmAgent``s together, scored on ``primary``'s output. ``agents`` is gepa-adk's
    name -> agent mapping (or a list); without ``components`` every agent's instruction evolves.

    ``share_session=True`` runs them one after the other in one session (a ``SequentialAgent``
    named ``group``: an agent's ``output_key`` is read by later ones as ``{key}``).
    ``share_session=False`` runs each on the example alone, as the branches of an ADK
    ``ParallelAgent``: no agent sees another's reply, and an instruction that reads a key only
    another agent writes is refused (the state guard). Other arguments as
    :func:`evolve_workflow`."""
    from google.adk.agents import ParallelAgent, SequentialAgent

    members = list(agents.values()) if isinstance(agents, dict) else list(agents)
    if isinstance(agents, dict):
        wrong = [key for key, agent in agents.items() if getattr(agent, "name", key) != key]
        if wrong:
            raise ConfigError(f"agents[{wrong[0]!r}] is named {agents[wrong[0]].name!r}: the "
                              "mapping's keys must be the agents' names", where="agents")
    names = [getattr(a, "name", "?") for a in members]
    if len(set(names)) != len(names):
        raise ConfigError(f"agent names must be unique in a group: {names}", where="agents")
    kind = SequentialAgent if share_session else ParallelAgent
    group = kind(name="group", sub_agents=[a.model_copy() for a in members])
    return await evolve_workflow(group, trainset, critic=critic, primary=primary, config=config,
                                 components=components, round_robin=True, **kwargs)


def qualified_components(components: dict[str, list[str]] | list[str] | None,
                         workflow: WorkflowSpec, *, round_robin: bool = True) -> list[str]:
    """``{"writer": ["instruction"]}`` or ``["instruction"]`` as ``["writer.instruction"]``;
    None: every agent's instruction (``round_robin``) or the first agent's (gepa-adk's
    default)."""
    names = workflow.agent_names()
    if components is None:
        return expand_components(["instruction"], names if round_robin else names[:1])
    if isinstance(components, dict):
        unknown = [a for a in components if a not in names]
        if unknown:
            raise ConfigError(f"components name agent {unknown[0]!r}, which is not in the "
                              f"workflow {names}", where="components", value=unknown[0])
        keys = [f"{agent}.{c}" for agent, cs in components.items() for c in cs]
        if not keys:
            raise ConfigError("components leaves every agent out: name at least one component",
                              where="components")
        return keys
    return expand_components(list(components), names)


def describe_agents(agents: Mapping[str, LlmAgent]) -> list[AgentSpec]:
    """Declarative copies of a workflow's agents where they have one (display and export)."""
    described = []
    for agent in agents.values():
        spec = describe_agent(agent)
        if spec is not None:
            described.append(spec.model_copy(update={"output_key": agent.output_key}))
    return described if len(described) == len(agents) else []


def _agent_model(agent: BaseAgent) -> str:
    return agent_model_string(agent) or LOCAL_MODEL


def _new_run(store: Store | None, spec: RunSpec, trainset: list[dict[str, Any]],
             valset: list[dict[str, Any]] | None, config: EvolutionConfig | None, name: str,
             testset: list[dict[str, Any]] | None) -> tuple[Store, str]:
    """The store (the default one when None) and the id of a new run of ``spec``: how every
    ``evolve*()`` starts unless it resumes."""
    store = store or open_store()
    run = create_run(store, spec=spec, trainset=trainset, valset=valset,
                     config=config or EvolutionConfig(), name=name, testset=testset)
    return store, run.id


async def _run_objects(store: Store | None, run_id: str, agent: BaseAgent | Workflow,
                       critic: object,
                       reflection_agent: BaseAgent | None, on_event: Listener | None,
                       *, resumed: bool = False) -> EvolutionResult:
    """Run ``run_id`` with these live objects to its end; ``resumed``: continue it as
    ``studio resume`` does (from the state a person left: an older Pause or Stop withdrawn)."""
    store = store or open_store()
    listeners = [on_event] if on_event else None
    if resumed:
        handle = get_manager(store).resume(run_id, agent=agent, critic=critic,
                                           reflection_agent=reflection_agent,
                                           listeners=listeners)
    else:
        handle = get_manager(store).start(build_engine(
            store, run_id, agent=agent, critic=critic, reflection_agent=reflection_agent,
            listeners=listeners))
    await handle.wait_async()
    return load_result(store, run_id)


def _critic_name(critic: object) -> str:
    return str(getattr(critic, "name", None) or type(critic).__name__ if critic else "critic")
