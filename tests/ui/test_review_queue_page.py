"""The Review page's "Review next" queue under AppTest: the trial shown first, save, confirm and
skip, the time recorded for each, and the Run page's ETA counting the review still expected."""

from __future__ import annotations

import re

import pytest

from studio.engine.people.gates import override
from studio.model.records import EventKind
from studio.projects.reviewing import record_review, review_records
from studio.views.review_queue import DEFAULT_REVIEW_SECONDS
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import review_run

SAVE = "FormSubmitter:review.next.form-Save and next"
SKIP = "FormSubmitter:review.next.form-Skip for now"


def shown_trial(at) -> int:
    """The id of the trial on the card (its header reads "**Trial N (id M)** · ...")."""
    header = next(m.value for m in at.markdown if m.value.startswith("**Trial "))
    return int(re.match(r"\*\*Trial \d+ \(id (\d+)\)\*\*", header).group(1))


@pytest.mark.slow
def test_the_queue_shows_the_margin_trial_first_and_reviews_from_the_form(app, studio_db):
    run = review_run(studio_db)
    at = app("review", run_id=run.id)
    assert "Review next" in texts(at.subheader)
    assert any("could flip the pending decision" in c for c in texts(at.caption))
    first = shown_trial(at)
    header = next(m.value for m in at.markdown if m.value.startswith("**Trial "))
    assert "could flip the pending decision" in header
    reasons = next(m.value for m in at.markdown if m.value.startswith("- "))
    assert "rule would" in reasons and "flip it to" in reasons

    at.number_input(key="review.next.score").set_value(0.9)
    at.text_input(key="review.next.feedback").set_value("reads well")
    at.button(key=SAVE).click().run()
    assert_ok(at)
    active = studio_db.overrides(run.id, include_undone=False)
    assert [(o.trial_id, o.score, o.feedback) for o in active] == [(first, 0.9, "reads well")]
    assert any(re.search(rf"Saved the correction of trial \d+ \(id {first}\)", s)
               for s in texts(at.success))
    second = shown_trial(at)
    assert second != first
    assert at.number_input(key="review.next.score").value is None  # cleared for the next

    at.button(key=SAVE).click().run()  # both fields empty: the judge is confirmed
    third = shown_trial(at)
    at.button(key=SKIP).click().run()
    assert_ok(at)
    assert shown_trial(at) not in (first, second, third)
    records = review_records(studio_db, run.id)
    assert [(r.trial_id, r.action) for r in records] == [
        (first, "corrected"), (second, "confirmed"), (third, "skipped")]
    assert all(r.seconds >= 0 and r.author == at.session_state["app.author"] for r in records)
    assert len(studio_db.overrides(run.id)) == 1  # confirming and skipping change no score


@pytest.mark.slow
def test_a_correction_made_elsewhere_takes_the_trial_out_of_the_queue(app, studio_db):
    run = review_run(studio_db)
    at = app("review", run_id=run.id)
    first = shown_trial(at)
    override(first, score=0.5, author="bo", store=studio_db)
    at.run()
    assert shown_trial(at) != first


@pytest.mark.slow
def test_the_run_page_eta_counts_the_review_still_expected(app, studio_db):
    run = review_run(studio_db)
    at = app("run", run_id=run.id)
    caption = next(c for c in texts(at.caption) if c.startswith("Review mode: the ETA counts"))
    assert f"× {DEFAULT_REVIEW_SECONDS:.0f} s, no review timed yet" in caption
    trial = studio_db.trials(run.id, with_trace=False)[0]
    record_review(studio_db, run.id, trial.id, seconds=42, action="confirmed")
    at.run()
    caption = next(c for c in texts(at.caption) if c.startswith("Review mode: the ETA counts"))
    assert "× 42 s, mean of 1 timed review(s)" in caption


@pytest.mark.slow
def test_review_events_are_read_again_only_when_a_review_is_recorded(app, studio_db,
                                                                     monkeypatch):
    run = review_run(studio_db)
    reads = []
    events = type(studio_db).events

    def counted(self, run_id, **kwargs):
        if kwargs.get("kind") is EventKind.REVIEW_TIME:
            reads.append(run_id)
        return events(self, run_id, **kwargs)

    monkeypatch.setattr(type(studio_db), "events", counted)
    at = app("review", run_id=run.id)
    first = len(reads)
    assert first >= 1
    at.run()
    assert_ok(at)
    assert len(reads) == first  # nothing changed: the cached reviews are used
    record_review(studio_db, run.id, shown_trial(at), seconds=4.0, action="skipped",
                  author="bo")  # recorded elsewhere (another tab or person)
    at.run()
    assert_ok(at)
    assert len(reads) > first


@pytest.mark.slow
def test_a_card_that_changed_under_the_person_refuses_its_first_save(app, studio_db):
    """Issue 30's swap hazard on the queue: another tab reviewed the trial on the card, and the
    next redraw put another trial there. Entries meant for the first must not land on it: the
    first Save is refused and says why; the next one is the person's choice."""
    run = review_run(studio_db)
    at = app("review", run_id=run.id)
    first = shown_trial(at)
    record_review(studio_db, run.id, first, seconds=1.0, action="confirmed", author="ben")
    at.run()  # any redraw (another widget, a refresh): the queue moved on
    assert_ok(at)
    second = shown_trial(at)
    assert second != first
    assert any(w.startswith("The page changed: Trial ") and f"(id {second}) is now shown" in w
               and f"(id {first}), which the card showed" in w for w in texts(at.warning)), \
        texts(at.warning)

    at.number_input(key="review.next.score").set_value(0.3)
    at.button(key=SAVE).click().run()
    assert_ok(at)
    assert studio_db.overrides(run.id) == []
    assert any(f"(id {second}) is now shown. Nothing was saved" in e for e in texts(at.error))
    assert shown_trial(at) == second and not texts(at.warning)

    at.button(key=SAVE).click().run()  # the entry is still in the field: saved on purpose now
    assert [(o.trial_id, o.score) for o in studio_db.overrides(run.id)] == [(second, 0.3)]
