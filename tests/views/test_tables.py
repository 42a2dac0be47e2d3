"""Tables, filters, labels and progress shown by the studio's pages."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pandas as pd

from studio.engine.people.history import proposal_row
from studio.model.evidence import Evidence, Sums
from studio.model.feedback import Feedback
from studio.model.records import (
    Decision,
    DecisionAction,
    Override,
    Proposal,
    ProposalStatus,
    Run,
    RunEvent,
    RunStatus,
    Split,
    Trial,
    TrialPhase,
)
from studio.model.verdicts import EvalStatus, MetricVerdict, ScoreRule, Verdict
from studio.views.tables import (
    dimension_scores,
    evidence_frame,
    format_duration,
    format_score,
    metric_rows,
    optimised_note,
    override_changes,
    override_signature,
    progress_summary,
    proposal_history,
    review_frame,
    run_label,
    shown_columns,
    trace_tool_calls,
    trial_frame,
)


def trial(id_, *, score=0.5, iteration=1, phase=TrialPhase.PARENT, candidate=1, error=None,
          override=None, example=1, proposal_id=None):
    return Trial(id=id_, run_id="r", candidate_id=candidate, example_id=example,
                 split=Split.TRAIN, example_index=example, iteration=iteration, phase=phase,
                 input_text=f"in {id_}", output=f"out {id_}", score=score,
                 feedback={"feedback": f"judge {id_}"}, error=error, override=override,
                 proposal_id=proposal_id)


def test_scores_none_is_could_not_evaluate_never_zero():
    assert format_score(None) == "could not evaluate"
    assert format_score(0.0) == "0.000"
    assert format_score(math.nan, missing="n/a") == "n/a"
    frame = trial_frame([trial(1, score=None, error="critic failed")], {1: 0})
    assert math.isnan(frame.loc[0, "score"])
    assert frame.loc[0, "error"] == "critic failed"


def test_trial_frame_uses_effective_scores_and_candidate_indexes():
    o = Override(trial_id=2, score=0.9, feedback="human says", judge_score=0.5, author="ana")
    frame = trial_frame([trial(1), trial(2, override=o)], {1: 3})
    assert list(frame["candidate"]) == [3, 3]
    assert frame.loc[1, "score"] == 0.9 and frame.loc[1, "judge_score"] == 0.5
    assert bool(frame.loc[1, "overridden"]) and frame.loc[1, "feedback"] == "human says"


def test_override_signature_changes_when_an_override_is_added_or_undone():
    a = Override(id=1, trial_id=10, score=1.0, author="x")
    b = Override(id=2, trial_id=11, score=0.0, author="x")
    before = override_signature([a])
    assert override_signature([a, b]) != before
    undone = a.model_copy(update={"undone_at": datetime.now(UTC)})
    assert override_signature([undone, b]) != override_signature([a, b])


def test_progress_summary_and_eta_counts_down():
    run = Run(id="r", status=RunStatus.RUNNING, config={"max_iterations": 4,
                                                         "max_metric_calls": 100})
    event = RunEvent(run_id="r", kind="progress", iteration=2,
                     payload={"max_iterations": 4, "metric_calls": 30, "max_metric_calls": 100,
                              "best_score": 0.75, "eta_seconds": 20.0},
                     created_at=datetime.now(UTC) - timedelta(seconds=5))
    summary = progress_summary(run, event, loop_trials=32)
    assert summary.metric_calls == 32 and summary.fraction == 0.5
    assert 14 <= summary.eta_seconds <= 15.5
    text = summary.text()
    assert "2 of 4 iterations done" in text and "32 of 100" in text and "0.750" in text
    assert "ETA" in text
    empty = progress_summary(run, None, 0)
    assert "not scored yet" in empty.text() and empty.fraction == 0.0
    done = progress_summary(run.model_copy(update={"status": RunStatus.COMPLETED}), event, 32)
    assert done.fraction == 1.0 and "ETA" not in done.text()


def test_progress_counts_only_the_loops_metric_calls_and_the_test_set_apart():
    run = Run(id="r", status=RunStatus.COMPLETED, config={"max_iterations": 4,
                                                           "max_metric_calls": 20})
    event = RunEvent(run_id="r", kind="progress", iteration=3,
                     payload={"max_iterations": 4, "metric_calls": 18, "max_metric_calls": 20})
    summary = progress_summary(run, event, loop_trials=18, test_trials=8)
    assert summary.metric_calls == 18 and summary.test_trials == 8
    text = summary.text()
    assert "metric calls 18 of 20" in text and "8 test-set trials (outside the budget)" in text
    assert "test-set" not in progress_summary(run, event, loop_trials=18).text()


def test_format_duration():
    assert [format_duration(s) for s in (None, 5, 125, 7300)] == [
        "unknown", "5 s", "2 min 05 s", "2 h 01 min"]


def test_run_label_does_not_change_with_status():
    run = Run(id="abcdef123456", name="haiku")
    assert run_label(run) == run_label(run.model_copy(update={"status": RunStatus.COMPLETED}))
    assert "abcdef12" in run_label(run)


def test_trace_and_feedback_details():
    calls = trace_tool_calls({"tool_calls": [{"name": "search", "args": {"q": "x"},
                                              "result": {"hits": 2}}]})
    assert calls.to_dict("records") == [{"step": 1, "tool": "search", "arguments": '{"q": "x"}',
                                         "result": '{"hits": 2}'}]
    stored = Feedback.model_validate({"dimension_scores": {"clarity": 0.5, "bad": "x"}})
    dims = dimension_scores(stored)
    assert dims.loc[0, "score"] == 0.5 and math.isnan(dims.loc[1, "score"])


def test_review_frame_and_changes():
    o = Override(trial_id=2, score=0.9, feedback="fine", judge_score=0.5, author="ana")
    before = review_frame([trial(1), trial(2, override=o)], {1: 0})
    assert before.loc[1, "human_score"] == 0.9 and before.loc[1, "by"] == "ana"
    after = before.copy()
    after.loc[0, "human_score"] = 1.0
    after.loc[1, "human_feedback"] = "better"
    changes = override_changes(before, after)
    # a new correction carries the other human value forward (it replaces the active one)
    assert [(c.trial_id, c.score, c.feedback) for c in changes] == [
        (1, 1.0, None), (2, 0.9, "better")]
    assert override_changes(before, before) == []


def test_evidence_and_history_frames():
    parent = [trial(1, score=0.5, example=1), trial(2, score=None, example=2)]
    child = [trial(3, score=0.75, example=1, phase=TrialPhase.CHILD)]
    frame = evidence_frame(parent, child)
    assert frame.loc[0, "delta"] == 0.25 and math.isnan(frame.loc[1, "delta"])
    assert frame.loc[1, "child_feedback"] == "(not scored yet)"
    proposal = Proposal(id=1, run_id="r", iteration=1, parent_id=1, component="instruction",
                        text="t", status=ProposalStatus.REJECTED, child_id=2)
    seen = Evidence(judged=Sums(parent_sum=0.0, child_sum=0.75, compared=3),
                    effective=Sums(parent_sum=0.0, child_sum=0.75, compared=3), rule_accepts=True)
    now = seen.model_copy(update={"effective": Sums(parent_sum=0.8, child_sum=0.75, compared=3),
                                  "rule_accepts": False})
    decision = Decision(proposal_id=1, action=DecisionAction.REJECT, reason="too long",
                        author="ana", evidence=seen)
    invalid = Proposal(id=2, run_id="r", iteration=2, parent_id=1, component="instruction",
                       text="t", status=ProposalStatus.INVALID,
                       invalid_reason="duplicate of candidate #1")
    rows = [proposal_row(proposal, decision, now, {1: 0, 2: 1}),
            proposal_row(invalid, None, None, {1: 0, 2: 1})]
    history = proposal_history(rows)
    row, attempt = history.iloc[1], history.iloc[0]  # newest first
    assert (row["status"], row["decision"], row["by"], row["reason"], row["child"]) == (
        "rejected", "reject", "ana", "too long", 1)
    assert (row["parent_sum"], row["child_sum"]) == (0.8, 0.75)  # the sums now
    assert row["evidence"] == ("at decision 0.000 → 0.750 · now 0.800 → 0.750 "
                               "(corrected since)")
    assert (attempt["status"], attempt["reason"], attempt["evidence"]) == (
        "invalid", "duplicate of candidate #1", "")
    assert math.isnan(attempt["parent_sum"]) and pd.isna(attempt["child"])


def test_adks_verdict_is_a_column_of_the_trials_and_review_tables_and_the_metrics_are_rows():
    verdict = Verdict.of([
        MetricVerdict(name="tool_trajectory_avg_score", score=1.0, threshold=1.0,
                      status=EvalStatus.PASSED),
        MetricVerdict(name="response_match_score", score=0.19, threshold=0.8,
                      status=EvalStatus.FAILED)], ScoreRule.GRADED)
    judged = trial(1, score=0.62).model_copy(update={
        "feedback": Feedback(score=0.62, text="adk", verdict=verdict)})
    frame = trial_frame([judged, trial(2)], {1: 0})
    assert list(frame["verdict"]) == ["FAILED: response_match_score 0.19 < 0.8", ""]
    assert review_frame([judged], {1: 0}).loc[0, "judge_verdict"] == frame.loc[0, "verdict"]
    order = ["score", "verdict", "feedback"]
    assert shown_columns(order, frame) == order
    assert shown_columns(order, trial_frame([trial(2)], {1: 0})) == ["score", "feedback"]
    assert metric_rows(verdict).to_dict("records")[1] == {
        "metric": "response_match_score", "score": 0.19, "threshold": 0.8, "verdict": "FAILED"}
    assert optimised_note(verdict, 0.62) == (
        "ADK's verdict: FAILED (adk eval's rule: a case passes only when every metric passes "
        "its threshold). GEPA optimises the score 0.620 (graded: each metric's share of its "
        "threshold, averaged; 1 only when every metric passes).")
