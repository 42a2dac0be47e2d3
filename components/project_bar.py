"""The Projects page's toolbar: pick, create, duplicate, delete, import and export projects, and
load the shipped examples."""

from __future__ import annotations

import streamlit as st

from components import loaders, session
from studio.model.errors import StudioError
from studio.projects.workspace import (
    ExampleKind,
    duplicate_project,
    import_example,
    import_upload,
    new_project,
)
from studio.views.markdown import escape_markdown


def toolbar() -> object | None:
    """The chosen stored project (or None when there is none yet)."""
    projects = loaders.projects()
    current = session.current_project_id()
    ids = [p.id for p in projects if p.id is not None]  # stored: always
    if current not in ids:
        current = ids[0] if ids else None
        session.set_current_project(current)
    if not ids or current is None:  # current is one of ids when there are any
        return None
    names = {p.id: p.name for p in projects}
    if st.session_state.get(session.PROJECTS_PICKER) != current:
        st.session_state[session.PROJECTS_PICKER] = current
    pick, new, dup, delete, export = st.columns([3, 1, 1.4, 1.1, 1.1],
                                                     vertical_alignment="bottom")
    pick.selectbox("Project", ids, key=session.PROJECTS_PICKER, format_func=names.__getitem__,
                   on_change=lambda: session.set_current_project(
                       st.session_state[session.PROJECTS_PICKER]))
    record = loaders.project(current)
    if new.button("New", icon=":material/add:", width="stretch"):
        _act(lambda: _new())
    if dup.button("Duplicate", icon=":material/content_copy:", width="stretch"):
        _act(lambda: _duplicate(current))
    if delete.button("Delete", icon=":material/delete:", width="stretch"):
        _confirm_delete(record)
    export.download_button("Export", data=record.yaml if record else "",
                           file_name=f"{record.name if record else 'project'}.yaml",
                           mime="application/x-yaml", icon=":material/download:",
                           width="stretch")
    with st.expander("Add a project: examples and import"):
        add_projects()
    return record


def empty_state() -> None:
    st.info("No projects yet. Load an example below (no API key needed), import a project "
            "YAML, or start from a blank one.")
    add_projects()
    if st.button("Create a blank project", icon=":material/add:"):
        _act(lambda: _new())


def add_projects() -> None:
    st.markdown("**Examples**")
    for n, example in enumerate(loaders.examples_available()):
        scripted = example.kind is ExampleKind.SCRIPTED
        cols = st.columns([2, 5], vertical_alignment="center")
        if cols[0].button(f"Load example: {example.name}", key=f"projects.example.{example.name}",
                          width="stretch", type="primary" if n == 0 and scripted else "secondary"):
            _act(lambda e=example: _load_example(e))
        note = (":green[:material/bolt:] " if scripted else ":orange[:material/hourglass:] ") + \
            example.kind.note
        cols[1].caption(f"{escape_markdown(example.description)}  \n{note}")
    st.markdown("**Import a project file**")
    # A new uploader after each import: the next file is read afresh, even one fixed and chosen
    # again under the same name.
    generation = st.session_state.get(f"{session.PROJECTS_UPLOAD}.generation", 0)
    upload = st.file_uploader("Project YAML", type=["yaml", "yml"],
                              key=f"{session.PROJECTS_UPLOAD}.{generation}",
                              label_visibility="collapsed")
    if upload is not None and st.button("Import", icon=":material/upload:"):
        data = upload.getvalue()
        st.session_state[f"{session.PROJECTS_UPLOAD}.generation"] = generation + 1
        _act(lambda: _import(data, upload.name))


def _act(action) -> None:
    """Run a store action; show its error here, or select the project it returns."""
    try:
        record = action()
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    loaders.projects.clear()
    if record is not None:
        session.set_current_project(record.id)
    st.rerun()


def _new():

    project = new_project(loaders.store())
    session.flash(f"Created {escape_markdown(project.name)}: edit it below.")
    return project


def _duplicate(project_id: int):

    project = duplicate_project(loaders.store(), project_id)
    session.flash(f"Duplicated as {escape_markdown(project.name)}.")
    return project


def _load_example(example):

    project = import_example(loaders.store(), example.path)
    session.flash(f"Loaded the example {escape_markdown(project.name)}. Try it on one example "
                "below, or start a run on the Run page.")
    return project


def _import(data: bytes, filename: str):

    project = import_upload(loaders.store(), data, filename)
    session.flash(f"Imported {escape_markdown(project.name)}.")
    return project


@st.dialog("Delete this project?")
def _confirm_delete(record) -> None:
    st.write(f"{escape_markdown(record.name)} will be deleted. Its runs stay in the database.")
    keep, delete = st.columns(2)
    if keep.button("Keep the project", type="primary", width="stretch"):
        st.rerun()  # closes the dialog
    if delete.button("Delete", type="secondary", icon=":material/delete:", width="stretch"):
        loaders.store().delete_project(record.id)
        loaders.projects.clear()
        session.set_current_project(None)
        st.rerun()
