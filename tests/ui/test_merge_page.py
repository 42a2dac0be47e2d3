"""The Proposals page shows a merge readably: its two parents, which component comes from which,
both parents' sums against the merged child's, and no edit box (a merge has no text to edit)."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig, build_engine, create_run, decide
from studio.engine.hosting.worker import get_manager
from studio.model.records import ProposalStatus
from tests.engine import merge_world as world
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts


def merge_waiting(store) -> tuple[str, object]:
    """The merge scenario in review mode, its two reflections accepted, the merge at the gate."""
    run = create_run(store, spec=world.spec(), trainset=world.TRAINSET,
                     config=EvolutionConfig(**world.config(review="review")))
    get_manager(store).start(build_engine(store, run.id))
    seen: set[int] = set()
    while True:
        pending = wait_until(lambda: [p for p in store.proposals(
            run.id, status=ProposalStatus.PENDING) if p.id not in seen], timeout=60,
            message="a proposal at the gate")[0]
        seen.add(pending.id)
        if pending.is_merge:
            return run.id, pending
        decide(pending.id, "accept", store=store)


@pytest.mark.slow
def test_the_proposals_page_shows_a_merge_and_a_person_accepts_it(app, studio_db, script):
    script(world.WORLD, world.reply)
    run_id, merge = merge_waiting(studio_db)
    at = app("proposals", run_id=run_id)
    assert any("merge of #1 and #2" in s for s in texts(at.subheader))
    sources = at.dataframe[0].value
    assert list(sources["component"]) == world.COMPONENTS
    assert list(sources["from"]) == [1, 2]
    assert all("improved by" in why for why in sources["why"])
    labels = {m.label for m in at.metric}
    assert {"Parent #1 sum", "Parent #2 sum", "Merged child sum"} <= labels
    assert not any(a.key == f"proposals.edit.{merge.id}" for a in at.text_area)
    next(b for b in at.button if b.label == "Accept").click().run()
    assert_ok(at)
    assert studio_db.decisions(proposal_id=merge.id)[-1].action.value == "accept"
    assert get_manager(studio_db).handle(run_id).wait(30) == "max_iterations"
    assert studio_db.get_proposal(merge.id).status is ProposalStatus.ACCEPTED
