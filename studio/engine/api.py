"""``evolve()``: improve an ADK agent from Python code, and the result it returns."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from studio.engine.build import agent_model_string, build_engine, create_run
from studio.engine.context import Listener
from studio.engine.merge import stored_evidence
from studio.engine.pool import Evidence, load_view, minibatch_evidence
from studio.engine.worker import get_manager
from studio.model.config import EvolutionConfig
from studio.model.records import (
    AgentSpec,
    CriticSpec,
    DecisionAction,
    EventKind,
    Proposal,
    ReflectionSpec,
    RunSpec,
    TrialPhase,
)
from studio.store import Store, open_store


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
    stop_reason: str | None
    candidates: list[CandidateSummary]
    metric_calls: int

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def load_result(store: Store, run_id: str) -> EvolutionResult:
    """The result of any run in the store (finished or not), with overrides applied."""
    view = load_view(store, run_id)
    examples = {e.id: e for e in store.examples(run_id)}
    summaries = [
        CandidateSummary(
            id=c.id, index=c.index, parent_ids=c.parent_ids, components=c.components,
            pooled=c.pooled, mean_score=view.means.get(c.id), on_front=c.id in view.front,
            val_scores={examples[e].index: view.matrix[c.id][e] for e in view.val_ids}
            if c.pooled else {})
        for c in view.candidates]
    seed = view.candidates[0] if view.candidates else None
    best = view.candidate(view.best_id) if view.best_id is not None else seed
    return EvolutionResult(
        run_id=run_id, status=view.run.status.value,
        original_score=view.means.get(seed.id) if seed else None,
        final_score=view.best_score,
        evolved_components=dict(best.components) if best else {},
        best_candidate_id=view.best_id, iteration_history=_history(store, run_id),
        stop_reason=view.run.stop_reason, candidates=summaries,
        metric_calls=store.count_trials(run_id))


def _history(store: Store, run_id: str) -> list[dict[str, Any]]:
    decisions: dict[int, Any] = {}
    for decision in store.decisions(run_id):
        decisions[decision.proposal_id] = decision
    evaluated = {e.payload["proposal_id"]: e.payload
                 for e in store.events(run_id, kind=EventKind.PROPOSAL_EVALUATED)}
    history = []
    for proposal in store.proposals(run_id):
        decision = decisions.get(proposal.id)
        evidence = evaluated.get(proposal.id, {})
        live = live_evidence(store, proposal)
        if live is not None:
            evidence = {"parent_sum": live.parent_sum, "child_sum": live.child_sum}
        history.append({
            "iteration": proposal.iteration, "proposal_id": proposal.id,
            "kind": proposal.kind.value, "parent_id": proposal.parent_id,
            "parent_ids": list(proposal.merge.parents) if proposal.merge else [proposal.parent_id],
            "child_id": proposal.child_id, "component": proposal.component,
            "sources": dict(proposal.merge.sources) if proposal.merge else None,
            "status": proposal.status.value,
            "invalid_reason": proposal.invalid_reason,
            "parent_sum": evidence.get("parent_sum"), "child_sum": evidence.get("child_sum"),
            "decision": decision.action.value if decision else None,
            "automatic": decision.automatic if decision else None,
            "accepted": decision is not None and decision.action is DecisionAction.ACCEPT,
        })
    return history


def live_evidence(store: Store, proposal: Proposal) -> Evidence | None:
    """Parent vs child on the proposal's minibatch from the effective scores now (corrections
    made after scoring included); None when the child was never scored on it. For a merge:
    the better parent vs the child on its subsample."""
    if proposal.is_merge:
        return stored_evidence(store, proposal) if proposal.child_id is not None else None
    trials = store.trials(proposal.run_id, proposal_id=proposal.id, phase=TrialPhase.CHILD)
    examples = [trial.example_id for trial in trials]
    if not examples or proposal.child_id is None:
        return None
    parent = store.first_trials(proposal.parent_id, examples)
    child = store.first_trials(proposal.child_id, examples)
    return minibatch_evidence(list(parent.values()), list(child.values()))


def describe_agent(agent: Any) -> AgentSpec | None:
    """A declarative copy of a live LlmAgent, when it has one (for display and export)."""
    model = agent_model_string(agent)
    instruction = getattr(agent, "instruction", "")
    if model is None or not isinstance(instruction, str):
        return None
    try:
        return AgentSpec(name=agent.name, model=model, instruction=instruction)
    except ValueError:
        return None


async def evolve(
    agent: Any,
    trainset: list[dict[str, Any]],
    critic: Any = None,
    valset: list[dict[str, Any]] | None = None,
    components: list[str] | tuple[str, ...] = ("instruction",),
    reflection_agent: Any = None,
    config: EvolutionConfig | None = None,
    *,
    store: Store | None = None,
    name: str = "",
    input_key: str | None = None,
    reflection_model: str | None = None,
    on_event: Listener | None = None,
    resume: str | None = None,
) -> EvolutionResult:
    """Evolve ``agent``'s components on ``trainset``, judged by ``critic``.

    The run executes in the shared background run manager and is recorded in the store as it
    happens, so it can be watched (and steered) in the studio. ``agent`` is never mutated.

    Args:
        agent: the ADK ``LlmAgent`` to improve.
        trainset: examples as dicts, e.g. ``{"topic": "autumn leaves"}``; ``expected`` is the
            optional reference.
        critic: an ADK critic agent (``output_schema=SimpleCriticOutput``), an evaluator from
            :mod:`studio.evaluators`, or any :class:`studio.critics.protocol.Critic`.
            Default: a simple critic on the agent's model.
        valset: validation examples (the trainset when None).
        components: any of ``instruction``, ``output_schema``, ``generate_content_config``.
        reflection_agent: reflection agent for the instruction (default per component).
        config: :class:`EvolutionConfig`; ``review="review"`` waits for a person at each gate.
        store: the database (default: ``STUDIO_DB_URL`` or the default SQLite file).
        resume: id of an earlier run of the same agent to continue instead of starting anew.
    """

    store = store or open_store()
    config = config or EvolutionConfig()
    model = agent_model_string(agent) or "local/smollm2"
    if resume is None:
        spec = RunSpec(agent=describe_agent(agent), critic=CriticSpec(name=_critic_name(critic)),
                       reflection=ReflectionSpec(model=reflection_model or model),
                       components=list(components), input_key=input_key, resumable=False)
        run_id = create_run(store, spec=spec, trainset=trainset, valset=valset, config=config,
                            name=name or f"evolve {getattr(agent, 'name', 'agent')}").id
    else:
        run_id = resume
    engine = build_engine(store, run_id, agent=agent, critic=critic,
                          reflection_agent=reflection_agent,
                          listeners=[on_event] if on_event else None)
    handle = get_manager(store).start(engine)
    await handle.wait_async()
    return load_result(store, run_id)


def evolve_sync(*args: Any, **kwargs: Any) -> EvolutionResult:
    """:func:`evolve` for code without an event loop."""
    return asyncio.run(evolve(*args, **kwargs))


def _critic_name(critic: Any) -> str:
    return str(getattr(critic, "name", None) or type(critic).__name__ if critic else "critic")
