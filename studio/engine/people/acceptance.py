"""The engine's side of the gate: the evidence a proposal is judged on, the rule's decision in
auto mode, announcing a proposal that waits for a person, and acting on an edit or a rejection.

Waiting for the person is the loop's (:meth:`studio.engine.loop.engine.Engine.gate`: the time is a
person's, not the machine's); the person's side is :mod:`studio.engine.people.gates`.
"""

from __future__ import annotations

from collections.abc import Callable

from studio.engine.people.gates import deciding
from studio.engine.policies.evidence import proposal_evidence, verdict_reason
from studio.engine.run.context import RunContext
from studio.engine.run.events import AwaitingDecision, DecisionApplied
from studio.model.config import ReviewMode
from studio.model.evidence import Evidence
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    Proposal,
    ProposalStatus,
    stored_id,
    utcnow,
)
from studio.store.seams import PeopleStore

Verdict = Callable[[], Evidence]
"""The acceptance rule, asked at decision time: the evidence now, with the rule's verdict (the
decision keeps it as what it was made on)."""


def child_evidence(ctx: RunContext, proposal: Proposal, child: Candidate) -> Evidence:
    """The proposal's evidence with its child (:mod:`studio.engine.policies.evidence`), re-read from
    the store so overrides made meanwhile count; with the rule's verdict."""
    return proposal_evidence(ctx.store, proposal.model_copy(update={"child_id": child.id}))


def open_gate(ctx: RunContext, proposal: Proposal, iteration: int, rule: Verdict
              ) -> Decision | None:
    """The decision that needs no one: one already made (replayed after a restart), or the
    rule's in auto mode. Else None, with the proposal pending and announced, for a person."""
    existing = deciding(ctx.store.decisions(proposal_id=proposal.id))
    if existing:  # replayed after a restart: the decision that was made (there is one)
        return existing[0]
    if proposal.decided_at is not None:  # an older store's stop: the proposal is open again
        proposal = ctx.store.update_proposal(stored_id(proposal), decided_at=None)
    if ctx.config.review is ReviewMode.AUTO:
        evidence = rule()
        return ctx.store.add_decision(Decision(
            proposal_id=stored_id(proposal), automatic=True, author="rule",
            reason=verdict_reason(evidence), evidence=evidence,
            action=DecisionAction.ACCEPT if evidence.rule_accepts else DecisionAction.REJECT))
    if proposal.status is not ProposalStatus.PENDING:
        ctx.store.update_proposal(stored_id(proposal), status=ProposalStatus.PENDING)
    # announced on every entry, so a resumed run says it waits at the same gate again
    ctx.emit(AwaitingDecision(run_id=ctx.run_id, iteration=iteration,
                              proposal_id=stored_id(proposal)))
    return None


def edited(ctx: RunContext, proposal: Proposal, decision: Decision) -> Proposal:
    """A person's edit becomes a new proposal in the same iteration, scored like any other."""
    store = ctx.store
    store.update_proposal(stored_id(proposal), status=ProposalStatus.EDITED, decided_at=utcnow())
    ctx.emit(DecisionApplied(run_id=ctx.run_id, iteration=proposal.iteration,
                             proposal_id=stored_id(proposal), action=DecisionAction.EDIT,
                             reason=decision.reason))
    return store.add_proposal(Proposal(
        run_id=proposal.run_id, iteration=proposal.iteration, parent_id=proposal.parent_id,
        component=proposal.component, text=decision.edited_text or "",
        reasoning=f"edited by {decision.author}" + (f": {decision.reason}"
                                                     if decision.reason else ""),
        edited_from=proposal.id, minibatch=proposal.minibatch))


def settle(store: PeopleStore, proposal: Proposal, status: ProposalStatus, reason: str | None = None
           ) -> None:
    """Give a proposal its final status (with the reason when it is not the decision's)."""
    fields = {"invalid_reason": reason} if reason else {}
    store.update_proposal(stored_id(proposal), status=status, decided_at=utcnow(), **fields)
