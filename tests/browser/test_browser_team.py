"""A team on one studio, signed in with a real OpenID Connect provider (``oidc-provider-mock``
on 127.0.0.1; Streamlit's ``st.login`` with ``[auth]`` in secrets.toml), in Debian's headless
Chromium: an unsigned browser sees no data; a reviewer cannot gate; two reviewers in two
browsers label the same trials blind; the Agreement page's Krippendorff's alpha is the
`krippendorff` package's on those labels; an owner's adjudication is what the next reflection
reads. The run itself runs in this process (scripted model), so its reflection prompts are
recorded here. Screenshots go to ``/tmp/ui_shots_team/`` (look at them).

Run with ``pytest -m browser tests/browser/test_browser_team.py``.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import krippendorff
import numpy as np
import pytest
import yaml

from studio.engine.hosting.worker import get_manager
from studio.model.config import EvolutionConfig
from studio.model.team import ReviewSettings, Role
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from studio.runtime.providers.scripted import recorded_requests, request_mark
from studio.store import open_store
from tests.helpers import wait_until
from tests.ui.browser import chromium_pages, failure_shot, full_page_shot, settled, studio_server
from tests.ui.oidc import auth_secrets, oidc_provider, sign_in

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/ui_shots_team")
OWNER, ANA, BO = "olga@example.com", "ana@example.com", "bo@example.com"
PROJECT = {"name": "haiku-team",
           "agent": {"name": "writer", "model": "scripted/demo",
                     "instruction": "Write a haiku about the given topic."},
           "critic": {"type": "agent", "name": "rule_critic", "schema": "advanced",
                      "model": "scripted/demo"},
           "reflection": {"model": "scripted/demo"},
           "dataset": {"train": [{"topic": "autumn leaves"}, {"topic": "city rain"}]}}
LABELS = {ANA: {(0, 0): 0.1, (0, 1): 0.7, (1, 0): 0.3, (1, 1): 0.9},
          BO: {(0, 0): 0.9, (0, 1): 0.8, (1, 0): 0.2, (1, 1): 0.9}}
"""Each reviewer's score per (candidate, example): the seed's and the proposal's trials, the four
the queue offers. They disagree only on the seed's example 0."""
RULING = "ADJUDICATED: name the season in the second line"


@pytest.fixture
def team_studio(tmp_path):
    """A review-mode run at its first gate (one proposal at a time), reviewed by two people
    per trial, blind; olga owns the studio, ana and bo review; the studio signs in with a
    provider on 127.0.0.1."""
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    for name, role in ((OWNER, Role.OWNER), (ANA, Role.REVIEWER), (BO, Role.REVIEWER)):
        store.save_user(name, role)
    path = tmp_path / "haiku_team.yaml"
    path.write_text(yaml.safe_dump(PROJECT))
    project = import_example(store, path)
    store.save_review_settings(ReviewSettings(project="haiku-team", reviewers_per_trial=2,
                                              blind=True))
    run = start_project_run(store, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=2, parallel_proposals=1, review="review", seed=7))
    wait_until(lambda: pending_proposal(store, run.id), 60, message="the first gate")
    with oidc_provider() as issuer:
        secrets, port = auth_secrets(tmp_path, issuer)
        with studio_server(db, port=port, flags=("--secrets.files", str(secrets))) as url:
            yield url, store, run
    manager = get_manager(store)
    if store.get_run(run.id).status.is_active:
        manager.stop(run.id)
    handle = manager.handle(run.id)
    if handle is not None:
        with contextlib.suppress(Exception):
            handle.wait(timeout=30)
    store.close()


def body(page) -> str:
    return page.evaluate("() => document.body.innerText")


def test_an_unsigned_browser_sees_no_data_and_a_reviewer_cannot_gate(team_studio):
    url, store, run = team_studio
    store.save_review_settings(ReviewSettings(project="haiku-team"))  # not blind: she sees it
    with chromium_pages(2) as (stranger, ana):
        try:
            stranger.goto(f"{url}/proposals?run={run.id}")
            stranger.get_by_role("button", name="Sign in").wait_for()
            settled(stranger)
            shown = body(stranger)
            assert "sign in to see its projects and runs" in shown
            for secret in (run.id, "haiku-team", "Write a haiku", "Proposals", "proposal"):
                assert secret not in shown, secret
            full_page_shot(stranger, SHOTS / "01_unsigned.png")
            sign_in(stranger, url, "mallory@example.com")  # a real account, but no role here
            stranger.get_by_text("has not given you a role").wait_for()
            assert run.id not in body(stranger) and "haiku-team" not in body(stranger)

            sign_in(ana, url, ANA)
            ana.goto(f"{url}/proposals?run={run.id}")
            ana.get_by_text("Deciding a proposal needs the owner role: you are a reviewer "
                            "here.").wait_for()
            ana.get_by_text("Child minibatch sum").wait_for()  # she reads the evidence
            assert ana.get_by_role("button", name="Accept").count() == 0
            assert ana.get_by_role("button", name="Reject").count() == 0
            full_page_shot(ana, SHOTS / "02_reviewer_cannot_gate.png")
            assert store.decisions(run_id=run.id) == []
        except Exception:
            failure_shot(stranger, SHOTS / "failure_stranger.png")
            failure_shot(ana, SHOTS / "failure_ana.png")
            raise


def test_two_reviewers_label_blind_then_an_owner_settles_what_the_reflection_reads(team_studio):
    url, store, run = team_studio
    first_gate = _reflections()  # the fixture's run reflected once to reach its first gate
    assert first_gate and not any(RULING in p for p in first_gate)
    mark = request_mark()
    with chromium_pages(3) as (ana, bo, olga):
        try:
            given = {}
            for page, name in ((ana, ANA), (bo, BO)):
                sign_in(page, url, name)
                page.goto(f"{url}/review?run={run.id}")
                given[name] = label_queue(page, name, store, run.id)
            full_page_shot(bo, SHOTS / "04_bo_done.png")
            both = sorted(set(given[ANA]) & set(given[BO]))
            assert len(both) >= 2  # the second reviewer was offered what the first labelled

            sign_in(olga, url, OWNER)
            olga.goto(f"{url}/agreement?run={run.id}")
            olga.get_by_text("Disagreements between reviewers (1 open)").wait_for()
            alpha = metric(olga, "Krippendorff's alpha")
            trials = sorted(set(given[ANA]) | set(given[BO]))
            data = np.array([[given[name].get(t, np.nan) for t in trials] for name in given])
            reference = krippendorff.alpha(reliability_data=data,
                                           level_of_measurement="interval")
            assert alpha == f"{reference:.3f}"
            full_page_shot(olga, SHOTS / "05_agreement.png")

            settle(olga)
            olga.goto(f"{url}/proposals?run={run.id}")
            olga.get_by_label("Reason for rejecting (the next reflection reads it)").fill(
                "keep it short")
            olga.get_by_role("button", name="Reject").click()
            reflected = wait_until(lambda: [p for p in _reflections(since=mark) if RULING in p],
                                   90, step=0.2, message="the next reflection")
            assert '"score": 0.4' in reflected[-1]
        except Exception:
            for page, name in ((ana, "ana"), (bo, "bo"), (olga, "olga")):
                failure_shot(page, SHOTS / f"failure_{name}.png")
            raise


def label_queue(page, name: str, store, run_id: str) -> dict[int, float]:
    """Label every trial the queue offers (its most useful labels: here the seed's and the
    child's trials, as far as a label could still flip the pending decision, and those the
    other reviewer labelled), checking that nothing of the judge or of the other reviewer shows
    before this reviewer's label. Returns ``{trial id: score}``."""
    page.get_by_role("heading", name="Review next").wait_for()
    given: dict[int, float] = {}
    while (header := next_card(page, list(given))) is not None:
        found = re.search(r"example (\d+) · \w+ · candidate #(\d+)", header)
        score = LABELS[name][int(found.group(2)), int(found.group(1))]
        assert "judge hidden until you label" in header
        shown = body(page)
        assert "Judge's feedback" not in shown and "Corrected by" not in shown
        assert not [other for other in LABELS if other != name and other in
                    shown.split("Reviewers (")[0]]  # no one else's label
        if not given:
            full_page_shot(page, SHOTS / f"03_{name.split('@')[0]}_blind.png")
        page.get_by_label("Your score").fill(str(score))
        page.get_by_label("Your score").press("Enter")
        trial_id = int(re.search(r"\(id (\d+)\)", header).group(1))
        given[trial_id] = score
        wait_until(lambda t=trial_id: any(o.trial_id == t and o.reviewer == name
                                          for o in store.overrides(run_id)), 30,
                   message=f"{name}'s label")
    return given


def next_card(page, done: list[int]) -> str | None:
    """The header of the next trial on the card (none of ``done``); None once the queue says
    nothing waits. Both are read from one snapshot of the page's text: a card seen visible and
    read a moment later could be gone by then (the rerun after the last label removes it), and
    reading a vanished element waits for it until its timeout."""
    found: list[str | None] = []

    def shown() -> bool:
        text = body(page)
        if "Nothing waits for your eyes now" in text:
            found[:] = [None]
            return True
        header = re.search(r"^Trial \d+ \(id (\d+)\) ·.*$", text, re.MULTILINE)
        if header is None:
            return False
        found[:] = [header.group(0)]
        return int(header.group(1)) not in done

    wait_until(shown, 30, step=0.1, message="the next trial's card (one not labelled yet), "
                                            "or the queue saying nothing waits")
    return found[0]


def metric(page, label: str) -> str:
    box = page.locator("[data-testid=stMetric]").filter(has_text=label).first
    return box.locator("[data-testid=stMetricValue]").inner_text().strip()


def settle(page) -> None:
    """The owner adjudicates the open disagreement (the seed's example 0)."""
    page.get_by_label("Adjudicated score").fill("0.4")
    page.get_by_label("Adjudicated feedback (optional)").fill(RULING)
    page.get_by_role("button", name="Settle").click()
    page.get_by_text("Settled at 0.400 by olga").wait_for()
    full_page_shot(page, SHOTS / "06_settled.png")


def _reflections(since: int = 0) -> list[str]:
    """Reflection prompts the scripted provider received after ``since`` (a request mark: the
    provider keeps only its latest 2,000 requests, so a count taken earlier is no index)."""
    return [r.prompt_text for r in recorded_requests("demo", since=since)
            if "## Component Text to Improve" in r.prompt_text]
