"""Bad replies from models in a real run: each becomes a trial whose error says what went wrong
and whose fault it was, never a crash, a silent guess, or a misleading label."""

from __future__ import annotations

import asyncio

import pytest

from studio.critics.agent import parse_critic_output
from studio.engine import EvolutionConfig, build_engine, create_run
from studio.model.errors import CriticOutputParseError
from studio.model.records import AgentSpec, CriticSpec
from tests.helpers import demo_spec, trainset

AMBIGUOUS = [
    '{"score": 0.1, "score": 0.9, "feedback": "two scores"}',
    'Here it is: {"score": 0.2, "feedback": "a", "feedback": "b"}',
    '```json\n{"score": 1.0, "score": 0.0}\n```',
]


def baseline_run(store, spec, **config) -> str:
    return create_run(store, spec=spec, trainset=trainset(2),
                      config=EvolutionConfig(max_iterations=0, **config)).id


@pytest.mark.parametrize("reply", AMBIGUOUS)
def test_a_critic_reply_naming_a_key_twice_is_refused_as_ambiguous(reply):
    with pytest.raises(CriticOutputParseError, match="ambiguous: the key '(score|feedback)' "
                                                     "appears twice"):
        parse_critic_output(reply)


def test_an_ambiguous_critic_reply_is_could_not_evaluate_in_a_run(store, script):
    critic = script(lambda request: AMBIGUOUS[0])
    spec = demo_spec().model_copy(update={"critic": CriticSpec(
        name="twice", agent=AgentSpec(name="critic", model=critic))})
    run_id = baseline_run(store, spec)
    with pytest.raises(Exception, match="could not evaluate any baseline example"):
        asyncio.run(build_engine(store, run_id).run())
    trials = store.trials(run_id)
    assert trials and all(t.score is None for t in trials)
    assert all("the key 'score' appears twice" in (t.error or "") for t in trials)


def test_an_agent_failure_is_not_blamed_on_the_critic(store, script):
    def broken(request):
        raise RuntimeError("writer model exploded")

    writer = script(broken)
    spec = demo_spec().model_copy(update={"agent": AgentSpec(name="writer", model=writer)})
    run_id = baseline_run(store, spec, max_retries=0)
    with pytest.raises(Exception, match="the agent failed on every baseline example") as failed:
        asyncio.run(build_engine(store, run_id).run())
    assert "Check the agent's model" in str(failed.value)
    assert "critic's model" not in str(failed.value)
    for trial in store.trials(run_id):
        assert trial.error.startswith("the agent failed (the critic was not called)")
        assert "exploded" in trial.error and "critic could not evaluate" not in trial.error
