"""Chart data of the Compare page."""

from __future__ import annotations

import math

import pytest

from studio.engine.people.history import ProposalRow
from studio.model.evidence import Evidence, Sums
from studio.model.records import (
    Candidate,
    Example,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Split,
)
from studio.views.charts import (
    example_axis,
    example_comparison,
    example_results,
    front_frame,
    iteration_series,
    lineage_layout,
    minibatch_points,
    score_grid,
    score_matrix,
)
from studio.views.matrix import Verdict


def cand(id_, index, parents=(), iteration=0, pooled=True):
    return Candidate(id=id_, run_id="r", index=index, parent_ids=list(parents),
                     components={"instruction": f"v{index}"}, content_hash=str(id_),
                     iteration=iteration, pooled=pooled)


def ex(id_, index):
    return Example(id=id_, run_id="r", split=Split.VAL, index=index, data={"topic": f"t{index}"})


CANDIDATES = [cand(10, 0), cand(11, 1, [10], 1), cand(12, 2, [10], 2, pooled=False),
              cand(13, 3, [11], 3)]
MATRIX = {10: {1: 0.0, 2: 0.5}, 11: {1: 0.5, 2: None}, 13: {1: 1.0, 2: 0.5}}
MEANS = {10: 0.25, 11: 0.5, 13: 0.75}


def test_iteration_series_best_so_far_and_markers():
    proposals = [Proposal(id=1, run_id="r", iteration=1, parent_id=10, component="instruction",
                          text="x", status=ProposalStatus.ACCEPTED, child_id=11),
                 Proposal(id=2, run_id="r", iteration=2, parent_id=10, component="instruction",
                          text="y", status=ProposalStatus.REJECTED, child_id=12),
                 Proposal(id=3, run_id="r", iteration=3, parent_id=11, component="instruction",
                          text="z", status=ProposalStatus.INVALID)]
    best, markers = iteration_series(CANDIDATES, MEANS, proposals,
                                     {1: {"child": 0.6}, 2: {"child": 0.2}}, 3)
    assert list(best["best"]) == [0.25, 0.5, 0.5, 0.75]
    assert markers.to_dict("records") == [
        {"iteration": 1, "score": 0.6, "status": "accepted", "proposal": 1},
        {"iteration": 2, "score": 0.2, "status": "rejected", "proposal": 2}]


def test_score_matrix_keeps_missing_as_nan():
    matrix = score_matrix(MATRIX, CANDIDATES, [ex(1, 0), ex(2, 1)])
    assert list(matrix.index) == ["#0", "#1", "#3"]
    assert math.isnan(matrix.loc["#1"].iloc[1]) and matrix.loc["#3"].iloc[0] == 1.0


def test_example_comparison_has_deltas_to_the_first():
    table = example_comparison(MATRIX, [10, 13, 12], CANDIDATES, [ex(1, 0), ex(2, 1)])
    assert list(table.columns) == ["example", "#0", "#3", "Δ #3"]
    assert list(table["Δ #3"]) == [1.0, 0.0]


def test_front_frame():
    table = front_frame(CANDIDATES, MEANS, {13: 2}, 13)
    assert list(table["candidate"]) == ["#0", "#1", "#3"]
    assert table.set_index("candidate").loc["#3", "on_front"]
    assert table.set_index("candidate").loc["#3", "parents"] == "#1"
    assert "cost_usd" not in table.columns


def test_front_frame_with_costs_shows_each_candidates():
    table = front_frame(CANDIDATES, MEANS, {13: 2}, 13, {10: 0.5, 13: 0.25})
    assert list(table["cost_usd"]) == [0.5, 0.0, 0.25]  # #1 has no priced trial: 0


def test_costs_are_shown_in_dollars_without_rounding_cents_away():
    from studio.model.costs import format_cost

    assert [format_cost(v) for v in (0, 0.000002, 0.0123, 12.5, float("nan"))] == [
        "$0", "$2e-06", "$0.0123", "$12.50", "$0"]


def test_lineage_layout_puts_parents_between_children():
    tree = lineage_layout(CANDIDATES, MEANS, {13: 2}, 13, {12: "rejected"})
    nodes = tree.nodes.set_index("id")
    assert sorted(tree.edges) == [(10, 11), (10, 12), (11, 13)]
    assert nodes.loc[10, "y"] == (nodes.loc[11, "y"] + nodes.loc[12, "y"]) / 2
    assert nodes.loc[12, "status"] == "rejected" and math.isnan(nodes.loc[12, "mean"])
    assert bool(nodes.loc[13, "best"]) and list(nodes["x"]) == [0, 1, 2, 3]


@pytest.mark.slow
def test_lineage_of_a_chain_thousands_deep_is_laid_out():
    chain = [cand(i + 1, i, [i] if i else [], iteration=i) for i in range(5000)]
    tree = lineage_layout(chain, {}, {}, None, limit=10_000)
    assert len(tree.nodes) == 5000 and len(tree.edges) == 4999
    assert set(tree.nodes["y"]) == {0.0} and tree.note is None  # one leaf: one row


def test_a_large_lineage_shows_the_pool_the_chosen_and_their_ancestors():
    # seed #0 -> pooled #1 -> pooled #2; rejected leaves under each; #5 rejected, chosen
    candidates = [cand(10, 0), cand(11, 1, [10], 1), cand(12, 2, [11], 2),
                  cand(13, 3, [10], 3, pooled=False), cand(14, 4, [12], 4, pooled=False),
                  cand(15, 5, [13], 5, pooled=False), cand(16, 6, [11], 6, pooled=False)]
    tree = lineage_layout(candidates, MEANS, {}, 12, shown=[15], limit=5)
    assert sorted(tree.nodes["id"]) == [10, 11, 12, 13, 15]
    assert sorted(tree.edges) == [(10, 11), (10, 13), (11, 12), (13, 15)]
    assert tree.note.startswith("Showing 5 of 7 candidates") and "2 rejected" in tree.note
    assert lineage_layout(candidates, MEANS, {}, 12, limit=7).note is None


# --------------------------------------------------------------------------- clickable charts


def question(id_, index, text, split=Split.VAL):
    return Example(id=id_, run_id="r", split=split, index=index,
                   data={"input": text, "expected": "x"})


def test_example_axis_names_examples_by_number_and_what_tells_them_apart():
    examples = [question(1, 0, "What is the capital of France?"),
                question(2, 1, "What is the capital of Finland?"),
                question(3, 2, "What is the capital of the country with the longest coast?")]
    axis = example_axis(examples, chars=14)
    assert axis.labels == ["val 0 · France?", "val 1 · Finland?", "val 2 · the country w…"]
    assert axis.hovers[2] == "What is the capital of the country with the longest coast?"
    assert len(set(axis.labels)) == 3  # every column reads differently


def test_example_axis_keeps_whole_words_and_a_lone_example():
    words = example_axis([question(1, 0, "Paris"), question(2, 1, "Paris in spring")])
    assert words.labels == ["val 0 · Paris", "val 1 · Paris in spring"]
    assert example_axis([question(1, 4, "Only one")]).labels == ["val 4 · Only one"]
    assert example_axis([question(1, 0, "same"), question(2, 1, "same")]).labels == [
        "val 0 · same", "val 1 · same"]


def test_score_grid_maps_each_cell_to_its_candidate_and_example():
    grid = score_grid(MATRIX, CANDIDATES, [ex(1, 0), ex(2, 1), ex(3, 2)])
    assert list(grid.scores.index) == ["#0", "#1", "#3"]
    assert grid.example_ids == [1, 2]  # example 3 was never scored: no column
    assert grid.cell(2, 0) == (13, 1) and grid.cell(1, 1) == (11, 2)
    assert grid.cell(3, 0) is None and grid.cell(0, -1) is None
    assert math.isnan(grid.scores.loc["#1"].iloc[1])


def test_example_results_give_each_scored_node_a_verdict_per_example():
    results = example_results({10: {1: 0.0, 2: 0.5}, 11: {1: 0.9, 2: None}, 13: {1: 1.0}},
                              [10, 11, 12, 13], [1, 2], pass_at=0.5)
    assert results == {10: [Verdict.FAIL, Verdict.PASS], 11: [Verdict.PASS, Verdict.UNSCORED],
                       13: [Verdict.PASS, Verdict.MISSING]}  # 12: a rejected child, none


def test_minibatch_points_put_each_child_beside_its_own_parent():
    def row(id_, status, now):
        return ProposalRow(id=id_, iteration=id_, kind=ProposalKind.REFLECTION,
                           component="instruction", label="instruction", parent_id=10,
                           parent_ids=[10], child_id=10 + id_, child_index=id_, status=status,
                           now=now)

    rows = [row(1, ProposalStatus.ACCEPTED, Evidence(effective=Sums(
                parent_sum=1.0, child_sum=2.0, compared=4), rule_accepts=True)),
            row(2, ProposalStatus.REJECTED, Evidence(effective=Sums(
                parent_sum=3.0, child_sum=3.0, compared=3))),
            row(3, ProposalStatus.INVALID, None),
            row(4, ProposalStatus.REJECTED, Evidence())]  # nothing compared: no point
    points = minibatch_points(rows)
    assert points[["proposal", "status", "parent_mean", "child_mean"]].to_dict("records") == [
        {"proposal": 1, "status": "accepted", "parent_mean": 0.25, "child_mean": 0.5},
        {"proposal": 2, "status": "rejected", "parent_mean": 1.0, "child_mean": 1.0}]
