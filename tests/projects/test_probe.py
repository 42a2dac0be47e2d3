""""Try on one example": the agent and the critic run once; nothing is stored."""

from __future__ import annotations

import pytest

from studio.model.errors import ModelConfigError
from studio.projects.files import load_project
from studio.projects.probe import probe_sync
from studio.projects.workspace import EXAMPLES_DIR


@pytest.fixture
def project():
    return load_project(EXAMPLES_DIR / "haiku_scripted.yaml")[0]


def test_probe_runs_agent_and_critic(project):
    result = probe_sync(project, {"topic": "autumn leaves"})
    assert result.error is None
    assert result.input_text == "topic: autumn leaves"
    assert result.output and result.score is not None and 0.0 <= result.score <= 1.0
    assert "Missing" in result.feedback_text
    assert set(result.feedback.dimensions) == {"lines", "topic", "season", "image"}
    assert result.trace["model_calls"] >= 1


def test_a_failing_agent_is_a_result_not_an_exception(project, script):
    def broken(request):
        raise RuntimeError("model exploded")

    model = script("broken_writer", broken)
    bad = project.model_copy(update={"agent": project.agent.model_copy(update={"model": model})})
    result = probe_sync(bad, {"topic": "x"}, timeout_s=10)
    assert result.score is None and "agent failed" in result.error and "exploded" in result.error


def test_a_critic_that_cannot_score_is_recorded(project, script):
    model = script("chatty_critic", lambda request: "I like it!")
    critic = project.critic.model_copy(update={"model": model})
    result = probe_sync(project.model_copy(update={"critic": critic}), {"topic": "x"})
    assert result.output and result.score is None
    assert "could not evaluate" in result.error


def test_an_unusable_model_raises_before_any_call(project):
    bad = project.model_copy(update={"agent": project.agent.model_copy(
        update={"model": "nope/model"})})
    with pytest.raises(ModelConfigError, match="unknown model provider"):
        probe_sync(bad, {"topic": "x"})
