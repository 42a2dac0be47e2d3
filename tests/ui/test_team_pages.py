"""The team's pages under AppTest, with the acting person set as a signed-in session sets it:
a reviewer cannot gate and may comment, a blind reviewer sees no judge's score nor the run's
scores, a viewer labels nothing, an owner adjudicates a disagreement on Agreement, and the
Team page manages users and review settings."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from studio.engine.people.gates import override
from studio.model.records import TrialPhase
from studio.model.team import Actor, Role
from studio.projects.team import add_user, save_review_settings
from studio.projects.workspace import pending_proposal
from tests.ui.conftest import APP, assert_ok, texts
from tests.ui.test_pages import button, review_run

OWNER = Actor("olga@example.com", Role.OWNER, verified=True)
REVIEWER = Actor("ana@example.com", Role.REVIEWER, verified=True)
VIEWER = Actor("vic@example.com", Role.VIEWER, verified=True)


def page_as(actor: Actor, page: str, run_id: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["app.actor"] = actor
    at.session_state["app.run_id"] = run_id
    at.run()
    at.switch_page(f"../pages/{page}.py").run()
    assert_ok(at)
    return at


def shown(at) -> str:
    return "\n".join(texts(at.markdown) + texts(at.caption) + texts(at.info) + texts(at.error))


@pytest.mark.slow
def test_a_reviewer_cannot_gate_but_comments_on_the_proposal(studio_db):
    run = review_run(studio_db)
    proposal = pending_proposal(studio_db, run.id)
    at = page_as(REVIEWER, "proposals", run.id)
    assert not [b for b in at.button if b.label in ("Accept", "Reject", "Stop the run")]
    assert "Deciding a proposal needs the owner role: you are a reviewer here." in shown(at)
    at.text_area[0].set_value("the second rule contradicts the first")
    next(b for b in at.button if b.label == "Comment").click().run()
    assert_ok(at)
    assert "the second rule contradicts the first" in shown(at)
    owner = page_as(OWNER, "proposals", run.id)
    assert "the second rule contradicts the first" in shown(owner)
    button(owner, "Accept").click().run()
    assert [d.author for d in studio_db.decisions(proposal_id=proposal.id)] == [OWNER.name]


@pytest.mark.slow
def test_a_blind_reviewer_sees_neither_the_judge_nor_the_run_s_scores(studio_db):
    run = review_run(studio_db)
    save_review_settings(studio_db, Actor("local"), "haiku-scripted", reviewers_per_trial=2,
                         blind=True)
    at = page_as(REVIEWER, "review", run.id)
    text = shown(at)
    assert "judge hidden until you label" in text and "Blind review" in text
    assert "Judge's feedback" not in texts(at.caption)
    assert "Correct many trials" not in texts(at.subheader)
    for page in ("run", "compare", "agreement", "proposals"):
        assert "This run is reviewed blind" in shown(page_as(REVIEWER, page, run.id))
    assert "judge hidden" not in shown(page_as(OWNER, "review", run.id))  # owners see all


@pytest.mark.slow
def test_a_viewer_labels_nothing(studio_db):
    run = review_run(studio_db)
    at = page_as(VIEWER, "review", run.id)
    assert "Labelling and correcting trials needs the reviewer role" in shown(at)
    assert "Review next" not in texts(at.subheader)
    assert "Changing a project needs the owner role" in shown(page_as(VIEWER, "projects",
                                                                       run.id))


@pytest.mark.slow
def test_an_owner_settles_a_disagreement_on_the_agreement_page(studio_db):
    run = review_run(studio_db)
    trial = studio_db.trials(run.id, phase=TrialPhase.PARENT)[0]
    for actor, score in ((REVIEWER, 0.1), (Actor("bo@example.com", Role.REVIEWER, True), 0.9)):
        override(trial.id, score=score, author=actor.name, reviewer=actor.name, store=studio_db)
    at = page_as(OWNER, "agreement", run.id)
    assert any("Disagreements between reviewers (1 open)" in s for s in texts(at.subheader))
    assert "Krippendorff's alpha" in [m.label for m in at.metric]
    at.number_input(key="team.ruling.score").set_value(0.3)
    next(b for b in at.button if b.label == "Settle").click().run()
    assert_ok(at)
    assert studio_db.get_trial(trial.id).effective_score == 0.3
    assert [o.adjudicated for o in studio_db.overrides(run.id)] == [False, False, True]
    reviewer = page_as(REVIEWER, "agreement", run.id)
    assert not [b for b in reviewer.button if b.label == "Settle"]
    assert "Adjudicating a disagreement needs the owner role" in shown(reviewer)


@pytest.mark.slow
def test_the_team_page_adds_users_and_sets_review_settings(app, studio_db):
    review_run(studio_db)
    at = app("team")
    assert "Sign-in is not configured" in shown(at)
    at.text_input(key="team.name").set_value("olga@example.com")
    at.selectbox(key="team.role").set_value("owner")
    button(at, "Save").click().run()
    assert_ok(at)
    assert studio_db.get_user("olga@example.com").role is Role.OWNER
    at.number_input(key="team.count.haiku-scripted").set_value(2)
    at.checkbox(key="team.blind.haiku-scripted").check()
    button(at, "Save settings").click().run()
    assert_ok(at)
    assert studio_db.review_settings("haiku-scripted").reviewers_per_trial == 2
    add_user(studio_db, OWNER, REVIEWER.name, "reviewer")
    reviewer = page_as(REVIEWER, "team", "none")
    assert "Managing users and review settings needs the owner role" in shown(reviewer)


AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32,
        "client_id": "studio", "client_secret": "s",
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}


@pytest.mark.slow
def test_with_sign_in_configured_an_unsigned_session_sees_only_the_sign_in(studio_db):
    run = review_run(studio_db)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.secrets["auth"] = AUTH
    at.session_state["app.run_id"] = run.id
    at.run()
    assert_ok(at)
    assert [b.label for b in at.button] == ["Sign in"]
    everything = shown(at) + "\n".join(texts(at.title) + texts(at.subheader) +
                                       [str(s.value) for s in at.sidebar.selectbox])
    assert run.id not in everything and "haiku-scripted" not in everything
    assert "sign in to see its projects and runs" in everything
    half = AppTest.from_file(str(APP), default_timeout=60)
    half.secrets["auth"] = {"client_id": "studio"}
    half.run()
    assert any("cannot work: [auth] lacks redirect_uri, cookie_secret" in e
               for e in texts(half.error))
    assert not half.button
