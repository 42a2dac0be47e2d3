"""The Agreement page's "Align critic" panel: how many labels the corrections make, a button that
starts an align run (an ordinary run: watched on Run, gated on Proposals), and for each align
run its agreement before/after on the held-out labels, the confusion matrices, the critic's
instruction diff, and the two ways to use the aligned critic."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import diff_view, frame, loaders, session
from studio.model.config import EvolutionConfig
from studio.model.errors import StudioError
from studio.model.records import Run, RunStatus
from studio.projects.aligning import rescore_run, start_align, use_for_next_run
from studio.views.aligning import agreement_frame, align_summary
from studio.views.diffing import escape_markdown
from studio.views.tables import confusion_frame

FORM = "agreement.align"


def show(run_id: str) -> None:
    st.subheader("Align critic")
    run = loaders.run(run_id)
    if run is None:
        return
    if run.spec.aligns is not None:
        st.caption(f"This is an align run of run {run.spec.aligns.run_id}'s critic.")
        result(run)
        return
    st.caption("Evolve this run's critic so that it agrees with your corrections: each "
               "corrected score is a label; a share of them is held out to test on.")
    status = loaders.label_status(run_id)
    (st.success if status.ready else st.info)(status.message)
    if status.ready and run.spec.resumable:
        form(run_id)
    for align_run in loaders.align_runs(run_id):
        with st.expander(f"Align run {align_run.id} · {align_run.status.value}",
                         expanded=True):
            result(align_run)
    rescore_table(run_id)


def form(run_id: str) -> None:
    with st.form(f"{FORM}.{run_id}"):
        left, middle, right = st.columns(3)
        held_out = left.slider("Held-out share", 0.1, 0.5, 0.3, step=0.05,
                               key=f"{FORM}.held_out")
        iterations = middle.number_input("Max iterations", 1, 100, 5, key=f"{FORM}.iterations")
        review = right.selectbox("Review", ["auto", "review"], key=f"{FORM}.review")
        submitted = st.form_submit_button("Align critic", icon=":material/tune:",
                                          type="primary")
    if submitted:
        start(run_id, held_out, EvolutionConfig(max_iterations=int(iterations), review=review))


def start(run_id: str, held_out: float, config: EvolutionConfig) -> None:
    threshold = float(st.session_state.get(session.AGREEMENT_THRESHOLD, 0.5))
    try:
        with st.spinner("Collecting the labels and starting the align run…"):
            run = start_align(loaders.store(), run_id, held_out=held_out, config=config,
                              threshold=threshold)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    loaders.runs.clear()
    loaders.align_runs.clear()
    where = "queued for the team's workers" if run.status is RunStatus.QUEUED else "started"
    session.flash(f"Align run {run.id} {where}: watch it on the Run page.")
    st.rerun()


def result(run: Run) -> None:
    """One align run: where it is, agreement before/after, the diff, and how to use it."""
    run = loaders.run(run.id) or run
    if run.status.is_active:
        st.caption(f"Align run {run.id} is {run.status.value}: its result shows here when it "
                   "ends; its proposals wait on Proposals in review mode.")
        if st.button("Watch it on the Run page", key=f"{FORM}.watch.{run.id}",
                     icon=":material/monitoring:"):
            session.set_current_run(run.id)
            frame.go(frame.RUN)
        watch(run.id)
        return
    report = loaders.align_report(run.id, (loaders.run_version(run.id), run.status.value))
    st.markdown(escape_markdown(align_summary(report)))
    if report.before is None or report.after is None:
        return
    st.dataframe(agreement_frame(report.before, report.after,
                                 ("original critic", "aligned critic")),
                 hide_index=True, width="stretch", key=f"{FORM}.table.{run.id}")
    left, right = st.columns(2)
    for column, title, rep in ((left, "Original critic", report.before),
                               (right, "Aligned critic", report.after)):
        column.caption(f"{title}: confusion on the held-out labels (the person is the truth)")
        column.dataframe(confusion_frame(rep.confusion), width="stretch")
    diff_view.side_by_side(report.text_before, report.text_after,
                           left=f"original {report.target}", right=f"aligned {report.target}")
    use_buttons(run.id, report)


def watch(run_id: str) -> None:
    """Redraw the page once the align run settles (checked every two seconds)."""

    @st.fragment(run_every=2)
    def watcher() -> None:
        current = loaders.run(run_id)
        if current is None or not current.status.is_active:
            st.rerun(scope="app")

    watcher()


def use_buttons(align_run_id: str, report: Any) -> None:
    left, right = st.columns(2)
    if left.button("Use for next run", key=f"{FORM}.use.{align_run_id}",
                   icon=":material/content_copy:"):
        act(lambda store: use_for_next_run(store, align_run_id), chosen_project)
    if right.button("Re-score this run", key=f"{FORM}.rescore.{align_run_id}",
                    icon=":material/replay:"):
        act(lambda store: rescore_run(store, report.source_run_id, align_run_id),
            lambda scoring: f"Scoring pass {scoring.id}: {len(scoring.scores)} trials of run "
                            f"{report.source_run_id} scored again; their old scores are kept.")


def chosen_project(project: Any) -> str:
    """The copy becomes the current project, so the Run page starts its next run."""
    session.set_current_project(project.id)
    return (f"Project {project.name!r} judges with the aligned critic and is now the current "
            "project: start its next run on the Run page.")


def act(action: Any, message: Any) -> None:
    try:
        with st.spinner("Working…"):
            outcome = action(loaders.store())
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    loaders.projects.clear()
    loaders.rescore_passes.clear()
    session.flash(message(outcome))
    st.rerun()


def rescore_table(run_id: str) -> None:
    """Each scoring pass beside the original scores, against the same corrections."""
    for scoring in loaders.rescore_passes(run_id):
        st.caption(f"Scoring pass {scoring.id} with the critic aligned by run "
                   f"{scoring.align_run_id}: agreement with your corrections")
        st.dataframe(agreement_frame(scoring.before, scoring.after,
                                     ("original scores", f"pass {scoring.id}")),
                     hide_index=True, width="stretch", key=f"{FORM}.pass.{scoring.id}")
