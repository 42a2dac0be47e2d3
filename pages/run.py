"""Run: start a run, steer it (pause, resume, stop) and watch its trials arrive live."""

import streamlit as st

from components import (
    apply_panel,
    frame,
    loaders,
    run_panel,
    session,
    trial_table,
    workflow_builder,
)

st.title("Run")
loaders.recover_orphans()

run = loaders.run(session.current_run_id())
if run is not None and frame.blinded(run.id):
    st.stop()
run_panel.start_form(expanded=run is None)
if run is None:
    st.info("No run yet. Choose a project and a review policy above, then start: trials appear "
            "below as soon as they are scored.")
    st.stop()

st.divider()
run_panel.header(run)
apply_panel.applied(run.id)
workflow_builder.graph_picture(run.spec)
trial_filters = trial_table.filters(run.id, max(run.config.max_iterations, 1))
trial_table.live_panel(run.id, run.status, trial_filters)
