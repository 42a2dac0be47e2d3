"""The Proposals page's line when several proposals wait (parallel proposals, review mode)."""

from __future__ import annotations

from studio.model.records import Proposal
from studio.views.waiting import waiting_note


def proposal(pid: int, iteration: int) -> Proposal:
    return Proposal(id=pid, run_id="r", iteration=iteration, parent_id=1,
                    component="instruction", text=f"text {pid}")


def test_one_or_no_waiting_proposal_needs_no_line():
    assert waiting_note([]) is None and waiting_note([proposal(4, 1)]) is None


def test_several_are_named_in_the_order_given_the_first_shown():
    note = waiting_note([proposal(7, 3), proposal(9, 4), proposal(8, 5)])
    assert note is not None and note.startswith("3 proposals wait")
    assert note.index("Proposal #7 (iteration 3, shown here)") \
        < note.index("Proposal #9 (iteration 4)") < note.index("Proposal #8 (iteration 5)")


def test_the_runs_own_numbers_name_them_with_the_database_id_beside():
    note = waiting_note([proposal(26, 1), proposal(27, 1)], {26: 1, 27: 2})
    assert note is not None
    assert note.index("Proposal 1 (id 26) (iteration 1, shown here)") \
        < note.index("Proposal 2 (id 27) (iteration 1)")
