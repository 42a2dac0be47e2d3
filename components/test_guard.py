"""The overfitting guard on Compare: train / validation / test means of the baseline and the best
candidate, whether the validation gain carries to the held-out test set, and a button that
scores the test set now."""

from __future__ import annotations

import streamlit as st

from components import frame, loaders, session
from studio.engine.scoring.guard import GuardStatus
from studio.model.errors import StudioError
from studio.model.team import Permission
from studio.projects.testsets import score_test_from_browser
from studio.views.holdout import GUARD_RULE, LEVELS, guard_frame
from studio.views.markdown import escape_markdown

ICONS = {"warning": ":material/warning:", "success": ":material/check_circle:",
         "info": ":material/info:"}


def show(run_id: str) -> None:
    st.subheader("Train / validation / test")
    report = loaders.holdout(run_id)
    if report.test_size == 0:
        st.caption("This run has no test set. Give the project a `dataset.test` (rows the loop "
                   "never sees) to check that the validation gain holds on unseen data.")
        return
    table = guard_frame(report).rename(columns={
        "baseline": f"baseline #{report.baseline_index}", "best": f"best #{report.best_index}"})
    number = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(table, hide_index=True, width="stretch", key="compare.guard",
                 placeholder="no score", column_config={
                     c: number for c in table.columns if c.startswith(("baseline", "best"))}
                 | {"gain": st.column_config.NumberColumn(format="%+.3f")})
    verdict = report.verdict
    level = LEVELS[verdict.status]
    getattr(st, level)(escape_markdown(verdict.message[:1].upper() + verdict.message[1:]),
                       icon=ICONS[level])
    st.caption(GUARD_RULE)
    problem_note(run_id)
    score_button(run_id, needed=verdict.status is GuardStatus.NOT_SCORED)


def problem_note(run_id: str) -> None:
    """The last test scoring's failure or stop, until a scoring succeeds."""
    problem = loaders.test_scoring_problem(run_id)
    if problem:
        st.warning(escape_markdown(problem[:1].upper() + problem[1:]),
                   icon=":material/warning:")


def score_button(run_id: str, *, needed: bool) -> None:
    """Score the baseline and the best on the test set (pairs already judged are reused)."""
    if loaders.testing_now(run_id):
        st.info("Scoring the baseline and the best candidate on the test set…",
                icon=":material/hourglass_top:")
        watch(run_id)
        return
    if not frame.allowed(Permission.RUN):
        return
    run = loaders.run(run_id)
    active = run is not None and run.status.is_active
    label = "Score on the test set" if needed else "Score again on the test set"
    clicked = st.button(label, icon=":material/science:", key="compare.score_test",
                        disabled=active, type="primary" if needed else "secondary",
                        help="The run scores its test set when it completes" if active else
                        "Scores the baseline and the current best; pairs already judged are "
                        "reused, so only new pairs cost model calls.")
    if clicked:
        start_scoring(run_id, "Scoring the test set: the table fills in when it is done.")


def start_scoring(run_id: str, started: str) -> None:
    """Score the run's test set in the background (the Compare page's and the align panel's
    button); ``started`` is the message shown once it is on its way."""
    try:
        score_test_from_browser(loaders.store(), run_id)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    session.flash(started)
    st.rerun()


def watch(run_id: str) -> None:
    """Redraw the page once the scoring ends (checked every second)."""

    @st.fragment(run_every=1)
    def watcher() -> None:
        if not loaders.testing_now(run_id):
            st.rerun(scope="app")

    watcher()
