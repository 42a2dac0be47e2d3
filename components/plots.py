"""Plotly charts of a run: score per iteration, candidates x examples heatmap, lineage tree.

Plotly renders a subset of HTML in labels and hover text, so every label that comes from data
(dataset fields) goes through ``html.escape``; no model-written text is put in a chart.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from studio.views.charts import Lineage, ScoreGrid
from studio.views.matrix import Verdict

LABELLED_CELLS = 400
LABELLED_NODES = 80
LINEAGE_MAX_HEIGHT = 1200  # px; a taller tree is explored by zooming
STATUS_STYLE = {
    "accepted": ("#2e7d32", "circle"),
    "rejected": ("#c62828", "x"),
    "pending": ("#ef6c00", "diamond"),
    "evaluating": ("#ef6c00", "diamond-open"),
    "edited": ("#757575", "square-open"),
}


def score_per_iteration(best: pd.DataFrame, points: pd.DataFrame) -> None:
    """Two panels on one iteration axis, so a minibatch mean is never read against the
    validation line: above, the best validation mean of the pool; below, each proposal's child
    against its own parent on the minibatch they were compared on (a rejected child sits at or
    below its parent's tick, drawn as a red cross)."""
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                           row_heights=[0.45, 0.55],
                           subplot_titles=("Validation set: the pool's best mean",
                                           "Minibatch: each proposal's child against its parent"))
    figure.add_trace(go.Scatter(
        x=best["iteration"], y=best["best"], mode="lines+markers",
        name="best validation mean (pool)",
        line={"shape": "hv", "color": "#1565c0", "width": 3},
        hovertemplate="iteration %{x}<br>best validation mean %{y:.3f}<extra></extra>"),
        row=1, col=1)
    if not points.empty:
        _parent_to_child(figure, points)
    figure.update_yaxes(range=[-0.05, 1.05], title_text="validation mean", row=1, col=1)
    figure.update_yaxes(range=[-0.05, 1.05], title_text="minibatch mean", row=2, col=1)
    figure.update_xaxes(**_iteration_axis("iteration", best["iteration"].max()), row=2, col=1)
    figure.update_layout(height=480, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                         legend={"orientation": "h", "y": -0.18})
    st.plotly_chart(figure, width="stretch", key="compare.score_chart")


def _parent_to_child(figure: go.Figure, points: pd.DataFrame) -> None:
    """Each proposal as a grey segment from its parent's minibatch mean to its child's, the
    child marked by status (one legend entry per status)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for row in points.itertuples():
        xs += [row.iteration, row.iteration, None]
        ys += [row.parent_mean, row.child_mean, None]
    figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#b0bec5", "width": 2},
                                hoverinfo="skip", showlegend=False), row=2, col=1)
    figure.add_trace(go.Scatter(
        x=points["iteration"], y=points["parent_mean"], mode="markers",
        name="parent on the same minibatch",
        marker={"symbol": "line-ew-open", "size": 16, "color": "#546e7a",
                "line": {"width": 2, "color": "#546e7a"}},
        customdata=points[["proposal", "compared"]].to_numpy(),
        hovertemplate="proposal #%{customdata[0]}: parent's minibatch mean %{y:.3f} "
                      "(%{customdata[1]} examples)<extra></extra>"), row=2, col=1)
    for status, group in points.groupby("status"):
        color, symbol = STATUS_STYLE.get(str(status), ("#9e9e9e", "circle-open"))
        figure.add_trace(go.Scatter(
            x=group["iteration"], y=group["child_mean"], mode="markers",
            name=f"child, {status}",
            marker={"color": color, "symbol": symbol, "size": 12,
                    "line": {"width": 2, "color": color}},
            customdata=group[["proposal", "compared"]].to_numpy(),
            hovertemplate="proposal #%{customdata[0]} · " + html.escape(str(status))
                          + "<br>child's minibatch mean %{y:.3f} (%{customdata[1]} examples)"
                          "<extra></extra>"), row=2, col=1)


def heatmap(grid: ScoreGrid, key: str) -> tuple[int, int] | None:
    """The candidates x examples heatmap; returns the clicked cell's ``(candidate id, example
    id)``. ``key`` names the run, so a cell picked in one run is not opened in another."""
    matrix = grid.scores
    if matrix.empty:
        st.caption("No candidate has been scored on the validation set yet.")
        return None
    text = matrix.map(lambda v: "n/a" if pd.isna(v) else f"{v:.2f}")
    # Numbers in the cells only while they stay legible (and cheap for the browser to draw).
    labelled = matrix.size <= LABELLED_CELLS
    columns = [html.escape(str(c)) for c in matrix.columns]
    figure = go.Figure(go.Heatmap(
        z=matrix.values, x=columns, y=list(matrix.index), zmin=0, zmax=1, colorscale="RdYlGn",
        text=text.values, texttemplate="%{text}" if labelled else None, hoverinfo="skip",
        colorbar={"title": "score"}))
    figure.add_trace(_cell_targets(matrix, columns, grid.hovers, text))
    many = len(matrix.columns) > 4
    figure.update_layout(height=max(240, 40 * len(matrix) + (200 if many else 120)),
                         margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis={"type": "category", "tickangle": -35 if many else 0,
                                "automargin": True},
                         yaxis={"autorange": "reversed", "type": "category",
                                "automargin": True},
                         clickmode="event+select", hovermode="closest", hoverdistance=-1,
                         showlegend=False)
    event = st.plotly_chart(figure, width="stretch", key=key, on_select="rerun",
                            selection_mode="points")
    st.caption("n/a: could not evaluate (never counted as 0). Click a cell to open its trial.")
    return clicked_cell(event, grid)


def _cell_targets(matrix: pd.DataFrame, columns: list[str], hovers: list[str],
                  text: pd.DataFrame) -> go.Scatter:
    """An invisible marker on every cell, which is what a click picks (a plotly heatmap has no
    selection): the picked one shows as a dark outline. With no hover distance limit, the
    nearest centre, the cell under the pointer, answers."""
    xs, ys, data = [], [], []
    for row, label in enumerate(matrix.index):
        for column, name in enumerate(columns):
            xs.append(name)
            ys.append(label)
            data.append([html.escape(hovers[column]), text.iat[row, column]])
    return go.Scatter(
        x=xs, y=ys, mode="markers", customdata=data,
        marker={"symbol": "square-open", "size": 26, "color": "#212121", "opacity": 0,
                "line": {"width": 3}},
        selected={"marker": {"opacity": 1}}, unselected={"marker": {"opacity": 0}},
        hovertemplate="%{y} on %{x}: %{customdata[1]}<br>%{customdata[0]}"
                      "<extra>click to open the trial</extra>")


def clicked_cell(event: Any, grid: ScoreGrid) -> tuple[int, int] | None:
    """The cell a click picked, from its row and column labels (what the browser sends is
    looked up, never trusted)."""
    rows = {label: i for i, label in enumerate(grid.scores.index)}
    columns = {html.escape(str(label)): i for i, label in enumerate(grid.scores.columns)}
    for point in _points(event):
        row, column = rows.get(str(point.get("y"))), columns.get(str(point.get("x")))
        if row is not None and column is not None:
            return grid.cell(row, column)
    return None


def _points(event: Any) -> list[dict]:
    selection = event.get("selection") if event else None
    points = selection.get("points") if selection else None
    return [p for p in points or [] if isinstance(p, dict)]


def lineage(tree: Lineage, results: dict[int, list[Verdict]], key: str) -> int | None:
    """The lineage tree; returns the id of the clicked candidate. ``key`` names the run, so
    switching runs clears the selection."""
    if tree.nodes.empty:
        st.caption("No candidates yet.")
        return None
    event = st.plotly_chart(lineage_figure(tree, results), width="stretch", key=key,
                            on_select="rerun", selection_mode="points")
    st.caption("Click a node to open it · ★ best · filled: in the pool, coloured by validation "
               "mean · red ✕: a rejected proposal (scored on its minibatch only) · thick blue "
               "ring: on the Pareto front · dots under a node: its result on each validation "
               "example (green pass, red fail, amber could not evaluate)"
               + (" · dashed orange: a merge's two parents." if tree.merge_edges else ".")
               + (f" {tree.note}" if tree.note else ""))
    return clicked_node(event, tree)


def clicked_node(event: Any, tree: Lineage) -> int | None:
    """The candidate a click picked: a node's customdata, kept only if it is a node of this
    tree (the browser's word is checked, not trusted)."""
    ids = set(int(i) for i in tree.nodes["id"])
    for point in _points(event):
        value = point.get("customdata")
        value = value[0] if isinstance(value, list) and value else value
        if isinstance(value, int | float) and int(value) in ids:
            return int(value)
    return None


NODE_KINDS = {
    # kind: its name in the legend
    "pooled": "in the pool (colour: validation mean)",
    "rejected": "rejected proposal (minibatch only)",
    "waiting": "waiting or being scored",
    "other": "edited or not pooled",
}
RESULT_COLOURS = {Verdict.PASS: "#2e7d32", Verdict.FAIL: "#c62828",
                  Verdict.UNSCORED: "#f9a825", Verdict.MISSING: "#b0bec5"}
UNSELECTED = {"marker": {"opacity": 0.55}, "textfont": {"color": "rgba(96, 125, 139, 0.8)"}}
"""The other nodes once one is opened: dimmed a little, still readable."""
DOTS_PER_LINE = 10
DOTS_BELOW = 0.22
"""How far under its node (in tree rows) a node's dots begin: clear of the largest marker."""
DOTTED_UP_TO = 40
"""Examples shown as dots under a node; beyond, the node shows ``passed/total``."""


def lineage_figure(tree: Lineage, results: dict[int, list[Verdict]] | None = None
                   ) -> go.Figure:
    """The tree in a few traces whatever its size: the edges in one line trace (None between
    edges), a merge's edges in another, one marker trace per kind of node (pooled, rejected,
    waiting, other) and one text trace with each node's per-example dots."""
    results = results or {}
    nodes = tree.nodes
    position = dict(zip(nodes["id"], zip(nodes["x"], nodes["y"], strict=True), strict=True))
    merges = set(tree.merge_edges)
    figure = go.Figure()
    for edges, line in (([e for e in tree.edges if e not in merges], {"color": "#b0bec5"}),
                        (sorted(merges), {"color": "#ef6c00", "dash": "dash", "width": 2})):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for parent, child in edges:
            xs += [position[parent][0], position[child][0], None]
            ys += [position[parent][1], position[child][1], None]
        if xs:
            figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=line, hoverinfo="skip",
                                        showlegend=False))
    labelled = len(nodes) <= LABELLED_NODES
    kinds = nodes.apply(_node_kind, axis=1) if not nodes.empty else pd.Series(dtype=str)
    for kind in NODE_KINDS:
        group = nodes[kinds == kind]
        if not group.empty:
            figure.add_trace(_lineage_nodes(group, kind, labelled, results))
    dotted = nodes[nodes["id"].isin(list(results))] if labelled else nodes.iloc[0:0]
    if not dotted.empty:
        figure.add_trace(_result_dots(dotted, results))
    rows = nodes["y"].min() * -1 + 2
    per_row = 70 if not dotted.empty else 48
    figure.update_layout(height=min(LINEAGE_MAX_HEIGHT, max(300, per_row * rows + 60)),
                         margin={"l": 20, "r": 20, "t": 40, "b": 10},
                         xaxis={**_iteration_axis("iteration born", nodes["x"].max()),
                                "range": [nodes["x"].min() - 0.5, nodes["x"].max() + 0.5]},
                         yaxis={"visible": False,
                                "range": [nodes["y"].min() - 0.9, nodes["y"].max() + 0.6]},
                         legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
                         clickmode="event+select")
    return figure


def _node_kind(node: Any) -> str:
    if node["pooled"]:
        return "pooled"
    if node["status"] == "rejected":
        return "rejected"
    if node["status"] in ("pending", "evaluating"):
        return "waiting"
    return "other"


def _lineage_nodes(group: pd.DataFrame, kind: str, labelled: bool,
                   results: dict[int, list[Verdict]]) -> go.Scatter:
    hover = [_node_hover(r, results.get(int(r.id), [])) for r in group.itertuples()]
    marker: dict[str, Any] = {
        "size": [24 if b else 16 for b in group["best"]],
        "symbol": ["star" if b else "circle" for b in group["best"]],
        "line": {"width": [4 if f else 1 for f in group["on_front"]], "color": "#1565c0"}}
    if kind == "pooled":
        marker.update(color=group["mean"], cmin=0, cmax=1, colorscale="RdYlGn",
                      showscale=True, colorbar={"title": "mean", "len": 0.8})
    elif kind == "rejected":
        marker.update(color="#c62828", symbol="x", size=14,
                      line={"width": 1, "color": "#7f0000"})
    elif kind == "waiting":
        marker.update(color="#ef6c00", symbol="diamond-open", size=14,
                      line={"width": 2, "color": "#ef6c00"})
    else:
        marker.update(color="#78909c", symbol="circle-open", line={"width": 2, "color": "#78909c"})
    return go.Scatter(x=group["x"], y=group["y"], mode="markers+text" if labelled else "markers",
                      text=[f"#{i}" for i in group["index"]], textposition="top center",
                      cliponaxis=False, customdata=group["id"], hovertext=hover,
                      hoverinfo="text", name=NODE_KINDS[kind], showlegend=True, marker=marker,
                      unselected=UNSELECTED)


def _node_hover(r: Any, verdicts: list[Verdict]) -> str:
    passed = sum(v is Verdict.PASS for v in verdicts)
    return (f"#{r.index} · {html.escape(r.status)} · "
            + (f"merge of {' and '.join(f'#{p}' for p in r.parents)} · "
               if len(r.parents) > 1 else "")
            + (f"mean {r.mean:.3f}" if pd.notna(r.mean) else "not scored on the validation set")
            + (f" · passes {passed} of {len(verdicts)} examples" if verdicts else "")
            + (" · on the Pareto front" if r.on_front else "") + (" · best" if r.best else "")
            + "<br>click to open")


def _result_dots(group: pd.DataFrame, results: dict[int, list[Verdict]]) -> go.Scatter:
    """Under each scored node, one coloured dot per validation example (our own markup:
    no data text goes in it)."""
    return go.Scatter(x=group["x"], y=group["y"] - DOTS_BELOW, mode="text",
                      text=[result_marks(results[int(i)]) for i in group["id"]],
                      textposition="bottom center", textfont={"size": 12}, cliponaxis=False,
                      customdata=group["id"], hoverinfo="skip", showlegend=False,
                      unselected=UNSELECTED)


def result_marks(verdicts: list[Verdict]) -> str:
    """``●●○`` in the verdicts' colours, wrapped; a count past :data:`DOTTED_UP_TO`."""
    if len(verdicts) > DOTTED_UP_TO:
        passed = sum(v is Verdict.PASS for v in verdicts)
        return f"{passed}/{len(verdicts)} pass"
    lines = []
    for start in range(0, len(verdicts), DOTS_PER_LINE):
        lines.append("".join(f'<span style="color:{RESULT_COLOURS[v]}">●</span>'
                             for v in verdicts[start:start + DOTS_PER_LINE]))
    return "<br>".join(lines)


def _iteration_axis(title: str, last: float) -> dict:
    """Whole-number ticks; one per iteration only while few (hundreds of forced tick labels
    take the browser seconds to lay out)."""
    axis: dict[str, str | int] = {"title": title, "tickformat": "d"}
    if pd.notna(last) and last <= 20:
        axis["dtick"] = 1
    return axis
