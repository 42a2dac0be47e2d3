"""The Compare page's charts as figures: what a click in the browser is turned into (checked
against the chart's own nodes and cells, never trusted), the lineage's node kinds and
per-example dots, and the heatmap's click targets (issue 21)."""

from __future__ import annotations

from components.plots import clicked_cell, clicked_node, lineage_figure, result_marks
from studio.model.records import Candidate, Example, Split
from studio.views.charts import lineage_layout, score_grid
from studio.views.matrix import Verdict


def cand(id_, index, parents=(), iteration=0, pooled=True):
    return Candidate(id=id_, run_id="r", index=index, parent_ids=list(parents),
                     components={"instruction": f"v{index}"}, content_hash=str(id_),
                     iteration=iteration, pooled=pooled)


CANDIDATES = [cand(10, 0), cand(11, 1, [10], 1), cand(12, 2, [11], 2, pooled=False),
              cand(13, 3, [11], 3, pooled=False)]
TREE = lineage_layout(CANDIDATES, {10: 0.0, 11: 0.5}, {11: 2}, 11,
                      {11: "accepted", 12: "rejected", 13: "pending"})
RESULTS = {10: [Verdict.FAIL, Verdict.FAIL], 11: [Verdict.PASS, Verdict.UNSCORED]}


def event(*points):
    return {"selection": {"points": list(points), "point_indices": [], "box": [], "lasso": []}}


def test_a_node_click_is_read_from_its_customdata_and_checked():
    assert clicked_node(event({"customdata": 12, "x": 2, "y": 0}), TREE) == 12
    assert clicked_node(event({"customdata": [11]}), TREE) == 11
    assert clicked_node(event({"customdata": 99}), TREE) is None  # not a node of this run
    assert clicked_node(event({"customdata": "<b>11</b>"}), TREE) is None
    assert clicked_node(event({"x": 1, "y": 0}), TREE) is None  # an edge, no node
    assert clicked_node(event(), TREE) is None and clicked_node(None, TREE) is None


def test_the_lineage_draws_each_kind_of_node_with_a_legend_and_dots():
    figure = lineage_figure(TREE, RESULTS)
    named = {t.name: t for t in figure.data if t.name}
    assert set(named) == {"in the pool (colour: validation mean)",
                          "rejected proposal (minibatch only)", "waiting or being scored"}
    rejected = named["rejected proposal (minibatch only)"]
    assert rejected.marker.symbol == "x" and list(rejected.customdata) == [12]
    dots = next(t for t in figure.data if t.mode == "text")
    assert list(dots.customdata) == [10, 11]  # only the nodes scored on the validation set
    assert dots.text[1].count("●") == 2 and "#2e7d32" in dots.text[1]
    assert all(t.cliponaxis is False for t in figure.data if t.mode != "lines")


def test_result_marks_wrap_and_count_past_the_limit():
    assert result_marks([Verdict.PASS] * 12).count("<br>") == 1  # ten dots a line
    assert result_marks([Verdict.PASS] * 30 + [Verdict.FAIL] * 20) == "30/50 pass"


def test_a_heatmap_click_names_the_cell_by_its_labels():
    examples = [Example(id=i, run_id="r", split=Split.VAL, index=i - 1,
                        data={"input": f"What is the capital of <i>{c}</i>?"})
                for i, c in ((1, "France"), (2, "Peru"))]
    grid = score_grid({10: {1: 0.0, 2: 1.0}, 11: {1: 0.5, 2: None}}, CANDIDATES, examples)
    label = "val 1 · &lt;i&gt;Peru&lt;/i&gt;?"  # as the chart shows it: escaped
    assert clicked_cell(event({"x": label, "y": "#1"}), grid) == (11, 2)
    assert clicked_cell(event({"x": "val 1 · <i>Peru</i>?", "y": "#1"}), grid) is None
    assert clicked_cell(event({"x": label, "y": "#7"}), grid) is None
