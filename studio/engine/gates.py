"""Human gates and overrides: the library API the studio's pages call.

- :func:`decide` answers a pending proposal: accept, reject (with a reason the next reflection
  reads) or edit (the edited text is scored on the same minibatch and comes back). ``stop`` is
  no decision: it ends the run and the proposal waits again when the run resumes. A decision on
  a run that is not live is applied when it resumes (:func:`when_applied` says so).
- :func:`override` corrects a trial's score and/or feedback at any time; the judge's values are
  kept, and the effective score changes acceptance evidence, the front and the next reflection.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from studio.engine.components import validate_proposal
from studio.engine.context import RunContext, StopRun, wake_run
from studio.engine.evidence import proposal_evidence
from studio.engine.labels import relabel_align_runs
from studio.engine.pool import val_example_ids
from studio.model.errors import ConfigError, ProposalError, ProposalProblem, RunStateError
from studio.model.limits import MAX_FEEDBACK_CHARS, MAX_OUTPUT_CHARS, too_long
from studio.model.records import (
    Decision,
    DecisionAction,
    Override,
    Proposal,
    ProposalStatus,
    Run,
    RunRequest,
    RunStatus,
    TrialPhase,
    content_hash,
    instruction_placeholders,
)
from studio.model.workflow import split_component, state_before
from studio.runtime.agents import load_agent
from studio.runtime.workflows import is_workflow, state_keys
from studio.store import Store, open_store

logger = logging.getLogger(__name__)


def decide(
    proposal_id: int,
    action: DecisionAction | str,
    *,
    reason: str = "",
    edited_text: str | None = None,
    author: str = "anonymous",
    store: Store | None = None,
) -> Decision | None:
    """Record a person's decision on a pending proposal; the engine acts on it, at once when
    the run is live, else when it resumes (:func:`when_applied` says which).

    ``stop`` records nothing and returns None: it asks the run to stop, and the proposal stays
    pending and comes back to the gate, with its evidence, when the run resumes.

    Raises:
        RunStateError: the proposal is not waiting for a decision, its run completed (no
            decision on it could ever be applied), or the budget cannot pay for an edit.
        ConfigError: unknown action, an edit without text, or an edit of a merge.
        ProposalError: the edited text is invalid (empty, unchanged, bad schema or YAML) or
            makes a candidate the run already has.
    """
    store = store or open_store()
    try:
        action = DecisionAction(action)
    except ValueError:
        allowed = ", ".join(a.value for a in DecisionAction)
        raise ConfigError(f"decision {action!r} is not one of: {allowed}", where="action") from None
    proposal = store.get_proposal(proposal_id)
    if proposal.decided_at is not None:
        raise RunStateError(store.already_decided(proposal))
    if proposal.status is not ProposalStatus.PENDING:
        raise RunStateError(f"proposal {proposal_id} is {proposal.status.value}, not pending: "
                            "only a proposal waiting at the gate can be decided")
    run = store.get_run(proposal.run_id)
    if action is DecisionAction.STOP:
        request_stop(store, run)
        return None
    if run.status is RunStatus.COMPLETED:
        raise RunStateError(never_applied(run, proposal))
    if action is DecisionAction.EDIT and proposal.is_merge:
        raise ConfigError(f"proposal {proposal_id} is a merge: it takes whole components from "
                          "its two parents, so there is no text to edit; accept or reject it",
                          where="action")
    if action is DecisionAction.EDIT:
        edited_text = _checked_edit(store, proposal, edited_text)
        check_edit_budget(store, run, proposal)
    decision = store.add_decision(Decision(
        proposal_id=proposal_id, action=action, reason=reason.strip(), edited_text=edited_text,
        author=author or "anonymous", evidence=proposal_evidence(store, proposal)))
    wake_run(proposal.run_id)
    later = applied_later(run)
    if later:  # the CLI prints it too; a library caller sees it in the log
        logger.warning(later)
    return decision


def request_stop(store: Store, run: Run) -> None:
    """Ask the run to stop at its next step: also an orphaned one, which a worker may be
    resuming right now (a later `studio resume` withdraws the request it finds)."""
    store.update_run(run.id, control=RunRequest.STOP)
    wake_run(run.id)


def when_applied(store: Store, run_id: str) -> str | None:
    """When a decision on ``run_id``'s gate takes effect, if not at once: a run that is not
    live applies it when it resumes (its iteration replays and finds the decision)."""
    return applied_later(store.get_run(run_id))


def applied_later(run: Run) -> str | None:
    """:func:`when_applied` for a run already read."""
    run_id = run.id
    if run.status is RunStatus.QUEUED:
        return f"run {run_id} is queued: the decision is applied when a worker takes it"
    if run.status.is_active:
        return None
    return (f"run {run_id} is {run.status.value}: the decision is applied when it resumes: "
            f"`studio resume {run_id}`")


def never_applied(run: Run, proposal: Proposal) -> str:
    """Why a decision on a completed run's proposal is refused (only an older studio completed
    a run while a proposal waited: a completed run is never resumed)."""
    return (f"proposal {proposal.id} still waits, but run {run.id} completed "
            f"({run.stop_reason}) and a completed run is not resumed, so no decision on it "
            f"could be applied. Start a new run, or fork this one (`studio fork {run.id}`)")


def check_edit_budget(store: Store, run: Run, proposal: Proposal) -> None:
    """An edit is charged before it is scored: the edited text on the proposal's minibatch, and
    the validation set should it be accepted. Refused when the budget cannot pay for both, so
    an edited proposal is never left unscored and an accepted child never unvalidated."""
    budget = run.config.max_metric_calls
    if budget is None:
        return
    minibatch = len({t.example_id for t in store.trials(
        run.id, proposal_id=proposal.id, phase=TrialPhase.CHILD)}) or run.config.minibatch_size
    validation = len(val_example_ids(store, run))
    left = budget - store.count_trials(run.id, loop_only=True)
    if minibatch + validation > left:
        raise RunStateError(
            f"an edit of proposal {proposal.id} costs up to {minibatch + validation} metric calls "
            f"(the edited text on its minibatch of {minibatch}, then the validation set of "
            f"{validation} should it be accepted), and run {run.id} has {max(left, 0)} of its "
            f"max_metric_calls {budget} left. Accept or reject the proposal as it stands, or "
            f"stop the run and resume it with a larger budget: "
            f"`studio resume {run.id} --max-metric-calls N`")


def _checked_edit(store: Store, proposal, edited_text: str | None) -> str:
    if not edited_text or not edited_text.strip():
        raise ConfigError("an edit needs the edited text", where="edited_text")
    parent = store.get_candidate(proposal.parent_id)
    if edited_text.strip() == proposal.text.strip():
        raise ProposalError("the edited text is the same as the proposal; accept it instead",
                            reason=ProposalProblem.UNCHANGED)
    parent_text = parent.components[proposal.component]
    keys = _readable_keys(store, proposal.run_id, proposal.component, parent_text)
    text = validate_proposal(proposal.component, edited_text, parent_text, keys)
    components = {**parent.components, proposal.component: text}
    duplicate = store.find_candidate(proposal.run_id, content_hash(components))
    if duplicate is not None:  # it would be pooled twice and judged again
        raise ProposalError(f"candidate #{duplicate.index} already has this text: edit it into "
                            "a text the run has not tried, or accept or reject the proposal",
                            reason=ProposalProblem.DUPLICATE)
    return text


def _readable_keys(store: Store, run_id: str, component: str, parent_text: str) -> set[str]:
    """What an edit of ``component`` may name, as the engine's state guard has it: example
    fields and, in a workflow run, the state earlier agents write: from the agents themselves
    for a workflow loaded by reference (as the engine builds it), else from the stored workflow
    and ``output_key``s, plus what the parent's text already names (it ran: a workflow of live
    Python objects stores no ``output_key``s)."""
    keys = store.example_keys(run_id)
    agent, _ = split_component(component)
    spec = store.get_run(run_id).spec
    if agent is None:
        return keys
    if spec.agent_ref and not spec.agents:
        try:
            root = load_agent(spec.agent_ref, folder=spec.agent_folder)  # trusted, as in the engine
        except ConfigError:  # not importable here (it runs on a worker): what the parent reads
            return keys | instruction_placeholders(parent_text)
        return keys | (state_keys(root).get(agent, set()) if is_workflow(root) else set())
    if spec.workflow is None:
        return keys
    output_keys = {a.name: a.output_key for a in spec.agents}
    return (keys | state_before(spec.workflow, output_keys).get(agent, set())
            | instruction_placeholders(parent_text))


def override(
    trial_id: int,
    *,
    score: float | None = None,
    feedback: str | None = None,
    author: str = "anonymous",
    store: Store | None = None,
    corrected_output: str | None = None,
) -> Override:
    """Correct a critic: set the trial's effective score and/or feedback, and optionally what
    the answer should have been (``corrected_output``: the next reflection reads it).

    Raises:
        ConfigError: none of score, feedback or corrected output given, a score outside
            [0, 1], a feedback longer than ``MAX_FEEDBACK_CHARS`` or a corrected output longer
            than ``MAX_OUTPUT_CHARS``.
    """
    store = store or open_store()
    corrected_output = (corrected_output or "").strip() or None
    if score is None and (feedback is None or not feedback.strip()) and corrected_output is None:
        raise ConfigError("an override needs a score, a feedback text, or both (or a corrected "
                          "output)", where="override")
    if score is not None and not (isinstance(score, int | float) and 0.0 <= score <= 1.0):
        raise ConfigError(f"score {score!r} is outside [0, 1]", where="override.score",
                          value=score)
    oversize = too_long(feedback or "", MAX_FEEDBACK_CHARS, "the feedback")
    if oversize:
        raise ConfigError(oversize, where="override.feedback")
    oversize = too_long(corrected_output or "", MAX_OUTPUT_CHARS, "the corrected output")
    if oversize:
        raise ConfigError(oversize, where="override.corrected_output")
    record = store.add_override(trial_id, score=None if score is None else float(score),
                                feedback=feedback, author=author,
                                corrected_output=corrected_output)
    relabel_align_runs(store, trial_id)  # an align run's label is this correction as it is now
    return record


def merge_correction(active: Override | None, score: float | None,
                     feedback: str | None) -> tuple[float | None, str | None]:
    """A new correction replaces the trial's active one: what the person leaves empty keeps the
    active correction's value, so correcting only the feedback does not drop a corrected score."""
    if active is not None:
        score = active.score if score is None else score
        feedback = feedback or active.feedback
    return score, feedback or None


def latest_pending(proposals: Iterable[Proposal]) -> Proposal | None:
    """The proposal waiting at the gate for a person's decision (the latest, should there be
    several), or None. A decided proposal the engine has not finished acting on (an accepted
    child still being validated) waits for no one."""
    pending = [p for p in proposals if p.status is ProposalStatus.PENDING and p.decided_at is None]
    return pending[-1] if pending else None


def pending_in_order(proposals: Iterable[Proposal]) -> list[Proposal]:
    """Every proposal waiting at the gate, in the order a person should decide them: by
    iteration (with parallel proposals, lane order, which is the order their children are
    pooled in), then as stored (an edit after the text it replaces)."""
    return sorted((p for p in proposals
                   if p.status is ProposalStatus.PENDING and p.decided_at is None),
                  key=lambda p: (p.iteration, p.id or 0))


def undo_override(override_id: int, *, store: Store | None = None) -> Override:
    """Withdraw an override; the previous one (or the judge's value) applies again."""
    store = store or open_store()
    record = store.undo_override(override_id)
    relabel_align_runs(store, record.trial_id)
    return record


async def await_decision(ctx: RunContext, proposal_id: int) -> Decision:
    """Wait for a person's decision, honouring a person's stop and a worker's shutdown (the
    run's limits are checked between iterations; the time waited here is not timed).

    Woken at once by a decision made in this process and by each heartbeat; a decision from
    another process is seen within a heartbeat (or the control's fallback timeout)."""
    def first_decision() -> Decision | None:  # the first wins (the store refuses a second)
        decisions = deciding(ctx.store.decisions(proposal_id=proposal_id))
        return decisions[0] if decisions else None

    return await ctx.control.until(first_decision)


def deciding(decisions: list[Decision]) -> list[Decision]:
    """The decisions that decide (accept, edit, reject): an older store's ``stop`` rows are
    not one, since a stop only ends the run."""
    return [d for d in decisions if d.action is not DecisionAction.STOP]


__all__ = ["await_decision", "decide", "latest_pending", "merge_correction", "override",
           "pending_in_order",
           "undo_override", "when_applied", "StopRun"]
