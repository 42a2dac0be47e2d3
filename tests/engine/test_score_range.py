"""A custom critic's score outside [0, 1] (or NaN) is "could not evaluate", never a number
that enters sums, thresholds or agreement."""

from __future__ import annotations

import asyncio

from studio import EvolutionConfig, evolve
from studio.model.feedback import Feedback
from tests.helpers import trainset, writer


class OverTheTop:
    """A custom critic that scores on a 0-10 scale for one topic."""

    name = "ten_point"

    async def assess(self, sample):
        if "coffee" in sample.input_text:
            return Feedback(score=7.0, text="seven out of ten")
        return Feedback(score=0.5, text="fine")


def test_a_custom_critic_score_of_seven_is_could_not_evaluate_with_the_value(store):
    result = asyncio.run(evolve(agent=writer(), trainset=trainset(3), critic=OverTheTop(),
                                config=EvolutionConfig(max_iterations=0), store=store))
    trials = store.trials(result.run_id)
    coffee = [t for t in trials if "coffee" in t.input_text]
    assert coffee and len(trials) == 3
    assert all(t.score is None and "7.0" in (t.error or "") for t in coffee)
    assert all(t.score == 0.5 for t in trials if t not in coffee)
    assert max(s for s in store.effective_scores(result.run_id).values() if s is not None) == 0.5
