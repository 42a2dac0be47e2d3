"""The list of recent runs (landing page) and the quick start."""

from __future__ import annotations

import streamlit as st

from components import frame, loaders, session
from studio.model.errors import StudioError
from studio.model.team import Permission
from studio.projects.workspace import import_example
from studio.views.markdown import escape_markdown
from studio.views.tables import runs_frame

COLUMNS = {
    "id": st.column_config.TextColumn("run"),
    "waiting": st.column_config.TextColumn(
        "waiting", help="A proposal waits for your decision on the Proposals page"),
    "best": st.column_config.NumberColumn("best", format="%.3f",
                                          help="Best validation mean the engine reported"),
    "gain": st.column_config.NumberColumn("gain", format="%+.3f",
                                          help="Best minus the seed's validation mean"),
    "iterations": st.column_config.NumberColumn("max iter."),
}


def recent_runs(runs: list) -> None:
    frame_ = runs_frame(runs[:20], loaders.run_summaries(20))
    picked = st.dataframe(
        frame_, hide_index=True, on_select="rerun", selection_mode="single-row",
        key="home.runs", column_config=COLUMNS, placeholder="–",
    )
    rows = picked.selection.rows if picked else []
    st.caption("Select a run to open it.")
    if rows:
        run_id = frame_.iloc[rows[0]]["id"]
        session.set_current_run(run_id)
        st.session_state.pop("home.runs", None)
        frame.go(frame.RUN)


def quick_start() -> None:
    """One click to a watchable demo: load the scripted example and open the Run page."""
    examples = [e for e in loaders.examples_available() if e.name == "haiku-scripted"]
    if not examples or not frame.allowed(Permission.CONFIGURE):
        return
    if st.button("Load the scripted demo project and open Run", icon=":material/bolt:",
                 key="home.quick_start", type="primary"):

        try:
            project = import_example(loaders.store(), examples[0].path)
        except StudioError as exc:
            st.error(escape_markdown(str(exc)))
            return
        loaders.projects.clear()
        session.set_current_project(project.id)
        session.flash(f"Loaded the example project {escape_markdown(project.name)}. "
                      "Choose a review mode and start a run.", page=frame.RUN)
        frame.go(frame.RUN)
