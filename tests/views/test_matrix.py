"""The output matrix's logic: cells, verdicts, the filters and a bounded search."""

from __future__ import annotations

import pytest

from studio.model.feedback import Feedback
from studio.model.records import Candidate, Example, Split, Trial, TrialPhase
from studio.model.verdicts import EvalStatus, MetricVerdict, ScoreRule
from studio.model.verdicts import Verdict as Verdict_
from studio.views.matrix import (
    SEARCH_LIMIT,
    MatrixFilter,
    SearchError,
    Verdict,
    apply_filter,
    build_matrix,
    compile_search,
    judged_by_adk,
    matrix_frame,
    pass_counts,
    verdict_frame,
    version_labels,
)

RUN = "r1"


def example(eid: int, text: str) -> Example:
    return Example(id=eid, run_id=RUN, split=Split.VAL, index=eid - 1, data={"input": text})


def trial(tid: int, cid: int, eid: int, output: str, score: float | None) -> Trial:
    return Trial(id=tid, run_id=RUN, candidate_id=cid, example_id=eid, split=Split.VAL,
                 example_index=eid - 1, phase=TrialPhase.VALSET, input_text=f"in {eid}",
                 output=output, feedback=Feedback(score=score, text="fine"))


EXAMPLES = [example(1, "harbor fog"), example(2, "desert wind"), example(3, "paper lantern")]
CANDIDATES = [Candidate(id=10, run_id=RUN, index=0, components={"instruction": "a"},
                        content_hash="a"),
              Candidate(id=11, run_id=RUN, index=1, components={"instruction": "b"},
                        content_hash="b")]
TRIALS = {
    10: [trial(1, 10, 1, "fog", 0.2), trial(2, 10, 2, "same", 0.9), trial(3, 10, 3, "x", None)],
    11: [trial(4, 11, 1, "fog rolls in", 0.8), trial(5, 11, 2, "same", 0.9),
         trial(9, 11, 1, "a later re-run", 0.0)],
}


def built(pass_at: float = 0.5):
    versions = version_labels(CANDIDATES, [10, 11], best_id=11)
    return build_matrix(versions, TRIALS, EXAMPLES, pass_at)


def test_columns_are_named_by_index_and_role():
    assert [v.label for v in version_labels(CANDIDATES, [10, 11, 99], 11)] == ["#0 seed",
                                                                                "#1 best"]


def test_each_cell_is_the_first_validation_trial_with_its_verdict():
    matrix = built()
    first = matrix.rows[0]
    assert first.cells[11].output == "fog rolls in"  # not the later re-run
    assert [c.verdict for c in first.cells.values()] == [Verdict.FAIL, Verdict.PASS]
    third = matrix.rows[2]
    assert third.cells[10].verdict is Verdict.UNSCORED
    assert third.cells[11].verdict is Verdict.MISSING


def test_frame_cells_show_mark_score_and_clipped_output_and_colour_by_verdict():
    matrix = built()
    frame = matrix_frame(matrix, matrix.rows)
    assert list(frame.columns) == ["example", "#0 seed", "#1 best"]
    assert frame.loc[0, "#0 seed"] == "✗ 0.20 · fog"
    assert frame.loc[2, "#1 best"] == "· not scored"
    colours = verdict_frame(matrix, matrix.rows)
    assert "#ffd6d6" in colours.loc[0, "#0 seed"] and "#d8f3dc" in colours.loc[0, "#1 best"]
    assert pass_counts(matrix) == {"#0 seed": "1/3", "#1 best": "2/2"}


def test_only_rows_where_versions_differ():
    shown = apply_filter(built(), MatrixFilter(differ_only=True))
    assert [r.example.id for r in shown.rows] == [1, 3] and shown.hidden == 1


def test_only_failures_counts_unscored_and_missing_cells():
    shown = apply_filter(built(), MatrixFilter(failures_only=True))
    assert [r.example.id for r in shown.rows] == [1, 3]
    at_zero = apply_filter(built(pass_at=0.0), MatrixFilter(failures_only=True))
    assert [r.example.id for r in at_zero.rows] == [3]


def test_search_reads_inputs_and_outputs_case_blind_and_regex_on_request():
    assert [r.example.id for r in apply_filter(built(), MatrixFilter(search="ROLLS")).rows] == [1]
    assert [r.example.id for r in apply_filter(built(), MatrixFilter(search="desert")).rows] == [2]
    regex = MatrixFilter(search=r"^fog\b", regex=True)
    assert [r.example.id for r in apply_filter(built(), regex).rows] == [1]
    literal = MatrixFilter(search="f.g")  # not a regex unless asked
    assert apply_filter(built(), literal).rows == []


@pytest.mark.parametrize(("text", "says"), [
    ("(unclosed", "does not compile"),
    ("(a+)+$", "repeats a group"),
    ("x" * (SEARCH_LIMIT + 1), "keep it under"),
])
def test_a_search_that_cannot_run_is_a_message_and_the_other_filters_still_apply(text, says):
    with pytest.raises(SearchError, match=says) as raised:
        compile_search(text, regex=True)
    assert raised.value.value == text
    shown = apply_filter(built(), MatrixFilter(failures_only=True, search=text, regex=True))
    assert says in (shown.problem or "") and len(shown.rows) == 2


def adk_judged(tid: int, cid: int, eid: int, score: float, status: str) -> Trial:
    """A trial judged by ADK's criteria: its score (graded) and ADK's verdict disagree on a
    pass mark of 0.5 when the case fails with a high score."""
    metrics = [MetricVerdict(name="tool_trajectory_avg_score", score=1.0, threshold=1.0,
                             status=EvalStatus.PASSED),
               MetricVerdict(name="response_match_score", score=0.19, threshold=0.8,
                             status=EvalStatus(status))]
    verdict = Verdict_.of(metrics, ScoreRule.GRADED)
    return trial(tid, cid, eid, "haiku", score).model_copy(update={
        "feedback": Feedback(score=score, text="adk", verdict=verdict)})


def test_a_cell_judged_by_adks_criteria_shows_adks_verdict_beside_the_score():
    failing = adk_judged(1, 10, 1, 0.62, "FAILED")
    versions = version_labels(CANDIDATES, [10], best_id=11)
    matrix = build_matrix(versions, {10: [failing]}, EXAMPLES[:1], pass_at=0.5)
    assert matrix.rows[0].cells[10].verdict is Verdict.FAIL  # 0.62 >= 0.5, yet ADK failed it
    assert matrix_frame(matrix, matrix.rows).loc[0, "#0 seed"] == "✗ 0.62 · haiku"
    assert judged_by_adk(matrix) and not judged_by_adk(built())
