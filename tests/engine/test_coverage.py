"""Coverage rule: a mean over fewer validation examples never beats a mean over more."""

from __future__ import annotations

import asyncio

import pytest

from studio import EvolutionConfig, evolve
from studio.engine.policies.pool import load_view
from studio.model.feedback import Feedback
from tests.helpers import trainset, writer

VALSET = [{"topic": "harbor fog"}, {"topic": "paper lantern"}, {"topic": "quiet well"}]


class SeedThenChild:
    """Scores the seed 0.6 everywhere; the child 0.9, but only on "harbor fog" of the
    validation set (it cannot evaluate the child on the other two)."""

    name = "partial"

    def __init__(self) -> None:
        self.seen: set[str] = set()

    async def assess(self, sample):
        if sample.input_text not in self.seen:  # the seed answers every example first
            self.seen.add(sample.input_text)
            return Feedback(score=0.6, text="Missing: Write exactly three lines.")
        if any(v["topic"] in sample.input_text for v in VALSET[1:]):
            return Feedback.unscored("the grader timed out")
        return Feedback(score=0.9, text="vivid")


@pytest.mark.slow
def test_a_child_scored_on_one_of_three_examples_does_not_beat_a_parent_scored_on_all(store):
    result = asyncio.run(evolve(agent=writer(), trainset=trainset(3), valset=VALSET,
                                critic=SeedThenChild(), store=store,
                                config=EvolutionConfig(max_iterations=1, minibatch_size=3)))
    view = load_view(store, result.run_id)
    seed, child = view.pooled_ids
    assert [s for s in view.matrix[child].values() if s is not None] == [0.9]
    assert view.means[child] == 0.9 and view.means[seed] == 0.6  # the child's mean is higher
    assert view.best_id == seed and result.best_candidate_id == seed
    assert child in view.front  # it still wins "harbor fog" example by example
