"""The Proposals page with parallel proposals in review mode: every waiting proposal named in
the order to decide them, the first shown; deciding it brings the next."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig
from studio.engine.people.gates import pending_in_order
from studio.engine.people.history import proposal_numbers
from studio.projects.workspace import import_example, start_project_run
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import SCRIPTED, button


@pytest.mark.slow
def test_two_waiting_proposals_are_listed_in_order_and_decided_one_after_the_other(
        app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=2, review="review", seed=7, parallel_proposals=2))
    first, second = wait_until(
        lambda: len(waiting := pending_in_order(studio_db.proposals(run.id))) == 2 and waiting,
        timeout=60, message="both lanes' proposals wait")
    assert (first.iteration, second.iteration) == (1, 2)
    numbers = proposal_numbers(studio_db.proposals(run.id))  # the run's own, as people read
    named = {p.id: f"Proposal {numbers[p.id]} (id {p.id})" for p in (first, second)}
    at = app("proposals", run_id=run.id)
    assert any(named[first.id] in s for s in texts(at.subheader))
    note = next(s for s in texts(at.info) if "proposals wait" in s)
    assert note.index(named[first.id]) < note.index(named[second.id])
    button(at, "Accept").click().run()
    assert_ok(at)
    assert studio_db.decisions(proposal_id=first.id)[-1].action.value == "accept"
    at.run()
    assert any(named[second.id] in s for s in texts(at.subheader))
    assert not any("proposals wait" in s for s in texts(at.info))
