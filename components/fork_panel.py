"""Forks on Compare: "Fork from this candidate" (a new run seeded with any candidate, with other
settings or another critic; only what the stored run has, or inline settings), the lineage
across the runs this one was forked from, and the runs forked from it."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from components import frame, loaders, session
from studio.model.errors import StudioError
from studio.model.records import RunStatus
from studio.model.team import Permission
from studio.projects.forking import start_fork
from studio.views.lineage import CrossLineage, candidate_choices, cross_run_lineage, forks_frame
from studio.views.markdown import escape_markdown

FORM = "compare.fork"
STARTED = "compare.fork_started"
"""Prefix of the fork this session started last from a run (offered as "Open the fork" on
that run only): ``compare.fork_started.<source run id>``."""


def show(run_id: str, analysis: Any) -> None:
    st.subheader("Forks")
    lineage = cross_run_lineage(loaders.lineage_chain(run_id))
    if lineage.forked:
        st.caption("Lineage across runs: the path from the first run's seed to the candidate "
                   "each fork started from, then this run's own tree.")
        cross_run_chart(lineage)
        st.dataframe(lineage.path, hide_index=True, width="stretch", key="compare.fork_path",
                     placeholder="not pooled", column_config={
                         "validation mean": st.column_config.NumberColumn(format="%.3f")})
    form(run_id, analysis)
    opened_fork()
    children = forks_frame(loaders.forks(run_id))
    if not children.empty:
        st.caption("Runs forked from this one")
        st.dataframe(children, hide_index=True, width="stretch", key="compare.forks")


def form(run_id: str, analysis: Any) -> None:
    """Pick a candidate, change settings (or the critic, inline), start the fork."""
    if not frame.allowed(Permission.RUN):
        return
    view = analysis.view
    config = view.run.config
    choices = candidate_choices(view.candidates, view.means, view.best_id)
    best = next((c.index for c in view.candidates if c.id == view.best_id), 0)
    key = f"{FORM}.{run_id}"
    with st.form(key):
        st.markdown("**Fork from this candidate**: a new run whose seed is the candidate's "
                    "components, with the same agent and examples.")
        left, middle, right = st.columns(3)
        candidate = left.selectbox("Candidate", list(choices), format_func=choices.__getitem__,
                                   index=list(choices).index(best), key=f"{key}.candidate")
        iterations = middle.number_input("Max iterations", 0, 1000, config.max_iterations,
                                         key=f"{key}.iterations")
        review = right.selectbox("Review", ["auto", "review"], key=f"{key}.review",
                                 index=["auto", "review"].index(config.review.value))
        seed = left.number_input("Seed", 0, 2**31 - 1, config.seed, key=f"{key}.seed")
        minibatch = middle.number_input("Minibatch size", 1, 1000, config.minibatch_size,
                                        key=f"{key}.minibatch")
        name = right.text_input("Name (optional)", key=f"{key}.name", max_chars=200)
        critic = st.text_area("Another critic (YAML, optional; empty: this run's critic)",
                              key=f"{key}.critic", height=90, max_chars=50_000,
                              placeholder="{type: evaluator, evaluator: {evaluator: exact_match}}")
        submitted = st.form_submit_button("Start fork", icon=":material/call_split:",
                                          type="primary")
    if submitted:
        settings = {"max_iterations": int(iterations), "review": review, "seed": int(seed),
                    "minibatch_size": int(minibatch)}
        start(run_id, int(candidate), settings, critic, name)


def start(run_id: str, candidate: int, settings: dict, critic: str, name: str) -> None:
    try:
        with st.spinner("Checking and starting the fork…"):
            fork = start_fork(loaders.store(), run_id, candidate, settings=settings,
                              critic_yaml=critic, name=name)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    loaders.runs.clear()
    loaders.forks.clear()
    st.session_state[f"{STARTED}.{run_id}"] = fork.id
    where = "queued for the team's workers" if fork.status is RunStatus.QUEUED else "started"
    session.flash(f"Fork run {fork.id} {where} from candidate #{candidate}.")
    st.rerun()


def opened_fork() -> None:
    fork_id = st.session_state.get(f"{STARTED}.{session.current_run_id()}")
    if not fork_id:
        return
    if st.button(f"Open the fork {fork_id}", icon=":material/open_in_new:",
                 key="compare.open_fork"):
        session.set_current_run(fork_id)
        st.rerun()


def cross_run_chart(lineage: CrossLineage) -> None:
    nodes = lineage.nodes
    position = nodes.set_index("id")[["x", "y"]].to_dict("index")
    xs: list[float | None] = []
    ys: list[float | None] = []
    for parent, child in lineage.edges:
        if parent in position and child in position:
            xs += [position[parent]["x"], position[child]["x"], None]
            ys += [position[parent]["y"], position[child]["y"], None]
    figure = go.Figure(go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#b0bec5"},
                                  hoverinfo="skip", showlegend=False))
    for here, group in ((False, nodes[~nodes["here"]]), (True, nodes[nodes["here"]])):
        if group.empty:
            continue
        hover = [html.escape(f"{r.run} · #{r.index} · "
                             + ("not pooled" if r.mean != r.mean else f"mean {r.mean:.3f}"))
                 for r in group.itertuples()]
        figure.add_trace(go.Scatter(
            x=group["x"], y=group["y"], mode="markers+text",
            text=[html.escape(label) for label in group["label"]], textposition="top center",
            hovertext=hover, hoverinfo="text", name="this run" if here else "ancestors",
            marker={"size": [22 if b else 14 for b in group["best"]],
                    "symbol": ["star" if b else "circle" for b in group["best"]],
                    "color": "#1565c0" if here else "#90a4ae"}))
    figure.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis={"title": "steps since the first run's seed", "tickformat": "d"},
                         yaxis={"visible": False}, legend={"orientation": "h", "y": -0.3})
    st.plotly_chart(figure, width="stretch", key="compare.fork_lineage")
