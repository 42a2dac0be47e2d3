"""Two tabs deciding one proposal (issue 20): one decision is stored, and the tab that lost
the race is told who decided and when, on the Proposals page itself, instead of its click
vanishing with the form. A click on a proposal the page swapped in under the person (issue 30)
decides nothing."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig, decide
from studio.engine.people.gates import pending_in_order
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import SCRIPTED, button, review_run


@pytest.mark.slow
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


@pytest.mark.slow
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


def two_waiting(studio_db):
    """A review run with two lanes, both of whose proposals wait at the gate."""
    project = import_example(studio_db, SCRIPTED)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=2, review="review", seed=7, parallel_proposals=2))
    first, second = wait_until(
        lambda: len(waiting := pending_in_order(studio_db.proposals(run.id))) == 2 and waiting,
        timeout=60, message="both lanes' proposals wait")
    return run, first, second


@pytest.mark.slow
def test_a_click_on_the_proposal_the_page_swapped_in_is_refused_once(app, studio_db):
    """Issue 30: ben's page showed the first proposal; ana decided it, and ben's page swapped
    in the second. His click decides nothing and says so; his next click is his choice."""
    run, first, second = two_waiting(studio_db)
    ana = app("proposals", run_id=run.id)
    ben = app("proposals", run_id=run.id)
    ana.session_state["app.author"] = "ana"
    ben.session_state["app.author"] = "ben"
    button(ana, "Accept").click().run()
    assert_ok(ana)

    ben.run()  # the page's watcher redraws it: the second proposal is shown now
    assert_ok(ben)
    changed = [w for w in texts(ben.warning) if w.startswith("The page changed")]
    assert changed and f"(id {second.id}) is now shown" in changed[0], texts(ben.warning)
    assert f"(id {first.id}), which this page showed you, was already decided by ana at" \
        in changed[0]
    button(ben, "Accept").click().run()
    assert_ok(ben)
    assert studio_db.decisions(proposal_id=second.id) == []
    assert any(f"the page changed: proposal {second.id} is now shown" in e
               for e in texts(ben.error)), texts(ben.error)
    assert not [w for w in texts(ben.warning) if w.startswith("The page changed")]

    button(ben, "Accept").click().run()
    assert [(d.action.value, d.author) for d in studio_db.decisions(proposal_id=second.id)] \
        == [("accept", "ben")]


@pytest.mark.slow
def test_a_tab_whose_proposal_was_decided_elsewhere_says_who_and_when(app, studio_db):
    """The losing tab need not click to be told: its page says who decided what it showed."""
    run = review_run(studio_db)
    proposal = pending_proposal(studio_db, run.id)
    tab = app("proposals", run_id=run.id)
    decide(proposal.id, "accept", author="cli", store=studio_db)
    tab.run()
    assert_ok(tab)
    assert any(f"(id {proposal.id}), which this page showed you, was already decided by cli at"
               in w for w in texts(tab.warning)), texts(tab.warning)


@pytest.mark.slow
def test_a_page_drawn_after_a_change_elsewhere_is_drawn_once(app, studio_db, monkeypatch):
    """A page drawn after a decision made elsewhere shows it already: its watcher does not
    restart the drawing (a restart right after the title cost a second drawing, and the
    browser could lose the heading that followed: seen in a CI run of the five-tab race)."""
    from components import proposal_view
    from studio.model.records import ProposalStatus

    run = review_run(studio_db)
    proposal = pending_proposal(studio_db, run.id)
    page = app("proposals", run_id=run.id)
    decide(proposal.id, "accept", author="cli", store=studio_db)
    wait_until(lambda: studio_db.get_proposal(proposal.id).status is not ProposalStatus.PENDING,
               timeout=30, message="the run to apply the decision")
    drawn: list[str] = []
    watch = proposal_view.watch  # the page's first step after its title
    monkeypatch.setattr(proposal_view, "watch",
                        lambda run_id: drawn.append(run_id) or watch(run_id))
    page.run()  # a click, a widget, a tab's return: any drawing of the page
    assert_ok(page)
    assert drawn == [run.id]
