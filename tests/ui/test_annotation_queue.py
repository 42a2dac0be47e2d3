"""The Review page as an annotation queue, under AppTest: the card shows the expected answer and
the judge's dimension scores; a corrected output is stored with the correction and shown as a
diff; Previous and Next move through the sitting; "n of N done" counts; *Correct one trial*
shows an existing correction; the corrections list shows a correction on the rerun right after
it was saved (issue 21: the annotation queue, defects 3 and 4)."""

from __future__ import annotations

import re

import pytest

from studio.engine import override
from tests.browser.test_browser_annotate import expected_review_run
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_review_queue_page import SAVE, shown_trial

PREVIOUS = "FormSubmitter:review.next.form-Previous"
NEXT = "FormSubmitter:review.next.form-Next"
CORRECTED = "Harbor fog at dawn, the cranes fade one by one."


def infos(at) -> list[str]:
    """The info boxes' text without Markdown escapes."""
    return [re.sub(r"\\(.)", r"\1", i.value) for i in at.info]


def code_blocks(at) -> list[str]:
    return [c.value for c in at.code]


def done_caption(at) -> str:
    return next(c for c in texts(at.caption) if re.search(r"\d+ of \d+ done", c))


@pytest.mark.slow
def test_the_card_shows_the_expected_answer_and_the_dimension_scores(app, studio_db,
                                                                      tmp_path):
    run = expected_review_run(studio_db, tmp_path)
    at = app("review", run_id=run.id)
    trial = studio_db.get_trial(shown_trial(at))
    assert "Expected answer" in texts(at.caption)
    assert any(re.fullmatch(r"A haiku about .*, three lines\.", c) for c in code_blocks(at))
    assert "Judge's dimension scores" in texts(at.caption) and trial.feedback.dimensions
    dims = next(m.value for m in at.markdown if m.value.startswith("- lines:"))
    assert all(f"- {name}:" in dims for name in trial.feedback.dimensions)
    assert re.match(r"\*\*0 of \d+ done · 0 s spent\*\*", done_caption(at))
    assert "Keyboard shortcuts (?)" in [e.label for e in at.expander]


@pytest.mark.slow
def test_a_corrected_output_is_saved_shown_as_a_diff_and_reached_by_previous(app, studio_db,
                                                                             tmp_path):
    run = expected_review_run(studio_db, tmp_path)
    at = app("review", run_id=run.id)
    first = shown_trial(at)
    assert at.button(key=PREVIOUS).disabled and at.button(key=NEXT).disabled
    at.number_input(key="review.next.score").set_value(0.2)
    at.text_area(key="review.next.corrected").set_value(CORRECTED)
    at.button(key=SAVE).click().run()
    assert_ok(at)
    [saved] = studio_db.overrides(run.id)
    assert (saved.trial_id, saved.score, saved.corrected_output) == (first, 0.2, CORRECTED)
    assert any("(score 0.20, corrected output)" in s for s in texts(at.success))
    assert at.text_area(key="review.next.corrected").value == ""  # cleared for the next
    second = shown_trial(at)
    assert second != first and re.match(r"\*\*1 of \d+ done", done_caption(at))

    at.button(key=PREVIOUS).click().run()  # back on the first, with its correction
    assert_ok(at)
    assert shown_trial(at) == first
    assert any("shown earlier in this sitting" in m.value for m in at.markdown)
    assert "What the answer should have been" in texts(at.caption)
    assert any("Corrected by" in i and "score 0.200" in i for i in infos(at))
    assert not at.button(key=NEXT).disabled
    at.button(key=SAVE).click().run()  # nothing typed: kept as it was, and on to the queue
    assert any(f"(id {first}) as it was." in s for s in texts(at.success))
    assert shown_trial(at) == second and len(studio_db.overrides(run.id)) == 1

    at.button(key=PREVIOUS).click().run()
    at.button(key=NEXT).click().run()
    assert_ok(at)
    assert shown_trial(at) == second


@pytest.mark.slow
def test_correct_one_trial_shows_the_correction_and_the_list_shows_it_at_once(app, studio_db,
                                                                              tmp_path):
    run = expected_review_run(studio_db, tmp_path)
    at = app("review", run_id=run.id)
    assert "No corrections yet in this run." in texts(at.caption)
    chosen = at.selectbox(key="review.single.trial").value
    at.text_area(key="review.single.corrected").set_value(CORRECTED)
    next(b for b in at.button if b.label == "Save correction").click().run()
    assert_ok(at)
    assert [(o.trial_id, o.corrected_output) for o in studio_db.overrides(run.id)] == [
        (chosen, CORRECTED)]
    assert "No corrections yet in this run." not in texts(at.caption)  # no stale list
    assert len(at.dataframe[-1].value) == 1  # the corrections list, on this very rerun
    assert any("Corrected by" in i and "a corrected output" in i for i in infos(at))


@pytest.mark.slow
def test_a_correction_made_elsewhere_shows_in_correct_one_trial(app, studio_db, tmp_path):
    run = expected_review_run(studio_db, tmp_path)
    at = app("review", run_id=run.id)
    chosen = at.selectbox(key="review.single.trial").value
    override(chosen, score=0.7, feedback="fine", author="bo", store=studio_db)
    at.run()
    assert_ok(at)
    assert any("Corrected by bo" in i and "score 0.700; feedback “fine”" in i for i in infos(at))
