"""Plotly charts of a run: score per iteration, candidates x examples heatmap, lineage tree.

Plotly renders a subset of HTML in labels and hover text, so every label that comes from data
(dataset fields) goes through ``html.escape``; no model-written text is put in a chart.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from studio.views.charts import Lineage

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


def score_per_iteration(best: pd.DataFrame, markers: pd.DataFrame) -> None:
    figure = go.Figure()
    figure.add_trace(go.Scatter(
        x=best["iteration"], y=best["best"], mode="lines+markers", name="best validation mean",
        line={"shape": "hv", "color": "#1565c0", "width": 3},
        hovertemplate="iteration %{x}<br>best %{y:.3f}<extra></extra>"))
    for status, group in markers.groupby("status"):
        color, symbol = STATUS_STYLE.get(str(status), ("#9e9e9e", "circle-open"))
        figure.add_trace(go.Scatter(
            x=group["iteration"], y=group["score"], mode="markers", name=f"proposal {status}",
            marker={"color": color, "symbol": symbol, "size": 12,
                    "line": {"width": 2, "color": color}},
            customdata=group["proposal"],
            hovertemplate="proposal %{customdata}<br>iteration %{x}<br>child minibatch mean "
                          "%{y:.3f}<extra>" + html.escape(str(status)) + "</extra>"))
    figure.update_layout(height=360, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         yaxis={"range": [-0.05, 1.05], "title": "score (mean in [0, 1])"},
                         xaxis=_iteration_axis("iteration", best["iteration"].max()),
                         legend={"orientation": "h", "y": -0.25})
    st.plotly_chart(figure, width="stretch", key="compare.score_chart")


def heatmap(matrix: pd.DataFrame) -> None:
    if matrix.empty:
        st.caption("No candidate has been scored on the validation set yet.")
        return
    text = matrix.map(lambda v: "n/a" if pd.isna(v) else f"{v:.2f}")
    # Numbers in the cells only while they stay legible (and cheap for the browser to draw).
    labelled = matrix.size <= LABELLED_CELLS
    figure = go.Figure(go.Heatmap(
        z=matrix.values, x=[html.escape(str(c)) for c in matrix.columns],
        y=list(matrix.index), zmin=0, zmax=1, colorscale="RdYlGn", text=text.values,
        texttemplate="%{text}" if labelled else None,
        hovertemplate="%{y} on %{x}: %{text}<extra></extra>", colorbar={"title": "score"}))
    figure.update_layout(height=max(220, 40 * len(matrix) + 120),
                         margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis={"type": "category"},
                         yaxis={"autorange": "reversed", "type": "category"})
    st.plotly_chart(figure, width="stretch", key="compare.heatmap")
    st.caption("n/a: could not evaluate (never counted as 0).")


def lineage(tree: Lineage) -> None:
    if tree.nodes.empty:
        st.caption("No candidates yet.")
        return
    st.plotly_chart(lineage_figure(tree), width="stretch", key="compare.lineage")
    st.caption("★ best · coloured: in the pool, by validation mean · open grey: rejected or not "
               "yet accepted · thick blue ring: on the Pareto front"
               + (" · dashed orange: a merge's two parents." if tree.merge_edges else ".")
               + (f" {tree.note}" if tree.note else ""))


def lineage_figure(tree: Lineage) -> go.Figure:
    """The tree in four traces whatever its size: the edges in one line trace (None between
    edges), a merge's edges in another, the scored and the unscored nodes in one marker trace
    each."""
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
    for scored, group in ((True, nodes[nodes["mean"].notna()]),
                          (False, nodes[nodes["mean"].isna()])):
        if not group.empty:
            figure.add_trace(_lineage_nodes(group, scored, labelled=len(nodes) <= LABELLED_NODES))
    rows = nodes["y"].min() * -1 + 2
    figure.update_layout(height=min(LINEAGE_MAX_HEIGHT, max(260, 45 * rows)),
                         margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis=_iteration_axis("iteration born", nodes["x"].max()),
                         yaxis={"visible": False})
    return figure


def _lineage_nodes(group: pd.DataFrame, scored: bool, labelled: bool) -> go.Scatter:
    hover = [f"#{r.index} · {html.escape(r.status)} · "
             + (f"merge of {' and '.join(f'#{p}' for p in r.parents)} · "
                if len(r.parents) > 1 else "")
             + (f"mean {r.mean:.3f}" if scored else "not scored on the validation set")
             + (" · on the Pareto front" if r.on_front else "") + (" · best" if r.best else "")
             for r in group.itertuples()]
    marker = {"size": [24 if b else 16 for b in group["best"]],
              "symbol": ["star" if b else "circle" for b in group["best"]],
              "line": {"width": [3 if f else 1 for f in group["on_front"]], "color": "#1565c0"}}
    if scored:
        marker.update(color=group["mean"], cmin=0, cmax=1, colorscale="RdYlGn",
                      showscale=True, colorbar={"title": "mean"})
    else:
        marker.update(color="#78909c", symbol="circle-open",
                      line={"width": 2, "color": "#78909c"})
    return go.Scatter(x=group["x"], y=group["y"], mode="markers+text" if labelled else "markers",
                      text=[f"#{i}" for i in group["index"]], textposition="top center",
                      hovertext=hover, hoverinfo="text", showlegend=False, marker=marker)


def _iteration_axis(title: str, last: float) -> dict:
    """Whole-number ticks; one per iteration only while few (hundreds of forced tick labels
    take the browser seconds to lay out)."""
    axis = {"title": title, "tickformat": "d"}
    if pd.notna(last) and last <= 20:
        axis["dtick"] = 1
    return axis
