"""Compare: instruction versions side by side, their outputs per example (the output matrix),
per-example scores with deltas, score per iteration, candidates x examples, the lineage tree
and the Pareto front."""

import streamlit as st

from components import (
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
best, markers = chart_data.iteration_series(view.candidates, view.means, analysis.proposals,
                                            analysis.child_means, analysis.last_iteration)
plots.score_per_iteration(best, markers)

left, right = st.columns(2)
with left:
    st.subheader("Candidates × examples")
    val = [e for e in analysis.examples if e.id in set(view.val_ids)]
    plots.heatmap(chart_data.score_matrix(view.matrix, view.candidates, val))
with right:
    st.subheader("Lineage")
    statuses = {p.child_id: p.status.value for p in analysis.proposals if p.child_id}
    plots.lineage(chart_data.lineage_layout(view.candidates, view.means, view.front,
                                             view.best_id, statuses, shown=selected))

st.subheader("Pareto front")
compare_panel.front(analysis)
fork_panel.show(run_id, analysis)
export_menu(run_id, where=st.columns(4)[0])  # the run's decisions, reasons and corrections
