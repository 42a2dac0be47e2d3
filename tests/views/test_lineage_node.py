"""A lineage node opened on Compare: its headline, the rule's verdict on its minibatch evidence
and the decision with its reason (studio.views.lineage.node_story)."""

from __future__ import annotations

from studio.engine.people.history import proposal_row
from studio.model.evidence import Evidence, Sums
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    MergeDetail,
    Proposal,
    ProposalKind,
    ProposalStatus,
)
from studio.views.lineage import node_story


def cand(id_, index, parents=(), iteration=0, pooled=True):
    return Candidate(id=id_, run_id="r", index=index, parent_ids=list(parents),
                     components={"instruction": f"v{index}"}, content_hash=str(id_),
                     iteration=iteration, pooled=pooled)


CANDIDATES = [cand(10, 0), cand(11, 1, [10], 1), cand(12, 2, [11], 2, pooled=False),
              cand(13, 3, [11], 3, pooled=False), cand(14, 4, [11], 4, pooled=False)]
INDEX = {c.id: c.index for c in CANDIDATES}
MEANS = {10: 0.25, 11: 0.5}
ABOVE = Evidence(effective=Sums(parent_sum=1.0, child_sum=2.0, compared=3),
                 judged=Sums(parent_sum=1.0, child_sum=2.0, compared=3), rule_accepts=True)
NOT_ABOVE = Evidence(effective=Sums(parent_sum=2.0, child_sum=1.5, compared=3),
                     judged=Sums(parent_sum=2.0, child_sum=1.5, compared=3))


def proposal(id_, child, status, parent=11):
    return Proposal(id=id_, run_id="r", iteration=id_, parent_id=parent,
                    component="instruction", text=f"v{id_}", status=status, child_id=child)


def decision(id_, action, *, automatic=False, author="alice", reason="", evidence=None):
    return Decision(proposal_id=id_, action=action, automatic=automatic, author=author,
                    reason=reason, evidence=evidence)


ROWS = [
    proposal_row(proposal(1, 11, ProposalStatus.ACCEPTED, parent=10),
                 decision(1, DecisionAction.ACCEPT, automatic=True, author="rule",
                          reason="child minibatch sum 2.000 is above the parent's 1.000"),
                 ABOVE, INDEX),
    proposal_row(proposal(2, 12, ProposalStatus.REJECTED),
                 decision(2, DecisionAction.REJECT, reason="too long: keep it to three lines",
                          evidence=ABOVE), ABOVE, INDEX),
    proposal_row(proposal(3, 13, ProposalStatus.PENDING), None, NOT_ABOVE, INDEX),
    proposal_row(proposal(4, 14, ProposalStatus.REJECTED),
                 decision(4, DecisionAction.REJECT, automatic=True, author="rule",
                          evidence=ABOVE), NOT_ABOVE, INDEX),
]


def test_the_seed_says_it_was_never_decided():
    story = node_story(10, CANDIDATES, ROWS, MEANS)
    assert story.headline == "#0 · the seed · validation mean 0.250"
    assert story.parent is None and story.row is None and story.evidence is None
    assert "nothing was decided" in story.verdict


def test_a_child_the_rule_accepted():
    story = node_story(11, CANDIDATES, ROWS, MEANS)
    assert story.parent.id == 10 and story.evidence == ABOVE
    assert story.headline.startswith("#1 · born in iteration 1 from #0 · proposal #1 · accepted")
    assert story.verdict.startswith("The rule accepts: child minibatch sum 2.000 is above")
    assert story.decision == "Accepted by the acceptance rule."


def test_a_child_a_person_rejected_says_who_and_why_beside_the_rule():
    story = node_story(12, CANDIDATES, ROWS, MEANS)
    assert "rejected · not scored on the validation set" in story.headline
    assert story.verdict.startswith("The rule accepts")  # the person overruled it
    assert story.decision == "Rejected by alice, who said: “too long: keep it to three lines”."


def test_a_waiting_child_and_evidence_changed_since_the_decision():
    waiting = node_story(13, CANDIDATES, ROWS, MEANS)
    assert waiting.verdict.startswith("The rule rejects: child minibatch sum 1.500 is not above")
    assert waiting.decision.startswith("Waiting for a person's decision")
    corrected = node_story(14, CANDIDATES, ROWS, MEANS)
    assert "At the decision: child minibatch sum 2.000 is above" in corrected.verdict
    assert corrected.decision == "Rejected by the acceptance rule."


def test_a_click_for_something_else_opens_nothing():
    for picked in (99, "11", None, 11.0, [11], True):
        assert node_story(picked, CANDIDATES, ROWS, MEANS) is None


def test_a_merge_names_both_parents():
    merged = cand(15, 5, [11, 10], 5, pooled=True)
    merge = Proposal(id=5, run_id="r", iteration=5, parent_id=11, component="",
                     text="merge", status=ProposalStatus.ACCEPTED, child_id=15,
                     kind=ProposalKind.MERGE,
                     merge=MergeDetail(parents=[11, 10], ancestor=10,
                                       sources={"instruction": 11}))
    rows = [*ROWS, proposal_row(merge, None, ABOVE, INDEX | {15: 5})]
    story = node_story(15, [*CANDIDATES, merged], rows, MEANS | {15: 0.75})
    assert story.headline.startswith("#5 · born in iteration 5 as a merge of #1 and #0")
    assert story.parent.id == 11
