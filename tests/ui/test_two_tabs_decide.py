"""Two tabs deciding one proposal (issue 20): one decision is stored, and the tab that lost
the race is told who decided and when, on the Proposals page itself, instead of its click
vanishing with the form."""

from __future__ import annotations

from studio.projects.workspace import pending_proposal
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import button, review_run


def test_the_second_tab_is_told_the_proposal_was_already_decided(app, studio_db):
    run = review_run(studio_db)
    proposal = pending_proposal(studio_db, run.id)
    first = app("proposals", run_id=run.id)
    second = app("proposals", run_id=run.id)
    first.session_state["app.author"] = "ana"
    second.session_state["app.author"] = "ben"
    second.text_input(key=f"proposals.reason.{proposal.id}").set_value("too long")

    button(first, "Accept").click().run()
    assert_ok(first)
    button(second, "Reject").click().run()  # its page still shows the pending proposal
    assert_ok(second)

    decisions = studio_db.decisions(proposal_id=proposal.id)
    assert [(d.action.value, d.author) for d in decisions] == [("accept", "ana")]
    errors = texts(second.error)
    assert any(f"(id {proposal.id})" in e and "already decided by ana" in e
               for e in errors), errors


def test_a_stale_tab_stop_after_a_decision_is_answered_too(app, studio_db):
    run = review_run(studio_db)
    proposal = pending_proposal(studio_db, run.id)
    first = app("proposals", run_id=run.id)
    second = app("proposals", run_id=run.id)
    first.session_state["app.author"] = "ana"
    button(first, "Accept").click().run()
    button(second, "Accept").click().run()
    assert len(studio_db.decisions(proposal_id=proposal.id)) == 1
    assert any("already decided by ana" in e for e in texts(second.error)), texts(second.error)
