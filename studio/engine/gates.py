"""Human gates and overrides: the library API the studio's pages call.

- :func:`decide` answers a pending proposal: accept, reject (with a reason the next reflection
  reads), edit (the edited text is scored on the same minibatch and comes back), or stop the run.
- :func:`override` corrects a trial's score and/or feedback at any time; the judge's values are
  kept, and the effective score changes acceptance evidence, the front and the next reflection.
"""

from __future__ import annotations

from collections.abc import Iterable

from studio.engine.components import validate_proposal
from studio.engine.context import RunContext, StopRun, wake_run
from studio.model.errors import ConfigError, ProposalError, RunStateError
from studio.model.limits import MAX_FEEDBACK_CHARS, too_long
from studio.model.records import (
    Decision,
    DecisionAction,
    Override,
    Proposal,
    ProposalStatus,
    RunRequest,
    content_hash,
    instruction_placeholders,
)
from studio.model.workflow import split_component, state_before
from studio.runtime.agents import load_agent
from studio.runtime.workflows import is_workflow, state_keys
from studio.store import Store, open_store


def decide(
    proposal_id: int,
    action: DecisionAction | str,
    *,
    reason: str = "",
    edited_text: str | None = None,
    author: str = "anonymous",
    store: Store | None = None,
) -> Decision:
    """Record a person's decision on a pending proposal; the running engine acts on it.

    Raises:
        RunStateError: the proposal is not waiting for a decision.
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
    if action is DecisionAction.EDIT and proposal.is_merge:
        raise ConfigError(f"proposal {proposal_id} is a merge: it takes whole components from "
                          "its two parents, so there is no text to edit; accept or reject it",
                          where="action")
    if action is DecisionAction.EDIT:
        edited_text = _checked_edit(store, proposal, edited_text)
    decision = store.add_decision(Decision(
        proposal_id=proposal_id, action=action, reason=reason.strip(), edited_text=edited_text,
        author=author or "anonymous"))
    if action is DecisionAction.STOP:
        store.update_run(proposal.run_id, control=RunRequest.STOP)
    wake_run(proposal.run_id)
    return decision


def _checked_edit(store: Store, proposal, edited_text: str | None) -> str:
    if not edited_text or not edited_text.strip():
        raise ConfigError("an edit needs the edited text", where="edited_text")
    parent = store.get_candidate(proposal.parent_id)
    if edited_text.strip() == proposal.text.strip():
        raise ProposalError("the edited text is the same as the proposal; accept it instead",
                            reason="unchanged")
    parent_text = parent.components[proposal.component]
    keys = _readable_keys(store, proposal.run_id, proposal.component, parent_text)
    text = validate_proposal(proposal.component, edited_text, parent_text, keys)
    components = {**parent.components, proposal.component: text}
    duplicate = store.find_candidate(proposal.run_id, content_hash(components))
    if duplicate is not None:  # it would be pooled twice and judged again
        raise ProposalError(f"candidate #{duplicate.index} already has this text: edit it into "
                            "a text the run has not tried, or accept or reject the proposal",
                            reason="duplicate")
    return text


def _readable_keys(store: Store, run_id: str, component: str, parent_text: str) -> set[str]:
    """What an edit of ``component`` may name, as the engine's state guard has it: example
    fields and, in a workflow run, the state earlier agents write: from the agents themselves
    for a workflow loaded by reference (as the engine builds it), else from the stored workflow
    and ``output_key``s, plus what the parent's text already names (it ran: a workflow of live
    Python objects stores no ``output_key``s)."""
    keys = {key for example in store.examples(run_id) for key in example.data}
    agent, _ = split_component(component)
    spec = store.get_run(run_id).spec
    if agent is None:
        return keys
    if spec.agent_ref and not spec.agents:
        try:
            root = load_agent(spec.agent_ref)  # a trusted CLI user's code, as the engine's
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
) -> Override:
    """Correct a critic: set the trial's effective score and/or feedback.

    Raises:
        ConfigError: neither score nor feedback given, a score outside [0, 1], or a feedback
            longer than ``MAX_FEEDBACK_CHARS``.
    """
    store = store or open_store()
    if score is None and (feedback is None or not feedback.strip()):
        raise ConfigError("an override needs a score, a feedback text, or both", where="override")
    if score is not None and not (isinstance(score, int | float) and 0.0 <= score <= 1.0):
        raise ConfigError(f"score {score!r} is outside [0, 1]", where="override.score",
                          value=score)
    oversize = too_long(feedback or "", MAX_FEEDBACK_CHARS, "the feedback")
    if oversize:
        raise ConfigError(oversize, where="override.feedback")
    return store.add_override(trial_id, score=None if score is None else float(score),
                              feedback=feedback, author=author)


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


def undo_override(override_id: int, *, store: Store | None = None) -> Override:
    """Withdraw an override; the previous one (or the judge's value) applies again."""
    return (store or open_store()).undo_override(override_id)


async def await_decision(ctx: RunContext, proposal_id: int) -> Decision:
    """Wait for a person's decision, while honouring stop requests and the run's timeout.

    Woken at once by a decision made in this process and by each heartbeat; a decision from
    another process is seen within a heartbeat (or the control's fallback timeout)."""
    while True:
        ctx.control.changed.clear()
        decisions = ctx.store.decisions(proposal_id=proposal_id)
        if decisions:  # the first decision wins (the store refuses a second one)
            return decisions[0]
        ctx.check_stop()
        await ctx.control.wait()


__all__ = ["await_decision", "decide", "latest_pending", "merge_correction", "override",
           "undo_override", "StopRun"]
