"""What every run must hold once its engine stopped, whatever a person did meanwhile: shared by
the steering tests and the interleaving driver."""

from __future__ import annotations

from collections import Counter

from studio.model.records import DecisionAction, ProposalStatus, RunStatus

OPEN = {ProposalStatus.EVALUATING, ProposalStatus.PENDING}


def nothing_stranded(store, run_id: str, where: str = "") -> None:
    """A completed run leaves no proposal open, and every decision recorded was applied:
    accepted -> proposal accepted and its child pooled; rejected -> rejected; edited -> edited,
    with the edited text as a successor proposal. No pooled candidate repeats another's
    components, and no (candidate, example) pair was judged twice."""
    proposals = {p.id: p for p in store.proposals(run_id)}
    if store.get_run(run_id).status is RunStatus.COMPLETED:
        stuck = {p.id: p.status.value for p in proposals.values() if p.status in OPEN}
        assert not stuck, f"a completed run left proposals {stuck} open {where}"
        for decision in store.decisions(run_id):
            applied(store, proposals, decision, where)
    pooled = [c for c in store.candidates(run_id) if c.pooled]
    hashes = Counter(c.content_hash for c in pooled)
    assert max(hashes.values(), default=1) == 1, f"two pooled candidates are the same {where}"
    pairs = Counter((t.candidate_id, t.example_id) for t in store.trials(run_id))
    assert max(pairs.values(), default=1) == 1, f"a pair was judged twice {where}"


def applied(store, proposals, decision, where: str) -> None:
    proposal = proposals[decision.proposal_id]
    said = f"proposal {proposal.id} ({decision.action.value}) is {proposal.status.value} {where}"
    if decision.action is DecisionAction.ACCEPT:
        assert proposal.status is ProposalStatus.ACCEPTED, said
        assert store.get_candidate(proposal.child_id).pooled, f"{said}: child not pooled"
    elif decision.action is DecisionAction.REJECT:
        assert proposal.status is ProposalStatus.REJECTED, said
    elif decision.action is DecisionAction.EDIT:
        assert proposal.status is ProposalStatus.EDITED, said
        successors = [p for p in proposals.values() if p.edited_from == proposal.id]
        assert [p.text for p in successors] == [decision.edited_text], f"{said}: no successor"
