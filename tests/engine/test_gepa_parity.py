"""The studio's policies against the reference GEPA (``gepa==0.1.4``, a test-only dependency) on
seeded inputs: the Pareto front, parent sampling, the acceptance rule, the epoch sampler and
the merge rule.

GEPA's side is driven through its own state and strategies (``GEPAState``,
``ParetoCandidateSelector``, ``StrictImprovementAcceptance``, ``EpochShuffledBatchSampler``), fed
what the studio's run would feed them. Where the studio deliberately differs, the test says how
and docs/concepts/loop.md, "Differences from GEPA", says why.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

gepa_state = pytest.importorskip("gepa.core.state", reason="pip install -e '.[dev]' (gepa==0.1.4)")
from gepa.core.data_loader import ListDataLoader  # noqa: E402
from gepa.gepa_utils import remove_dominated_programs  # noqa: E402
from gepa.proposer.base import CandidateProposal  # noqa: E402
from gepa.proposer.merge import (  # noqa: E402
    sample_and_attempt_merge_programs_by_common_predictors,
)
from gepa.strategies.acceptance import StrictImprovementAcceptance  # noqa: E402
from gepa.strategies.batch_sampler import EpochShuffledBatchSampler  # noqa: E402
from gepa.strategies.candidate_selector import ParetoCandidateSelector  # noqa: E402

from studio.engine.policies.evidence import compare  # noqa: E402
from studio.engine.policies.pareto import pareto_front  # noqa: E402
from studio.engine.policies.sampling import EpochSampler  # noqa: E402
from studio.engine.policies.selection import select_pareto  # noqa: E402
from studio.engine.propose.merge import find_merge, merged_components  # noqa: E402
from studio.model.records import Candidate, content_hash  # noqa: E402

SEEDS = range(400)
GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Few values, so that ties (where the two fronts could differ) are common; sums are exact."""


def score_matrix(rng: random.Random) -> tuple[dict[int, dict[int, float | None]], list[int]]:
    """Up to 8 pooled candidates (ids unlike GEPA's indices, in pool order) on up to 6 examples,
    some of them not evaluated (``None``), the seed's too."""
    examples = [100 + 7 * e for e in range(rng.randint(1, 6))]
    order = sorted(rng.sample(range(1, 60), rng.randint(1, 8)))
    matrix = {c: {e: (None if rng.random() < 0.2 else rng.choice(GRID)) for e in examples}
              for c in order}
    return matrix, order


def gepa_state_of(matrix: dict[int, dict[int, float | None]], order: list[int]):
    """GEPA's state after evaluating the same pool: candidate ``order[i]`` is program ``i``, and
    "could not evaluate" is an example left out of that program's (sparse) validation scores."""
    def evaluation(candidate: int):
        scores = {e: s for e, s in matrix[candidate].items() if s is not None}
        return gepa_state.ValsetEvaluation(outputs_by_val_id={}, scores_by_val_id=scores)

    state = gepa_state.GEPAState({"instruction": "seed"}, evaluation(order[0]))
    for candidate in order[1:]:
        state.update_state_with_new_program([0], {"instruction": str(candidate)},
                                            evaluation(candidate), None, 0)
    return state


def gepa_front(state, order: list[int]) -> dict[int, int]:
    """GEPA's front after ``remove_dominated_programs``, as studio ids with their weights, in
    the order GEPA builds its sampling list."""
    kept = remove_dominated_programs(state.get_pareto_front_mapping(),
                                     scores=state.per_program_tracked_scores)
    weights: dict[int, int] = {}
    for front in kept.values():
        for program in front:
            weights[order[program]] = weights.get(order[program], 0) + 1
    return weights


def test_the_named_cases_of_the_audit():
    identical = {1: {10: 0.5, 11: 1.0}, 2: {10: 0.5, 11: 1.0}}
    assert pareto_front(identical) == {2: 2}  # GEPA keeps the later of two identical rows
    pairwise = {1: {10: 1.0, 11: 1.0, 12: 0.0}, 2: {10: 1.0, 11: 0.0, 12: 1.0},
                3: {10: 0.0, 11: 1.0, 12: 1.0}}
    assert pareto_front(pairwise) == {2: 2, 3: 2}
    for matrix in (identical, pairwise):
        order = sorted(matrix)
        assert pareto_front(matrix) == gepa_front(gepa_state_of(matrix, order), order)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_front_and_its_weights_match_gepa_in_order(seed):
    for case in range(100):
        matrix, order = score_matrix(random.Random(seed * 1000 + case))
        expected = gepa_front(gepa_state_of(matrix, order), order)
        front = pareto_front(matrix, order)
        assert list(front.items()) == list(expected.items()), (matrix, order)


def test_parent_sampling_draws_the_same_parents_from_the_same_seed():
    """Both draw ``rng.choice`` over the front's candidates repeated by weight, in one order."""
    drawn = 0
    for seed in SEEDS:
        matrix, order = score_matrix(random.Random(seed))
        selector = ParetoCandidateSelector(random.Random(seed))
        state = gepa_state_of(matrix, order)
        ours = random.Random(seed)
        if not pareto_front(matrix, order):
            continue  # nothing scored at all: GEPA asserts, the studio takes its best candidate
        for _ in range(5):
            expected = order[selector.select_candidate_idx(state)]
            assert select_pareto(matrix, ours, order=order) == expected, (matrix, order)
            drawn += 1
    assert drawn > 4 * len(SEEDS)


def gepa_accepts(before: list[float], after: list[float]) -> bool:
    proposal = CandidateProposal(candidate={}, parent_program_ids=[0],
                                 subsample_scores_before=before, subsample_scores_after=after)
    return StrictImprovementAcceptance().should_accept(proposal, state=None)


def studio_accepts(before: list[float | None], after: list[float | None]) -> bool:
    def scores(values: list[float | None]) -> dict[int, tuple[float | None, float | None]]:
        return {e: (score, score) for e, score in enumerate(values)}

    return compare([scores(before)], scores(after), list(range(len(before)))).rule_accepts


def test_the_acceptance_rule_matches_gepa_on_scores_it_can_sum_exactly():
    for seed in SEEDS:
        rng = random.Random(seed)
        size = rng.randint(1, 5)
        before, after = ([rng.choice(GRID) for _ in range(size)] for _ in range(2))
        assert studio_accepts(before, after) == gepa_accepts(before, after), (before, after)


def test_the_acceptance_rule_differs_only_where_gepa_s_float_sum_rounds():
    """GEPA sums left to right, so ``[0.1, 0.2, 0.3]`` beats ``[0.3, 0.2, 0.1]``; the studio
    sums exactly (``math.fsum``) and calls them equal. Nothing else differs."""
    assert gepa_accepts([0.3, 0.2, 0.1], [0.1, 0.2, 0.3])
    assert not studio_accepts([0.3, 0.2, 0.1], [0.1, 0.2, 0.3])
    for seed in SEEDS:
        rng = random.Random(seed)
        size = rng.randint(1, 5)
        before, after = ([round(rng.random(), 2) for _ in range(size)] for _ in range(2))
        if studio_accepts(before, after) != gepa_accepts(before, after):
            assert math.fsum(before) == math.fsum(after), (before, after)


def test_unevaluated_examples_are_left_out_of_both_sums_not_counted_as_zero():
    """GEPA's scores are never None; the studio compares over the examples both sides could be
    evaluated on, so a child that could not be judged on one example is not rejected for it."""
    assert studio_accepts([0.5, 1.0], [0.75, None])
    assert not gepa_accepts([0.5, 1.0], [0.75, 0.0])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_the_epoch_sampler_draws_gepa_s_minibatches(size):
    """Each epoch padded to whole minibatches with the least-seen ids, none straddling two
    epochs. GEPA's padding repeats an example inside the last minibatch (``[3, 3, 1]``); the
    studio judges a pair once, so it takes that minibatch without the repeat."""
    for seed in range(40):
        for count in (1, 2, 3, 4, 5, 7, 10):
            ids = list(range(count))
            theirs = EpochShuffledBatchSampler(size, random.Random(seed))
            loader = ListDataLoader(ids)
            ours, rng = EpochSampler(ids, size), random.Random(seed)
            for i in range(3 * count):
                expected = theirs.next_minibatch_ids(loader, SimpleNamespace(i=i))
                assert ours.sample(rng) == list(dict.fromkeys(expected)), (seed, count, i)


def test_selection_and_sampling_share_one_seeded_rng_as_in_gepa():
    """GEPA's selector and sampler draw from one RNG, parent first, as the studio's plan does:
    the whole sequence of (parent, minibatch) is the same."""
    for seed in range(60):
        matrix, order = score_matrix(random.Random(seed))
        train = list(range(seed % 7 + 1))
        shared = random.Random(seed)
        selector = ParetoCandidateSelector(shared)
        sampler, loader = EpochShuffledBatchSampler(3, shared), ListDataLoader(train)
        state = gepa_state_of(matrix, order)
        ours, our_sampler = random.Random(seed), EpochSampler(train, 3)
        if not pareto_front(matrix, order):
            continue
        for i in range(8):
            parent = order[selector.select_candidate_idx(state)]
            batch = list(dict.fromkeys(sampler.next_minibatch_ids(loader, SimpleNamespace(i=i))))
            assert (select_pareto(matrix, ours, order=order), our_sampler.sample(ours)) \
                == (parent, batch), (seed, i)


def test_an_old_checkpoint_of_the_sampler_resumes_without_straddling_epochs():
    """A sampler state saved before padding (an unpadded order, mid-epoch) still loads; its
    epoch ends with a shorter minibatch, then the next epoch is padded."""
    old = {"example_ids": [1, 2, 3, 4, 5], "size": 2, "epoch": 1, "order": [4, 1, 5, 2, 3],
           "position": 4}
    sampler = EpochSampler.from_state(old)
    rng = random.Random(0)
    assert sampler.sample(rng) == [3]
    next_epoch = [sampler.sample(rng) for _ in range(3)]
    assert sampler.epoch == 2 and all(len(b) == 2 for b in next_epoch[:2])
    assert set().union(*map(set, next_epoch)) == {1, 2, 3, 4, 5}
    assert EpochSampler.from_state(sampler.state()) == sampler


# --------------------------------------------------------------------------- merge triplets


def gepa_merge(ancestor: dict[str, str], a: dict[str, str], b: dict[str, str],
               scores: tuple[float, float, float]) -> dict[str, str] | None:
    """The child GEPA's merge makes of the one triplet (ancestor, a, b), or None when it makes
    none (``sample_and_attempt_merge_programs_by_common_predictors`` on that pool)."""
    attempt = sample_and_attempt_merge_programs_by_common_predictors(
        agg_scores=list(scores), rng=random.Random(0), merge_candidates=[1, 2],
        merges_performed=([], []), program_candidates=[ancestor, a, b],
        parent_program_for_candidate=[[None], [0], [0]])
    return None if attempt is None else dict(attempt[0])


def studio_merge(ancestor: dict[str, str], a: dict[str, str], b: dict[str, str],
                 scores: tuple[float, float, float]) -> dict[str, str] | None:
    """The child the studio's merge planning makes of the same pool (ids 10, 11, 12)."""
    pool = [Candidate(id=10 + n, run_id="r", index=n, parent_ids=[] if n == 0 else [10],
                      components=texts, content_hash=content_hash(texts), pooled=True)
            for n, texts in enumerate((ancestor, a, b))]
    means = {10 + n: score for n, score in enumerate(scores)}
    choice = find_merge(pool, [11, 12], means, set(), random.Random(0))
    return None if choice is None else merged_components(choice.sources,
                                                         {c.id: c for c in pool})


NAMED_TRIPLETS = {
    "a changed x, b changed y": ({"x": "x0", "y": "y0"}, {"x": "x1", "y": "y0"},
                                 {"x": "x0", "y": "y1"}),
    "a changed x; b changed x and y": ({"x": "x0", "y": "y0"}, {"x": "x1", "y": "y0"},
                                       {"x": "x2", "y": "y1"}),
    "only b changed the one component": ({"x": "x0"}, {"x": "x0"}, {"x": "x1"}),
}


@pytest.mark.parametrize("case", NAMED_TRIPLETS)
def test_the_merge_rule_is_gepa_s_on_the_named_triplets(case):
    """GEPA's rule: a triplet merges when one component differs between the two descendants
    and one of them kept the ancestor's text there; the child takes each changed text, and
    where both changed one, the better descendant's. Where GEPA's child would be one of the
    two descendants again, the studio proposes no merge: a run keeps one candidate per text
    (docs/decisions/0001-merge-never-repeats-a-candidate.md)."""
    ancestor, a, b = NAMED_TRIPLETS[case]
    for scores in ((0.1, 0.6, 0.5), (0.1, 0.5, 0.6)):  # a better, then b better
        theirs, ours = gepa_merge(ancestor, a, b, scores), studio_merge(ancestor, a, b, scores)
        if theirs in (a, b):
            assert ours is None, (case, scores)
        else:
            assert ours == theirs, (case, scores)
    assert studio_merge(ancestor, a, b, (0.1, 0.6, 0.5)) == (
        {"x": "x1", "y": "y1"} if case != "only b changed the one component" else None)


def test_the_merge_rule_is_gepa_s_on_random_triplets():
    """Random triplets of one to three components, texts from a few values (so equal texts are
    common), the descendants' means distinct (GEPA breaks a tie at random, the studio takes
    the first): the same child, or none where GEPA's would repeat a descendant."""
    merged = 0
    for seed in range(600):
        rng = random.Random(seed)
        keys = ["x", "y", "z"][:rng.randint(1, 3)]
        ancestor = {k: f"{k}0" for k in keys}
        a, b = ({k: rng.choice([f"{k}0", f"{k}0", f"{k}1", f"{k}2"]) for k in keys}
                for _ in range(2))
        if len({content_hash(t) for t in (ancestor, a, b)}) < 3:
            continue  # a run keeps one candidate per text: no such pool
        scores = (0.1, *rng.sample([0.4, 0.6, 0.8], 2))
        theirs, ours = gepa_merge(ancestor, a, b, scores), studio_merge(ancestor, a, b, scores)
        expected = None if theirs in (a, b) else theirs
        assert ours == expected, (ancestor, a, b, scores)
        merged += ours is not None
    assert merged > 50
