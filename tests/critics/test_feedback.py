"""One parser for every critic reply: a bad shape is a "could not evaluate" message early."""

from __future__ import annotations

import asyncio
import math

import pytest

from studio.critics.agent import CriticScorer
from studio.critics.feedback import judge_sample, parse_feedback
from studio.critics.protocol import Sample
from studio.model.errors import FeedbackShapeError
from studio.model.feedback import Feedback
from studio.projects.files import load_project
from studio.projects.probe import probe_sync
from studio.projects.workspace import EXAMPLES_DIR
from studio.runtime.execution import AgentExecutor
from tests.helpers import critic as critic_agent


def test_an_advanced_critic_reply_fills_every_field():
    feedback = parse_feedback(0.75, {"feedback": "concise please", "actionable_guidance": "cut",
                                     "dimension_scores": {"accuracy": 1}, "verdicts": ["ok"]})
    assert feedback == Feedback(score=0.75, text="concise please", guidance="cut",
                                dimensions={"accuracy": 1.0}, extra={"verdicts": ["ok"]})


@pytest.mark.parametrize(("score", "metadata", "field"), [
    (0.5, {"dimension_scores": [1, 2]}, "'dimension_scores'"),
    (0.5, {"dimension_scores": {"clarity": "high"}}, "'dimension_scores.clarity'"),
    (0.5, {"feedback_dimensions": {"clarity": True}}, "'feedback_dimensions.clarity'"),
    ("high", {"feedback": "x"}, "'score'"),
    (0.5, ["not", "an", "object"], "'metadata'"),
])
def test_bad_shapes_are_rejected_with_the_field_named(score, metadata, field):
    with pytest.raises(FeedbackShapeError, match=field):
        parse_feedback(score, metadata)


def test_a_critic_agent_with_bad_dimensions_could_not_evaluate(script):
    model = script({"score": 0.9, "feedback": "fine", "dimension_scores": [1, 2]})
    scorer = CriticScorer(critic_agent(model), AgentExecutor())
    score, metadata = scorer.score("q", "a")
    assert score == 0.9 and metadata["dimension_scores"] == [1, 2]  # the reply came back as is
    feedback, error = asyncio.run(judge_sample(scorer, Sample(input_text="q", output="a")))
    assert feedback.score is None
    assert "could not evaluate" in error and "'dimension_scores'" in error and "[1, 2]" in error


def test_try_it_reports_a_bad_critic_shape_instead_of_crashing(script):
    project = load_project(EXAMPLES_DIR / "haiku_scripted.yaml")[0]
    model = script({"score": 0.9, "feedback": "fine", "dimension_scores": {"lines": "ok"}})
    critic = project.critic.model_copy(update={"model": model})
    result = probe_sync(project.model_copy(update={"critic": critic}), {"topic": "x"})
    assert result.output and result.score is None
    assert "could not evaluate" in result.error and "dimension_scores.lines" in result.error


class _Answers:
    """A custom critic that answers whatever it is given."""

    name = "custom"

    def __init__(self, answer):
        self.answer = answer

    async def assess(self, sample):
        return self.answer


def test_a_critic_that_answers_a_tuple_failed_and_says_what_to_return():
    feedback, error = asyncio.run(judge_sample(_Answers((0.9, {"feedback": "fine"})),
                                               Sample(input_text="q", output="a")))
    assert feedback.score is None
    assert "the critic failed" in error and "must return a studio.model.feedback.Feedback" in error


@pytest.mark.parametrize("score", [7.0, -0.5, math.nan])
def test_a_score_outside_zero_to_one_could_not_evaluate(score):
    feedback, error = asyncio.run(judge_sample(_Answers(Feedback(score=score, text="x")),
                                               Sample(input_text="q", output="a")))
    assert feedback.score is None
    assert "could not evaluate" in error and "'score'" in error and repr(score) in error


def test_an_unscored_answer_is_recorded_with_its_reason():
    feedback, error = asyncio.run(judge_sample(_Answers(Feedback.unscored("no reference")),
                                               Sample(input_text="q", output="a")))
    assert feedback.score is None and error == "no reference"
