"""The Agreement page's "Align critic" panel: how many labels the corrections make, a button that
starts an align run (an ordinary run: watched on Run, gated on Proposals), and for each align
run its agreement before/after on the held-out labels, the confusion matrices, the critic's
instruction diff, and the two ways to use the aligned critic.

Slow work runs in the background with its progress shown, the page staying live: scoring a
stopped align run's held-out labels (the test-set scoring of Compare), running a judge as it
will be applied on them (:func:`studio.projects.aligning.start_measure`) and re-scoring a run
(:func:`studio.projects.aligning.start_rescore`); a failure is shown where it was started."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import diff_view, frame, loaders, session, test_guard
from studio.critics.alignable import alignable_parts
from studio.model.config import EvolutionConfig
from studio.model.costs import format_cost
from studio.model.errors import StudioError
from studio.model.records import Run, RunStatus
from studio.model.team import Permission
from studio.projects import background
from studio.projects.aligning import (
    measure_key,
    rescore_key,
    start_align,
    start_measure,
    start_rescore,
    unalignable_reason,
    use_for_next_run,
)
from studio.views.aligning import active_line, agreement_frame, align_summary, reviewer_frame
from studio.views.markdown import escape_markdown
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
    refused = unalignable_reason(run.spec.critic)
    if refused is not None:
        st.info(f"This run's critic cannot be aligned: {escape_markdown(refused)}")
        return
    status = loaders.label_status(run_id)
    (st.success if status.ready else st.info)(status.message)
    if status.ready and run.spec.resumable and frame.allowed(Permission.RUN):
        form(run_id, alignable_parts(run.spec.critic.evaluator))
    for align_run in loaders.align_runs(run_id):
        with st.expander(f"Align run {align_run.id} · {align_run.status.value}",
                         expanded=True):
            result(align_run)
    rescore_table(run_id)


def form(run_id: str, parts: list[str]) -> None:
    """``parts``: a weighted critic's alignable parts; with several, the person picks one."""
    with st.form(f"{FORM}.{run_id}"):
        left, middle, right = st.columns(3)
        held_out = left.slider("Held-out share", 0.1, 0.5, 0.3, step=0.05,
                               key=f"{FORM}.held_out")
        iterations = middle.number_input("Max iterations", 1, 100, 5, key=f"{FORM}.iterations")
        review = right.selectbox("Review", ["auto", "review"], key=f"{FORM}.review")
        part = st.selectbox("Part of the weighted critic to align", parts, key=f"{FORM}.part",
                            help="The other parts and the weights stay as they are."
                            ) if len(parts) > 1 else None
        submitted = st.form_submit_button("Align critic", icon=":material/tune:",
                                          type="primary")
    if submitted:
        start(run_id, held_out, EvolutionConfig(max_iterations=int(iterations), review=review),
              part)


def start(run_id: str, held_out: float, config: EvolutionConfig, part: str | None = None
          ) -> None:
    threshold = float(st.session_state.get(session.AGREEMENT_THRESHOLD, 0.5))
    try:
        with st.spinner("Collecting the labels and starting the align run…"):
            run = start_align(loaders.store(), run_id, held_out=held_out, config=config,
                              threshold=threshold, part=part)
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
        active, labels = loaders.align_active_labels(run.id)
        st.caption(f"{active} of {labels} labels active now: it reads the corrections as they "
                   "are at every step (an undone one is not scored, a changed one counts at "
                   "its new value).")
        watch(run.id)
        return
    # the source run's corrections are the labels: a change there is a new report
    origin = run.spec.aligns
    if origin is None:  # not an align run: there is nothing to report
        return
    report = loaders.align_report(run.id, origin.run_id)
    if report.measure_pending:
        measuring(run.id)
        return
    st.markdown(escape_markdown(align_summary(report)))
    st.caption(escape_markdown(active_line(report) + "."))
    if report.before is None or report.after is None:
        score_held_out_button(run.id)
        return
    st.caption(escape_markdown(f"Measured by {report.measured_by}. The last column is the "
                               "scores you corrected, as the critic recorded them."))
    st.dataframe(agreement_frame(report.before, report.after,
                                 ("original critic", "aligned critic"), report.recorded),
                 hide_index=True, width="stretch", key=f"{FORM}.table.{run.id}")
    left, right = st.columns(2)
    for column, title, rep in ((left, "Original critic", report.before),
                               (right, "Aligned critic", report.after)):
        column.caption(f"{title}: confusion on the held-out labels (the person is the truth)")
        column.dataframe(confusion_frame(rep.confusion), width="stretch")
    if report.reviewers:
        st.caption("Distance from each reviewer and from their consensus (what the critic was "
                   "aligned on): mean absolute error on the held-out trials")
        st.dataframe(reviewer_frame(report), hide_index=True, width="stretch",
                     placeholder="n/a", key=f"{FORM}.reviewers.{run.id}")
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


def score_held_out_button(align_run_id: str) -> None:
    """A stopped align run: score the original and the aligned critic on the held-out labels
    now, in the background (Compare's test-set scoring)."""
    if loaders.testing_now(align_run_id):
        st.info("Scoring the original and the aligned critic on the held-out labels…",
                icon=":material/hourglass_top:")
        test_guard.watch(align_run_id)
        return
    if not frame.allowed(Permission.RUN):
        return
    if st.button("Score the held-out labels", key=f"{FORM}.test.{align_run_id}",
                 icon=":material/science:", type="primary"):
        test_guard.start_scoring(
            align_run_id, "Scoring the held-out labels: before/after shows here when it is done.")


def measuring(align_run_id: str) -> None:
    """A judge's before/after: the real judge runs on the held-out labels in the background
    (started on first sight); a failure is shown with a button to try again."""
    key = measure_key(align_run_id)
    job = background.job(key)
    if (job is None or job.finished) and not frame.allowed(Permission.RUN):
        return  # running the judge spends the API keys: an owner starts it
    if job is not None and job.finished and (job.error or job.result is None):
        st.error(escape_markdown(f"Running the judge on the held-out labels failed: "
                                 f"{job.error or 'it ended without a result'}"),
                 icon=":material/error:")
        if st.button("Try again", key=f"{FORM}.measure.{align_run_id}",
                     icon=":material/replay:"):
            start_measure(loaders.store(), align_run_id)
            st.rerun()
        return
    if job is None or job.finished:
        start_measure(loaders.store(), align_run_id)
    st.info("Running the judge as it will be applied, with its original and its aligned text, "
            "on the held-out labels: before/after shows here when it is done.",
            icon=":material/hourglass_top:")
    progress(key)


def progress(key: str) -> None:
    """A background job's progress bar; the page redraws when the job ends."""

    @st.fragment(run_every=1)
    def bar() -> None:
        job = background.job(key)
        if job is None or job.finished:
            st.rerun(scope="app")
            return
        st.progress(job.progress, text=f"{job.label}: {job.done} of {job.total or '…'}")

    bar()


def use_buttons(align_run_id: str, report: Any) -> None:
    if not frame.allowed(Permission.APPLY):
        return
    left, right = st.columns(2)
    if left.button("Use for next run", key=f"{FORM}.use.{align_run_id}",
                   icon=":material/content_copy:"):
        act(lambda store: use_for_next_run(store, align_run_id), chosen_project)
    source = report.source_run_id
    busy = _running(rescore_key(source))
    if right.button("Re-score this run", key=f"{FORM}.rescore.{align_run_id}",
                    icon=":material/replay:", disabled=busy,
                    help="Runs in the background: the page stays usable." if not busy else
                    "A scoring pass of this run is under way."):
        start_rescore(loaders.store(), source, align_run_id)
        st.rerun()
    rescore_status(source)


def _running(key: str) -> bool:
    job = background.job(key)
    return job is not None and job.running


def rescore_status(run_id: str) -> None:
    """The run's scoring pass: its progress while it runs, then its outcome or its failure."""
    key = rescore_key(run_id)
    job = background.job(key)
    if job is None:
        return
    if job.running:
        progress(key)
        return
    if job.error or job.result is None:
        st.error(escape_markdown(f"Re-scoring run {run_id} failed: "
                                 f"{job.error or 'it ended without a result'}"),
                 icon=":material/error:")
        return
    _refresh_once(job)
    scoring = job.result
    st.success(f"Scoring pass {scoring.id}: {len(scoring.scores)} trials of run {run_id} "
               "scored again; their old scores are kept.", icon=":material/check_circle:")


def _refresh_once(job: Any) -> None:
    """The finished pass is kept (every session sees its outcome until a new pass starts);
    each session re-reads the stored passes once when it first sees it finished."""
    seen = f"{FORM}.seen.{job.key}"
    if st.session_state.get(seen) != id(job):
        st.session_state[seen] = id(job)
        loaders.rescore_passes.clear()


def chosen_project(project: Any) -> str:
    """The copy becomes the current project, so the Run page starts its next run."""
    session.set_current_project(project.id)
    return (f"Project {escape_markdown(repr(project.name))} judges with the aligned critic "
            "and is now the current project: start its next run on the Run page.")


def act(action: Any, message: Any) -> None:
    try:
        with st.spinner("Working…"):
            outcome = action(loaders.store())
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    loaders.projects.clear()
    session.flash(message(outcome))
    st.rerun()


def rescore_table(run_id: str) -> None:
    """Each scoring pass beside the original scores, against the same corrections."""
    for scoring in loaders.rescore_passes(run_id):
        st.caption(f"Scoring pass {scoring.id} with the critic aligned by run "
                   f"{scoring.align_run_id}: agreement with your corrections, on "
                   f"{scoring.scope} · cost {escape_markdown(format_cost(scoring.cost_usd))}")
        st.dataframe(agreement_frame(scoring.before, scoring.after,
                                     ("original scores", f"pass {scoring.id}")),
                     hide_index=True, width="stretch", key=f"{FORM}.pass.{scoring.id}")
        if scoring.in_sample_before is not None and scoring.in_sample_after is not None:
            st.caption(f"In-sample reference: every corrected trial, including the labels "
                       f"pass {scoring.id}'s critic was trained on (overstates it)")
            st.dataframe(agreement_frame(scoring.in_sample_before, scoring.in_sample_after,
                                         ("original scores", f"pass {scoring.id}")),
                         hide_index=True, width="stretch",
                         key=f"{FORM}.pass.{scoring.id}.in_sample")
