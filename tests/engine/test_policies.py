"""Pure engine policies: Pareto front, parent selection, minibatch sampling, proposal checks."""

from __future__ import annotations

import random

import pytest

from studio.engine.policies.evidence import compare
from studio.engine.policies.pareto import (
    best_candidate,
    mean_score,
    pareto_front,
    winners_per_example,
)
from studio.engine.policies.sampling import EpochSampler
from studio.engine.policies.selection import select_parent
from studio.engine.run.agent_texts import check_components, validate_proposal
from studio.model.errors import ConfigError, ProposalError

MATRIX = {1: {10: 0.2, 11: 0.9, 12: 0.5},
          2: {10: 0.8, 11: 0.1, 12: 0.5},
          3: {10: 0.1, 11: 0.1, 12: 0.1}}


def test_none_is_never_averaged_as_zero():
    assert mean_score({1: 1.0, 2: None}) == 1.0
    assert mean_score({1: None}) is None


def test_front_counts_wins_with_ties_and_drops_losers():
    assert winners_per_example(MATRIX) == {10: {2}, 11: {1}, 12: {1, 2}}
    assert pareto_front(MATRIX) == {1: 2, 2: 2}


def test_dominated_candidates_leave_the_front():
    matrix = {1: {10: 1.0, 11: 1.0}, 2: {10: 1.0, 11: 0.0}}
    assert pareto_front(matrix) == {1: 2}


def test_best_candidate_breaks_ties_by_order():
    assert best_candidate({1: {10: 0.5}, 2: {10: 0.5}}, [2, 1]) == 2
    assert best_candidate({1: {10: None}}, [1]) == 1


def test_selection_policies_are_seeded():
    order = [1, 2, 3]
    picks = [select_parent("pareto", MATRIX, random.Random(7), order=order) for _ in range(5)]
    again = [select_parent("pareto", MATRIX, random.Random(7), order=order) for _ in range(5)]
    assert picks == again and set(picks) <= {1, 2}
    assert select_parent("greedy", MATRIX, random.Random(0), order=order) in (1, 2)
    explored = {select_parent("epsilon_greedy", MATRIX, random.Random(s), order=order,
                              epsilon=1.0) for s in range(30)}
    assert explored == {1, 2, 3}
    with pytest.raises(ValueError, match="not one of: pareto, greedy, epsilon_greedy"):
        select_parent("best", MATRIX, random.Random(0), order=order)


def test_sampler_covers_an_epoch_before_repeating_and_round_trips():
    sampler = EpochSampler([1, 2, 3, 4, 5], 2)
    rng = random.Random(3)
    seen = sampler.sample(rng) + sampler.sample(rng)
    restored = EpochSampler.from_state(sampler.state())
    assert restored.sample(random.Random(0)) == sampler.sample(random.Random(0))
    assert len(set(seen)) == 4
    assert len(EpochSampler([1, 2], 5).sample(rng)) == 2


def test_the_rule_does_not_depend_on_the_order_scores_are_summed_in():
    # the same scores on other examples: summed left to right the child's would be
    # 0.1 + 0.2 + 0.3 = 0.6000000000000001, above the parent's 0.3 + 0.2 + 0.1 = 0.6
    parent = {1: (0.3, 0.3), 2: (0.2, 0.2), 3: (0.1, 0.1)}
    child = {1: (0.1, 0.1), 2: (0.2, 0.2), 3: (0.3, 0.3)}
    for evidence in (compare([parent], child, [1, 2, 3]), compare([child], parent, [1, 2, 3])):
        assert evidence.parent_sum == evidence.child_sum == 0.6
        assert evidence.compared == 3 and not evidence.rule_accepts


@pytest.mark.parametrize("component, text, reason", [
    ("instruction", "   ", "empty"),
    ("instruction", "Parent text.", "unchanged"),
    ("instruction", "Write about {mood}.", "unknown_placeholder"),
    ("instruction", "Paris is a city of light. " * 4, "repetitive"),
    ("output_schema", '{"type": "object", "properties": {"a": {"type": 5}}}', "invalid_schema"),
    ("output_schema", "not json", "invalid_schema"),
    ("generate_content_config", "temperature: [", "invalid_yaml"),
    ("generate_content_config", "temperature: 7", "invalid_yaml"),
])
def test_invalid_proposals_have_reasons(component, text, reason):
    with pytest.raises(ProposalError) as info:
        validate_proposal(component, text, "Parent text.", {"topic"})
    assert info.value.reason == reason


def test_valid_proposals_pass():
    assert validate_proposal("instruction", " Write about {topic}. ", "x", {"topic"}) == \
        "Write about {topic}."


def test_unknown_component_names():
    with pytest.raises(ConfigError, match="unknown component 'prompt'"):
        check_components(["prompt"])
    with pytest.raises(ConfigError, match="at least one"):
        check_components([])
