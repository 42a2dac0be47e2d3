"""The "waiting for you" inbox under AppTest: the sidebar badge, the Home column and the line
under the run picker for a run whose proposal waits, gone once it is decided (issue 21)."""

from __future__ import annotations

import pytest

from studio.projects.workspace import pending_proposal
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import finished_run, review_run


def badges(at) -> list[str]:
    """The sidebar's badges (``st.badge`` is Markdown: ``:orange-badge[...]``)."""
    return [s for s in texts(at.sidebar.markdown) if "-badge[" in s]


@pytest.mark.slow
def test_a_waiting_proposal_shows_in_the_badge_on_home_and_by_the_picker(app, studio_db):
    done = finished_run(studio_db)
    run = review_run(studio_db)
    at = app()
    assert any("1 run waiting for you" in b for b in badges(at)), badges(at)
    table = at.dataframe(key="home.runs").value.set_index("id")
    assert table.loc[run.id, "waiting"].startswith("waiting ")
    assert table.loc[done.id, "waiting"] == ""
    assert table.loc[done.id, "stop reason"] == "reached its iteration limit"
    assert table.loc[done.id, "gain"] > 0 and table.loc[done.id, "best"] > 0
    waits = "A proposal of this run waits for your decision."
    # a new session opens the run that waits for the person, not "No run yet"
    assert at.session_state["app.run_id"] == run.id
    assert any(waits in s for s in texts(at.sidebar.caption))
    at.selectbox(key="app.run_picker").set_value(done.id).run()
    assert not any(waits in s for s in texts(at.sidebar.caption))
    at.selectbox(key="app.run_picker").set_value(run.id).run()
    assert any(waits in s for s in texts(at.sidebar.caption))


@pytest.mark.slow
def test_a_new_session_opens_the_newest_run_when_none_waits_and_keeps_a_chosen_one(
        app, studio_db):
    older, newer = finished_run(studio_db), finished_run(studio_db, seed=3)
    at = app("run")
    assert at.session_state["app.run_id"] == newer.id
    assert not any("No run yet" in s for s in texts(at.info))
    assert any(newer.id in s for s in texts(at.caption))  # the Run page shows it
    at.selectbox(key="app.run_picker").set_value(older.id).run()
    at.run()
    assert at.session_state["app.run_id"] == older.id  # the person's choice stays
    chosen = app("run", run_id=older.id)  # a run in the URL (a link, a refresh) wins
    assert chosen.session_state["app.run_id"] == older.id


@pytest.mark.slow
def test_the_badge_opens_the_oldest_waiting_proposal_and_clears_once_decided(app, studio_db):
    run = review_run(studio_db, max_iterations=1)  # one gate: nothing waits after it
    proposal = pending_proposal(studio_db, run.id)
    at = app()
    next(b for b in at.button if b.label == "Decide the oldest").click().run()
    assert_ok(at)
    assert texts(at.title) == ["Proposals"]
    assert any("waiting for you" in b for b in badges(at))
    at.button(key=f"proposals.accept.{proposal.id}").click().run()
    assert_ok(at)
    assert not any("waiting for you" in b for b in badges(at))  # at once, not after the TTL
    wait_until(lambda: studio_db.get_run(run.id).status.value == "completed", timeout=60)
    at.run()
    assert not any("waiting for you" in b for b in badges(at))
