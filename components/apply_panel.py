"""Compare's "Ship the winner": *Download the best* (its texts, and a patch when the folder is
served) and, under ``studio ui --agents``, *Apply to the folder*: the diff first, then a
confirm that writes exactly what was shown (:mod:`studio.projects.applying`). What was applied,
when and by whom is listed above the buttons."""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from components import frame, loaders, session
from studio.model.errors import StudioError
from studio.model.team import Permission
from studio.projects.applying import apply_plan
from studio.views.markdown import escape_markdown

SHOWN = "compare.apply_shown"
"""Prefix of the digest of the diff this session was shown for a run (``.<run id>``): the
confirm writes only when the folder would still change exactly so."""


def applied(run_id: str) -> None:
    """One line per write-back of the run's candidates into its folder (Compare, Run)."""
    for record in loaders.applications(run_id):
        st.caption(":material/publish: " + escape_markdown(record.summary()),
                   help=", ".join(record.components) or None)


def show(run_id: str, analysis: Any) -> None:
    st.subheader("Ship the winner")
    applied(run_id)
    view = analysis.view
    best = next((c for c in view.candidates if c.id == view.best_id), None)
    if best is None or best.index == 0:
        st.caption("The best candidate is still the seed: nothing to ship yet.")
        return
    folder = loaders.served_folder(run_id)
    left, right = st.columns(2)
    left.download_button(
        f"Download the best (#{best.index})", data=loaders.best_bundle(run_id),
        file_name=f"best-{run_id}-#{best.index}.zip", mime="application/zip",
        on_click="ignore", icon=":material/file_download:", key=f"compare.best.{run_id}",
        help="each component as <agent>.<component>.txt"
             + (", and the patch to the agent folder" if folder else ""))
    if folder is None:
        st.caption("*Apply to the folder* is offered for a run of an agent folder the studio "
                   "serves (`studio ui --agents DIR`); else `studio apply RUN` writes it.")
        return
    if not frame.allowed(Permission.APPLY):
        return
    key = f"{SHOWN}.{run_id}"
    if right.button(f"Apply to the folder ({folder.name})", icon=":material/publish:",
                    key=f"compare.apply.{run_id}"):
        st.session_state[key] = ""
    if key in st.session_state:
        _review(run_id, key)


def _review(run_id: str, key: str) -> None:
    """The diff and what goes where; Write applies it, Cancel forgets it."""
    try:
        plan = loaders.apply_plan(run_id)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    patch = plan.patch()
    digest = hashlib.sha256((patch + repr(plan.text_files)).encode()).hexdigest()
    shown, st.session_state[key] = st.session_state[key], digest
    with st.container(border=True):
        st.markdown(escape_markdown(f"Candidate #{plan.candidate.index} into {plan.folder}:"))
        st.markdown("\n".join(f"- {escape_markdown(line)}" for line in plan.lines()))
        if patch:
            st.code(patch, language="diff")
        names = [p.name for p in plan.files] + list(plan.text_files)
        write, cancel = st.columns(2)
        confirmed = write.button(f"Write {', '.join(names) or 'nothing'}", type="primary",
                                 disabled=not names, key=f"compare.apply_write.{run_id}")
        if cancel.button("Cancel", key=f"compare.apply_cancel.{run_id}"):
            del st.session_state[key]
            st.rerun()
    if confirmed:
        _write(run_id, key, plan, same=shown == digest)


def _write(run_id: str, key: str, plan: Any, *, same: bool) -> None:
    if not same:  # the folder changed between the diff shown and the click
        st.warning("The folder changed since this diff was shown: read it again above, then "
                   "write.", icon=":material/sync_problem:")
        return
    try:
        record = apply_plan(loaders.store(), plan, author=session.author())
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    del st.session_state[key]
    loaders.applications.clear()
    st.success(escape_markdown(f"Written: {', '.join(record.files + record.text_files)}."),
               icon=":material/check_circle:")
