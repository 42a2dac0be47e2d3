"""Compare: instruction versions side by side, their outputs per example (the output matrix),
per-example scores with deltas, score per iteration, candidates x examples, the lineage tree
and the Pareto front."""

import streamlit as st

from components import (
    apply_panel,
    blame_view,
    compare_panel,
    fork_panel,
    frame,
    loaders,
    output_matrix,
    plots,
    test_guard,
)
from components.export_menu import export_menu
from studio.views import charts as chart_data

st.title("Compare")
run_id = frame.need_run()
if run_id is None:
    st.stop()

analysis = loaders.analysis(run_id)
view = analysis.view
if not view.candidates:
    st.info("The run has no candidates yet: the seed appears once its baseline is scored.")
    st.stop()

selected = compare_panel.pick(analysis)
compare_panel.diffs(analysis, selected)
st.subheader("Outputs side by side")
output_matrix.show(run_id, analysis, selected)
blame_view.show(analysis, selected)
st.subheader("Per-example scores")
compare_panel.per_example(analysis, selected)
test_guard.show(run_id)

st.subheader("Score per iteration")
best, _ = chart_data.iteration_series(view.candidates, view.means, analysis.proposals,
                                      analysis.child_means, analysis.last_iteration)
plots.score_per_iteration(best, chart_data.minibatch_points(loaders.proposal_history(run_id)))

st.subheader("Lineage")
compare_panel.lineage(run_id, analysis, selected)
st.subheader("Candidates × examples")
compare_panel.heatmap(run_id, analysis)

st.subheader("Pareto front")
compare_panel.front(analysis)
apply_panel.show(run_id, analysis)
fork_panel.show(run_id, analysis)
export_menu(run_id, where=st.columns(4)[0])  # the run's decisions, reasons and corrections
