"""A trial judged by ADK's criteria shows, in full, ADK's verdict metric by metric and, beside
it, the number GEPA optimises."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

VERDICT = {"status": "FAILED", "score_rule": "graded", "metrics": [
    {"name": "tool_trajectory_avg_score", "score": 1.0, "threshold": 1.0, "status": "PASSED"},
    {"name": "response_match_score", "score": 0.19, "threshold": 0.8, "status": "FAILED"}]}


def render(verdict):
    from components.trial_detail import show_result
    from studio.model.feedback import Feedback

    show_result("At what temperature does water boil?", "autumn leaves drift by",
                Feedback(score=0.62, text="[response_match_score] 0.19 FAILED", verdict=verdict),
                None, {})


def test_the_trial_shows_adks_verdict_per_metric_beside_the_optimised_score():
    at = AppTest.from_function(render, args=(VERDICT,), default_timeout=30).run()
    assert not at.exception
    captions = [c.value.replace("\\", "") for c in at.caption]  # Markdown-escaped text
    assert any("ADK's verdict: FAILED" in c and "GEPA optimises the score 0.620 (graded" in c
               for c in captions)
    table = at.dataframe[0].value
    assert list(table["metric"]) == ["tool_trajectory_avg_score", "response_match_score"]
    assert list(table["verdict"]) == ["PASSED", "FAILED"]
