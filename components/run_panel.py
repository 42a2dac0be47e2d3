"""Starting a run (project, review policy, budget) and steering it (pause, resume, stop)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import streamlit as st
from pydantic import ValidationError
from streamlit.delta_generator import DeltaGenerator

from components import frame, loaders, session, test_guard
from components.export_menu import export_menu
from studio.model.config import EvolutionConfig, ReviewMode
from studio.model.costs import format_cost
from studio.model.errors import StudioError
from studio.model.records import RunRequest, RunStatus
from studio.model.stops import STOP_CONDITIONS, FormInput
from studio.model.team import Permission
from studio.projects import workspace
from studio.projects.workspace import start_project_run
from studio.views.markdown import escape_markdown
from studio.views.models import model_notes
from studio.views.run_notes import run_notes
from studio.views.tables import align_note, status_line

START = session.RUN_START
STOP_INPUTS = [(c.setting, c.form) for c in STOP_CONDITIONS if c.form is not None]
"""The stop conditions' settings the Run form asks for, each with its condition's input."""
REVIEW_LABELS = {"review": "Review: I decide on each proposal",
                 "auto": "Auto: the acceptance rule decides"}


def start_form(*, expanded: bool) -> None:
    """Pick a project, the review policy and the budget, and start: two clicks by default."""
    projects = loaders.projects()
    with st.expander("Start a new run", expanded=expanded, icon=":material/play_arrow:"):
        if not frame.allowed(Permission.RUN):
            return
        if not projects:
            st.info("There is no project yet. Load an example on the Projects page first.")
            frame.link(frame.PROJECTS, "Go to Projects", ":material/folder_open:")
            return
        ids = [p.id for p in projects if p.id is not None]  # stored: always
        current = session.current_project_id()
        current = current if current in ids else ids[0]
        names = {p.id: p.name for p in projects}
        if st.session_state.get(f"{START}.project") != current:
            st.session_state[f"{START}.project"] = current
        st.selectbox("Project", ids, key=f"{START}.project", format_func=names.__getitem__,
                     on_change=lambda: session.set_current_project(
                         st.session_state[f"{START}.project"]))
        defaults = _project_defaults(current)
        if defaults is None:
            return
        _form(current, names[current], defaults)


def _project_defaults(project_id: int) -> dict[str, Any] | None:

    try:
        return loaders.project_run_settings(project_id).model_dump(mode="json")
    except StudioError as exc:
        st.error(f"This project does not load: {escape_markdown(str(exc))}. Fix it on the "
                 "Projects page.")
        return None


def _form(project_id: int, project_name: str, defaults: dict[str, Any]) -> None:
    key = f"{START}.{project_id}"
    with st.form(f"{key}.form", border=False):
        st.radio("Review policy", list(REVIEW_LABELS), key=f"{key}.review",
                 index=list(REVIEW_LABELS).index(defaults.get("review", "auto")),
                 format_func=REVIEW_LABELS.get, horizontal=True)
        cols = _cells()
        for setting, form in STOP_INPUTS:
            _stop_input(next(cols), form, setting, defaults, key)
        next(cols).number_input("Minibatch size", 1, 1000, value=defaults["minibatch_size"],
                                key=f"{key}.minibatch_size")
        next(cols).number_input("Seed", 0, 2**31 - 1, value=defaults.get("seed", 0),
                                key=f"{key}.seed")
        next(cols).text_input("Run name", value=project_name, key=f"{key}.name")
        submitted = st.form_submit_button("Start run", type="primary", icon=":material/play_arrow:")
    if submitted:
        _start(project_id, defaults, key)


def _cells() -> Iterator[Any]:
    """The form's cells, four to a row, as many rows as asked for."""
    while True:
        yield from st.columns(4)


def _stop_input(column: Any, form: FormInput, setting: str, defaults: dict[str, Any],
                key: str) -> None:
    """A stop condition's input, as the condition describes it."""
    column.number_input(form.label, form.minimum, form.maximum, step=form.step,
                        value=form.shown(defaults.get(setting)), help=form.help,
                        key=f"{key}.{form.key or setting}")


def _start(project_id: int, defaults: dict[str, Any], key: str) -> None:

    ss = st.session_state
    chosen = {
        "review": ss[f"{key}.review"], "minibatch_size": int(ss[f"{key}.minibatch_size"]),
        "seed": int(ss[f"{key}.seed"]),
    } | {setting: form.setting(ss[f"{key}.{form.key or setting}"])
         for setting, form in STOP_INPUTS}
    try:
        config = EvolutionConfig.model_validate(defaults | chosen)
        with st.spinner("Checking the models and starting the run…"):
            run = start_project_run(loaders.store(), project_id, config, name=ss[f"{key}.name"])
    except ValidationError as exc:
        st.error(escape_markdown("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                           for e in exc.errors())), icon=":material/error:")
        return
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    session.set_current_run(run.id)
    loaders.runs.clear()
    mode = "you decide on each proposal on the Proposals page" if config.review == "review" \
        else "the acceptance rule decides"
    where = "queued for the team's workers" if run.status is RunStatus.QUEUED else "started"
    session.flash(f"Run {run.id} {where} ({mode}).")
    st.rerun()


def header(run: Any) -> None:
    """Name, status and the controls that fit the run's state (in one container, so the live
    table below keeps its place in the page whatever the header shows)."""
    with st.container():
        _header(run)


def _header(run: Any) -> None:
    title, buttons = st.columns([3, 2], vertical_alignment="center")
    with title:
        st.subheader(escape_markdown(run.name or "run"))
        review = ("you decide on each proposal" if run.config.review is ReviewMode.REVIEW
                  else "automatic (the acceptance rule decides)")
        worker = f" · worker `{run.worker}`" if run.worker else ""
        status, hint = status_line(run).split(": ", 1)
        cost = escape_markdown(format_cost(loaders.run_cost(run.id)))
        st.caption(f"Run `{run.id}` · **{status}**: {escape_markdown(hint)} · "
                   f"review: {review}{worker} · cost {cost}")
        for note in model_notes(run.spec):
            st.caption(escape_markdown(note[0].upper() + note[1:]) + ".")
        if run.waiting_note:
            st.warning(escape_markdown(run.waiting_note), icon=":material/hourglass_empty:")
        for note in run_notes(loaders.run_note_events(run.id)):
            st.info(escape_markdown(note), icon=":material/info:")
        if run.spec.aligns is not None:
            st.info(f"This run {escape_markdown(align_note(run))}: its examples are your "
                    "corrections, its score is agreement with you.", icon=":material/tune:")
            frame.link(frame.AGREEMENT, "Its before/after on the held-out labels: Agreement",
                       ":material/balance:")
    if run.status in (RunStatus.COMPLETED, RunStatus.STOPPED):
        frame.link(frame.COMPARE, "Finished: compare the versions it produced",
                   ":material/compare_arrows:")
    if run.status is RunStatus.COMPLETED:
        test_guard.problem_note(run.id)
    if run.error:
        st.error(f"The run failed: {escape_markdown(run.error)}. Fix the cause (often a model "
                 "or its API key) and resume it.", icon=":material/error:")
    with buttons:
        controls(run)


def controls(run: Any) -> None:
    if not session.actor().can(Permission.RUN):  # an export stays for every role
        export_menu(run.id)
        frame.allowed(Permission.RUN)
        return

    status = run.status
    paused = status is RunStatus.PAUSED or run.control is RunRequest.PAUSE
    stopping = status.is_active and run.control is RunRequest.STOP
    cols = st.columns(3)
    actions: list[tuple[DeltaGenerator, str, str, Callable[[], object]]] = []
    if status in (RunStatus.RUNNING, RunStatus.PENDING) and not paused and not stopping:
        actions.append((cols[0], "Pause", ":material/pause:",
                        lambda: workspace.pause_run(loaders.store(), run.id)))
    if paused or status in (RunStatus.STOPPED, RunStatus.ORPHANED, RunStatus.FAILED):
        actions.append((cols[0], "Resume", ":material/play_arrow:",
                        lambda: workspace.resume_run(loaders.store(), run.id)))
    if stopping:  # asked: the run stops within a heartbeat, its calls in flight cancelled
        cols[1].button("Stopping…", icon=":material/hourglass_top:", key="run.control.stopping",
                       width="stretch", disabled=True,
                       help="The run stops within seconds; its work so far is kept.")
    elif status.is_active or status is RunStatus.ORPHANED:
        actions.append((cols[1], "Stop", ":material/stop:",
                        lambda: workspace.stop_run(loaders.store(), run.id)))
    export_menu(run.id, where=cols[2])
    for column, label, icon, action in actions:
        if column.button(label, icon=icon, key=f"run.control.{label}", width="stretch"):
            try:
                action()
            except StudioError as exc:
                st.error(escape_markdown(str(exc)), icon=":material/error:")
                return
            loaders.runs.clear()
            st.rerun()
