"""The rules the review pages rely on, in one place: merging corrections, the pending proposal."""

from __future__ import annotations

from studio.engine.gates import latest_pending, merge_correction
from studio.model.records import Override, Proposal, ProposalStatus


def _override(score, feedback):
    return Override(id=1, trial_id=7, score=score, feedback=feedback,
                    judge_score=0.2, author="ana")


def test_a_new_correction_keeps_what_it_leaves_empty_from_the_active_one():
    active = _override(0.9, "misses the rhyme")
    assert merge_correction(active, None, "too long") == (0.9, "too long")
    assert merge_correction(active, 0.4, "") == (0.4, "misses the rhyme")
    assert merge_correction(active, 0.4, "new") == (0.4, "new")


def test_a_first_correction_is_taken_as_given():
    assert merge_correction(None, 0.5, "") == (0.5, None)
    assert merge_correction(None, None, "note") == (None, "note")


def test_the_pending_proposal_is_the_latest_one_waiting_at_the_gate():
    def proposal(pid, status):
        return Proposal(id=pid, run_id="r", iteration=pid, parent_id=1, component="instruction",
                        text=f"text {pid}", status=status)

    proposals = [proposal(1, ProposalStatus.REJECTED), proposal(2, ProposalStatus.PENDING),
                 proposal(3, ProposalStatus.EVALUATING), proposal(4, ProposalStatus.PENDING)]
    assert latest_pending(proposals).id == 4
    assert latest_pending(proposals[:2]).id == 2
    assert latest_pending([proposals[0], proposals[2]]) is None
