"""Reflection step: show the reflection agent what happened (with human corrections and the
texts already tried, with why), record what it proposes, validate it before it costs any metric
calls, and ask again (a bounded number of times) while it repeats a text already tried."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from studio.engine.propose.demos import propose_demos
from studio.engine.propose.reflection import ReflectionOutcome, ReflectionResult, run_reflection
from studio.engine.propose.rules import propose_rules
from studio.engine.propose.trials import TrialBuilder
from studio.engine.run.agent_texts import validate_proposal
from studio.engine.run.context import RunContext
from studio.engine.run.events import IterationSkipped, ProposalCreated, ProposalInvalid, SkipCause
from studio.engine.run.tried import (
    DUPLICATE_PREFIX,
    MAX_ATTEMPTS,
    TriedText,
    candidate_tried,
    describe_candidate,
    is_repeat,
    retry_record,
    skip_reason,
)
from studio.model.errors import DuplicateCandidateError, ProposalError
from studio.model.feedback import Feedback
from studio.model.graph import node_role, upstream_agents
from studio.model.limits import (
    MAX_COMPONENT_CHARS,
    MAX_FEEDBACK_CHARS,
    MAX_REFLECTION_TRIALS_CHARS,
    REFLECTION_FIELD_CHARS,
    clip,
    too_long,
)
from studio.model.records import (
    Candidate,
    EventKind,
    Proposal,
    ProposalStatus,
    Trial,
    content_hash,
    demos_from_text,
    stored_id,
)
from studio.model.workflow import role_of, split_component
from studio.runtime.graphs import graph_shape, is_graph_workflow
from studio.runtime.providers.calls import metered
from studio.store.seams import ProposeStore

RULES_AUTHOR = "the rules operator"
NOTHING_TO_ADD = ("nothing to add: no check failed on the minibatch (or each already has its "
                  "rule) and its training examples are already shown")
NOTHING_NEW = "nothing new to add: the text it writes for this parent was already tried"
DEMO_AUTHOR = "the demo selector"
NO_DEMOS = ("no new demonstrations: no training example with an expected reply fits (text "
            "only, each field within the demo limit), or every choice was already tried")


@dataclass
class PipelineView:
    """What reflection on one agent of a workflow is told about the pipeline: the agent's role,
    and per trial (from the trace) what it received from the agents before it and what it
    produced; the trial's output, score and feedback are the primary agent's (the final
    output)."""

    agent: str
    role: str
    primary: str
    sources: tuple[str, ...] | None = None
    """A graph node's upstream agents: only their replies are what it received (None: every
    reply before its own, as in a sequence)."""

    def step_of(self, trace: dict[str, Any]) -> dict[str, object]:
        received: list[dict[str, str]] = []
        produced: list[str] = []
        for event in trace.get("events", []):
            if event.get("type") != "text":
                continue
            if event.get("author") == self.agent:
                produced.append(_clip(str(event.get("text", ""))))
            elif not produced and (self.sources is None or event.get("author") in self.sources):
                received.append({"from": str(event.get("author")),
                                 "text": _clip(str(event.get("text", "")))})
        return {"agent": self.agent, "role": self.role, "scored_output_is_from": self.primary,
                "received_from_earlier_agents": received[-3:],
                "this_agent_produced": produced[-2:] or "(nothing)"}


def pipeline_view(ctx: RunContext, component: str) -> PipelineView | None:
    agent, _ = split_component(component)
    if agent is not None and is_graph_workflow(ctx.agent):  # a node told its neighbours
        shape = graph_shape(ctx.agent)
        return PipelineView(agent=agent, role=node_role(shape, agent), primary=ctx.primary or "",
                            sources=upstream_agents(shape, agent))
    if ctx.workflow is None or agent is None:
        return None
    return PipelineView(agent=agent, role=role_of(ctx.workflow, agent),
                        primary=ctx.primary or "")


def _clip(text: str, limit: int = REFLECTION_FIELD_CHARS) -> str:
    """Small models have small contexts, and model-written text can be any size."""
    return clip(text, limit)


def _compact_trace(trace: dict[str, Any]) -> dict[str, object] | None:
    calls = [{"name": _clip(str(c.get("name")), 100), "args": _small(c.get("args")),
              "result": _clip(str(c.get("result")), 300)} for c in trace.get("tool_calls", [])]
    compact = {k: v for k, v in {"tool_calls": calls,
                                 "state_delta": trace.get("state_delta") or None}.items() if v}
    return compact or None


def _small(value: object, limit: int = 300) -> object:
    """``value`` as it is when its JSON is short, else its JSON clipped."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else _clip(text, limit)


def reflection_trials(trials: list[Trial], tried: list[TriedText],
                      pipeline: PipelineView | None = None, *,
                      refused: list[Proposal] | tuple[Proposal, ...] = ()
                      ) -> list[Mapping[str, object]]:
    """The texts already tried (``already_tried`` records: this iteration's ``refused``
    answers, then ``tried``, with why), then the trials in the reflection format
    (:mod:`studio.engine.propose.trials`): the judge's feedback with the evaluator's details
    (verdicts,
    rubric path, claims, tool-call mismatches), or on a trial a person corrected only the
    person's correction. In a workflow, ``pipeline`` adds what the evolved agent received and
    produced in each trial. The tried texts come first so the size bound never drops them."""
    builder = TrialBuilder()
    records: list[Mapping[str, object]] = [retry_record(n, proposal)
                                           for n, proposal in enumerate(refused, 1)]
    records += [entry.record() for entry in tried]
    for trial in trials:
        metadata = reflected_feedback(trial)
        metadata = metadata.model_copy(update={"text": _clip(metadata.text),
                                               "guidance": _clip(metadata.guidance)})
        record = builder.build_trial(
            _clip(trial.input_text), _clip(trial.output), trial.effective_score, metadata,
            error=_clip(trial.error) if trial.error else None,
            trace=_compact_trace(trial.trace))
        if trial.overridden:
            record["feedback"]["corrected_by_human"] = True
        if trial.override is not None and trial.override.corrected_output:
            record["feedback"]["corrected_output"] = _clip(trial.override.corrected_output)
        if metadata.extra:
            record["feedback"]["feedback_details"] = _small(metadata.extra, 1200)
        if pipeline is not None:
            record["trajectory"]["pipeline"] = pipeline.step_of(trial.trace)
        records.append(record)
    return within_budget(records)


def reflected_feedback(trial: Trial) -> Feedback:
    """What the reflection and the rules operator read of a trial's verdict: the judge's, or on
    a trial a person corrected only the person's correction. The judge's guidance, dimension
    scores and per-check details no longer apply there (the person is heard over the judge);
    the UI still shows them, labelled as the judge's."""
    override = trial.override
    if override is None:
        return trial.feedback
    words = (override.feedback or "").strip()
    if not words:
        score = trial.effective_score
        words = (f"A reviewer corrected the judge's score to "
                 f"{'unscored' if score is None else f'{score:.2f}'}; the judge's feedback no "
                 "longer applies.")
    return Feedback(score=trial.effective_score, text=words)


def within_budget(records: Sequence[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """The trials that fit in ``MAX_REFLECTION_TRIALS_CHARS`` as JSON, and a note counting
    those left out (each field is already clipped; this bounds how many there are)."""
    kept: list[Mapping[str, object]] = []
    used = 0
    for record in records:
        size = len(json.dumps(record, ensure_ascii=False, default=str))
        if kept and used + size > MAX_REFLECTION_TRIALS_CHARS:
            left_out = len(records) - len(kept)
            kept.append({"note": f"{left_out} more trials were left out to keep this prompt "
                                 f"under {MAX_REFLECTION_TRIALS_CHARS:,} characters"})
            break
        kept.append(record)
        used += size
    return kept


def propose_store(ctx: RunContext) -> ProposeStore:
    """The run's store as the proposers use it: the context carries every part's store
    (:class:`~studio.store.seams.EngineStore`), and this narrows it so mypy holds the propose
    step to :class:`~studio.store.seams.ProposeStore`'s methods."""
    return ctx.store


def current_trials(ctx: RunContext, trials: list[Trial]) -> list[Trial]:
    """``trials`` as stored now, with the corrections a person made while the batch was
    still scoring (same order; a trial never stored is kept as it is)."""
    store = propose_store(ctx)
    ids = [trial.id for trial in trials if trial.id is not None]
    stored = {trial.id: trial for trial in store.trials(ctx.run_id, ids=ids)} if ids else {}
    return [stored.get(trial.id, trial) for trial in trials]


async def propose(ctx: RunContext, iteration: int, parent: Candidate, component: str,
                  parent_trials: list[Trial], turn: Turn | None = None) -> Proposal:
    """This iteration's proposal. An answer that repeats a text already tried is refused (kept
    as an invalid proposal, the audit trail) and the reflection is asked again, naming it, up
    to ``MAX_ATTEMPTS`` calls in all; then the iteration is skipped (:func:`skipped`). Resuming
    replays the attempts already stored, so a run killed between attempts asks no more.
    ``turn``: awaited before anything is stored or checked against the run's candidates (a
    lane of parallel proposals waits for the earlier lanes: :mod:`studio.engine.loop.window`)."""
    store = propose_store(ctx)
    turn = turn or _no_wait
    stored = [p for p in store.proposals(ctx.run_id, iteration=iteration)
              if p.edited_from is None]
    attempts: list[Proposal] = []
    for n in range(MAX_ATTEMPTS):
        if n < len(stored):
            await turn()
        proposal = revalidated(ctx, stored[n], parent) if n < len(stored) else \
            await attempt(ctx, iteration, parent, component, parent_trials, attempts, turn)
        attempts.append(proposal)
        if not is_repeat(proposal):
            return proposal
    return skipped(ctx, attempts, parent)


def skipped(ctx: RunContext, attempts: list[Proposal], parent: Candidate) -> Proposal:
    """End the iteration without a gate: the last refused attempt says so in its reason, and
    the run's events get an :class:`IterationSkipped` (once, should the run resume here)."""
    store = propose_store(ctx)
    last = attempts[-1]
    reason = skip_reason(attempts, [repeated(ctx, a, parent) for a in attempts])
    if not (last.invalid_reason or "").endswith(reason):
        last = store.update_proposal(stored_id(last),
                                         invalid_reason=f"{last.invalid_reason}; {reason}")
    if not any(e.iteration == last.iteration
               for e in store.events(ctx.run_id, kind=EventKind.ITERATION_SKIPPED)):
        ctx.emit(IterationSkipped(run_id=ctx.run_id, iteration=last.iteration,
                                  cause=SkipCause.REPEATED, reason=reason,
                                  proposal_id=last.id))
    return last


async def attempt(ctx: RunContext, iteration: int, parent: Candidate, component: str,
                  parent_trials: list[Trial], refused: list[Proposal],
                  turn: Turn | None = None) -> Proposal:
    """One reflection call and its proposal, stored and validated; ``refused`` are this
    iteration's earlier answers, named in the prompt with why they were refused. Only the
    reflection agent's call runs before ``turn``: the model-free operators read the run's
    candidates, which an earlier lane may still be adding to."""
    store = propose_store(ctx)
    turn = turn or _no_wait
    if not by_model_only(ctx, component):
        await turn()
    with metered() as meter:  # the reflection's calls are part of the run's cost
        result = await reflect(ctx, parent, component, current_trials(ctx, parent_trials),
                               iteration=iteration, refused=refused)
    await turn()
    oversize = too_long(result.text, MAX_COMPONENT_CHARS, f"the proposed {component}")
    proposal = store.add_proposal(Proposal(  # a runaway reply is stored only up to its cap
        run_id=ctx.run_id, iteration=iteration, parent_id=stored_id(parent), component=component,
        text=clip(result.text, MAX_COMPONENT_CHARS),
        reasoning=clip(result.reasoning, MAX_FEEDBACK_CHARS),
        minibatch=[trial.example_id for trial in parent_trials], cost_usd=meter.cost_usd))
    ctx.emit(ProposalCreated(run_id=ctx.run_id, iteration=iteration,
                             proposal_id=stored_id(proposal), parent_id=stored_id(parent),
                             component=component))
    if result.outcome is not ReflectionOutcome.PROPOSED:
        verb = "had" if result.outcome is ReflectionOutcome.NOTHING_TO_PROPOSE else "failed:"
        return invalidate(ctx, proposal, f"{result.author} {verb} {result.error}")
    if oversize:
        return invalidate(ctx, proposal, oversize)
    return check(ctx, proposal, parent)


Turn = Callable[[], Awaitable[None]]
"""What a proposal waits for before it is stored (:func:`propose`)."""


async def _no_wait() -> None:
    return None


def by_model_only(ctx: RunContext, component: str) -> bool:
    """Whether ``component``'s proposal comes from the reflection agent alone (its prompt reads
    no candidate list), not from the rules operator or the demo selector."""
    return ctx.reflection_strategy == "llm" and split_component(component)[1] != "few_shot"


async def reflect(ctx: RunContext, parent: Candidate, component: str,
                  trials: list[Trial], *, iteration: int = 1,
                  refused: list[Proposal] | tuple[Proposal, ...] = ()) -> ReflectionResult:
    """The proposal text for ``component`` by the run's ``reflection.strategy``: the rules
    operator (instructions only; no model), the reflection agent, or rules then the agent.
    ``few_shot`` always comes from the demo selector (:mod:`studio.engine.propose.demos`). The
    model-free operators never propose a text already tried; the agent reads them, fenced."""
    if split_component(component)[1] == "few_shot":
        return select_demos(ctx, parent, component, trials, iteration)
    strategy = ctx.reflection_strategy
    if strategy != "llm" and split_component(component)[1] == "instruction":
        found = propose_rules(parent.components[component], trials, ctx.examples)
        every = ctx.tried.texts(stored_id(parent), component, limit=None,
                                before=ctx.history_cutoff(iteration))
        if found is not None and not already_tried(ctx, parent, component, found.text, every):
            return ReflectionResult(text=found.text, reasoning=found.reasoning,
                                    author=RULES_AUTHOR)
        if strategy == "rules":
            return ReflectionResult.nothing(RULES_AUTHOR,
                                            NOTHING_TO_ADD if found is None else NOTHING_NEW)
    tried = ctx.tried.texts(stored_id(parent), component, before=ctx.history_cutoff(iteration))
    records = reflection_trials(trials, tried, pipeline_view(ctx, component), refused=refused)
    return await run_reflection(ctx.reflection_agents[component],
                                parent.components[component], records, ctx.executor)


def select_demos(ctx: RunContext, parent: Candidate, component: str, trials: list[Trial],
                 iteration: int) -> ReflectionResult:
    """The demo selector's proposal; a window that makes an already tried candidate is
    skipped here rather than refused as a duplicate afterwards."""
    earlier = ctx.tried.texts(stored_id(parent), component, limit=None,
                              before=ctx.history_cutoff(iteration))

    def tried(text: str) -> bool:
        return already_tried(ctx, parent, component, text, earlier)

    found = propose_demos(demos_from_text(parent.components[component]), trials,
                          ctx.examples.training(),
                          input_key=ctx.input_key, iteration=iteration, tried=tried)
    if found is None:
        return ReflectionResult.nothing(DEMO_AUTHOR, NO_DEMOS)
    return ReflectionResult(text=found.text, reasoning=found.reasoning, author=DEMO_AUTHOR)


def already_tried(ctx: RunContext, parent: Candidate, component: str, text: str,
                  tried: list[TriedText]) -> bool:
    """Whether ``text`` for ``component`` of ``parent`` makes a candidate the run has, or is a
    text already refused for it."""
    if text.strip() in {entry.text.strip() for entry in tried}:
        return True
    return find_duplicate(ctx, {**parent.components, component: text}) is not None


def revalidated(ctx: RunContext, proposal: Proposal, parent: Candidate) -> Proposal:
    """A stored proposal on resume: one that never got its child (the run stopped between
    storing and validating it) is validated again before it costs any metric call."""
    if proposal.status is ProposalStatus.EVALUATING and proposal.child_id is None:
        return check(ctx, proposal, parent)
    return proposal


def check(ctx: RunContext, proposal: Proposal, parent: Candidate) -> Proposal:
    """Validate a proposal; an invalid one is recorded with its reason, never raised."""
    store = propose_store(ctx)
    try:
        text = validate_proposal(proposal.component, proposal.text,
                                 parent.components[proposal.component],
                                 ctx.readable_keys(proposal.component))
    except ProposalError as exc:
        return invalidate(ctx, proposal, str(exc))
    duplicate = find_duplicate(ctx, {**parent.components, proposal.component: text})
    if duplicate is not None:
        return invalidate(ctx, proposal, DUPLICATE_PREFIX + describe_candidate(ctx.store, duplicate)
                          + ": the same components were already tried")
    if text != proposal.text:
        proposal = store.update_proposal(stored_id(proposal), text=text)
    return proposal


def repeated(ctx: RunContext, attempt: Proposal, parent: Candidate) -> TriedText | None:
    """How the text an attempt refused as a duplicate had been refused (typed, read from the
    run's candidates and decisions as they are stored), None when it was not refused or the
    attempt was no duplicate."""
    if not (attempt.invalid_reason or "").startswith(DUPLICATE_PREFIX):
        return None
    try:
        text = validate_proposal(attempt.component, attempt.text,
                                 parent.components[attempt.component],
                                 ctx.readable_keys(attempt.component))
    except ProposalError:
        return None
    duplicate = find_duplicate(ctx, {**parent.components, attempt.component: text})
    return None if duplicate is None else candidate_tried(ctx.store, duplicate)


def find_duplicate(ctx: RunContext, components: dict[str, str]) -> Candidate | None:
    store = propose_store(ctx)
    return store.find_candidate(ctx.run_id, content_hash(components))


def invalidate(ctx: RunContext, proposal: Proposal, reason: str) -> Proposal:
    store = propose_store(ctx)
    proposal = store.update_proposal(stored_id(proposal), status=ProposalStatus.INVALID,
                                         invalid_reason=reason)
    ctx.emit(ProposalInvalid(run_id=ctx.run_id, iteration=proposal.iteration,
                             proposal_id=stored_id(proposal), reason=reason))
    return proposal


def latest_in_chain(ctx: RunContext, proposal: Proposal) -> Proposal:
    """Follow edits: a person's edited text replaces the proposal it was made from."""
    store = propose_store(ctx)
    by_parent = {p.edited_from: p for p in store.proposals(ctx.run_id,
                                                               iteration=proposal.iteration)
                 if p.edited_from is not None}
    while proposal.id in by_parent:
        proposal = by_parent[proposal.id]
    return proposal


def child_of(ctx: RunContext, proposal: Proposal, parent: Candidate) -> Candidate | None:
    """The candidate a proposal describes (created once, reused on resume); None when the run
    has that candidate already (:func:`add_child`)."""
    store = propose_store(ctx)
    if proposal.child_id is not None:
        return store.get_candidate(proposal.child_id)
    return add_child(ctx, proposal, {**parent.components, proposal.component: proposal.text},
                     [stored_id(parent)])


def add_child(ctx: RunContext, proposal: Proposal, components: dict[str, str],
              parent_ids: list[int]) -> Candidate | None:
    """Store a proposal's child candidate and link it to the proposal. A run keeps one
    candidate per content hash (the store's unique index): when the run already has this one
    (two people's equal edits on two lanes, each checked before the other was applied), the
    proposal is recorded as invalid, naming the candidate, and None is returned."""
    store = propose_store(ctx)
    existing = find_duplicate(ctx, components)
    if existing is None:
        try:
            child = store.add_candidate(Candidate(
                run_id=ctx.run_id, index=store.next_candidate_index(ctx.run_id),
                parent_ids=parent_ids,
                components=components, content_hash=content_hash(components),
                iteration=proposal.iteration, proposal_id=proposal.id))
        except DuplicateCandidateError as refused:  # made meanwhile: the store's index says
            existing = store.get_candidate(refused.candidate_id)
        else:
            store.update_proposal(stored_id(proposal), child_id=child.id)
            return child
    invalidate(ctx, proposal, duplicate_reason(ctx, proposal, existing))
    return None


def duplicate_reason(ctx: RunContext, proposal: Proposal, existing: Candidate) -> str:
    """Why a proposal whose candidate the run has is refused: a person's edit is said to be
    theirs, never the reflection's."""
    named = DUPLICATE_PREFIX + describe_candidate(ctx.store, existing)
    if proposal.edited_from is not None:
        return (f"{named}: this edit (proposal {proposal.edited_from} edited) makes the same "
                "candidate, which was made meanwhile; a run keeps one candidate per text")
    return f"{named}: the same components were already tried"
