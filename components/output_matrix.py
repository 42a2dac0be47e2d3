"""The output matrix on Compare: one row per validation example, one column per chosen version,
each cell the output with its score, coloured by pass/fail; filters above, the selected cell or
row in full below (with a correction form).

Cells are plain text in the grid (a pandas Styler colours them from the verdict, never from
model text), so nothing a model wrote is rendered as HTML or Markdown.
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from components import frame, loaders, session
from components.trial_detail import show_trial
from studio.engine.people.gates import merge_correction, override
from studio.model.errors import StudioError
from studio.model.limits import MAX_FEEDBACK_CHARS
from studio.model.team import Permission
from studio.views.markdown import escape_markdown
from studio.views.matrix import (
    DEFAULT_PASS_AT,
    SEARCH_LIMIT,
    Filtered,
    MatrixFilter,
    OutputMatrix,
    apply_filter,
    build_matrix,
    judged_by_adk,
    matrix_frame,
    pass_counts,
    verdict_frame,
    version_labels,
)


def show(run_id: str, analysis: Any, selected: list[int]) -> None:
    view = analysis.view
    versions = version_labels(view.candidates, selected, view.best_id)
    if not versions:
        st.caption("Pick a version above to see its outputs.")
        return
    chosen, pass_at = filters(run_id)
    trials = loaders.validation_trials(run_id, tuple(v.candidate_id for v in versions))
    val_ids = set(view.val_ids)
    examples = [e for e in analysis.examples if e.id in val_ids]
    matrix = build_matrix(versions, trials, examples, pass_at)
    result = apply_filter(matrix, chosen)
    if result.problem:
        st.warning(escape_markdown(result.problem), icon=":material/search_off:")
    counts = " · ".join(f"{label} passed {n}" for label, n in pass_counts(matrix).items())
    rule = ("pass: ADK's verdict, every metric at its threshold; the score in each cell is "
            "what GEPA optimises; a corrected trial passes at the pass mark"
            if judged_by_adk(matrix) else f"pass: score ≥ {pass_at:.2f}")
    st.caption(escape_markdown(f"Showing {len(result.rows)} of {result.total} example(s) · "
                               f"{counts} ({rule})"))
    if not result.rows:
        st.info("No example passes these filters.")
        return
    opened = grid(run_id, matrix, result, chosen, pass_at)
    if opened is not None:
        detail(run_id, matrix, result, *opened)


def filters(run_id: str) -> tuple[MatrixFilter, float]:
    cols = st.columns([1.5, 1, 2, 0.6, 0.8], vertical_alignment="bottom")
    differ = cols[0].toggle("Only where versions differ", key=f"{KEY}.differ.{run_id}")
    failures = cols[1].toggle("Only failures", key=f"{KEY}.failures.{run_id}",
                              help="Rows where a version failed, could not be evaluated or "
                                   "was not scored")
    search = cols[2].text_input("Search inputs, outputs and feedback",
                                key=f"{KEY}.search.{run_id}", max_chars=SEARCH_LIMIT,
                                placeholder="text, or a regex with the toggle")
    regex = cols[3].toggle("Regex", key=f"{KEY}.regex.{run_id}")
    pass_at = cols[4].number_input("Pass at", 0.0, 1.0, DEFAULT_PASS_AT, step=0.05,
                                   key=f"{KEY}.pass_at.{run_id}",
                                   help="A cell passes when its effective score is at least this")
    return MatrixFilter(differ, failures, search, regex), float(pass_at)


KEY = "compare.matrix"


def grid(run_id: str, matrix: OutputMatrix, result: Filtered, chosen: MatrixFilter,
         pass_at: float) -> tuple[int, int | None] | None:
    """Draw the matrix; return the opened ``(row position, candidate id or None for the whole
    row)``. The grid's key names the run, versions and filters: a selection is by position, so
    it must not carry over to another run or another filtering."""
    table = matrix_frame(matrix, result.rows)
    colours = verdict_frame(matrix, result.rows)
    styled = table.style.apply(lambda _: colours, axis=None)
    signature = repr((run_id, [v.candidate_id for v in matrix.versions], chosen, pass_at))
    key = f"{KEY}.grid.{hashlib.sha1(signature.encode()).hexdigest()[:12]}"
    config = {label: st.column_config.TextColumn(label, width="large")
              for label in table.columns[1:]}
    config["example"] = st.column_config.TextColumn("example", width="medium")
    picked = st.dataframe(styled, hide_index=True, width="stretch", key=key, on_select="rerun",
                          selection_mode=["single-row", "single-cell"], column_config=config)
    st.caption("✓ pass · ✗ fail · ? could not evaluate · select a cell to open that output, or "
               "a row to open every version's.")
    return opened_cell(picked, matrix)


def opened_cell(picked: Any, matrix: OutputMatrix) -> tuple[int, int | None] | None:
    selection = picked.selection if picked else None
    if selection is None:
        return None
    by_label = {v.label: v.candidate_id for v in matrix.versions}
    for row, column in list(selection.get("cells", [])):
        return int(row), by_label.get(column)
    rows = list(selection.get("rows", []))
    return (int(rows[0]), None) if rows else None


def detail(run_id: str, matrix: OutputMatrix, result: Filtered, position: int,
           candidate_id: int | None) -> None:
    if position >= len(result.rows):
        return
    row = result.rows[position]
    versions = [v for v in matrix.versions
                if candidate_id is None or v.candidate_id == candidate_id]
    st.markdown(f"**{escape_markdown(row.label)}**")
    tabs = st.tabs([v.label for v in versions])
    for tab, version in zip(tabs, versions, strict=True):
        with tab:
            cell = row.cells[version.candidate_id]
            if cell.trial is None or cell.trial.id is None:
                st.caption("This version was not scored on this example.")
                continue
            full = loaders.trial(run_id, cell.trial.id)
            if full is None:
                continue
            with st.container(border=True):
                show_trial(full, candidate=version.index)
                correction(run_id, full)


def correction(run_id: str, trial: Any, *, where: str = KEY) -> None:
    """Correct the critic here: the human's score and/or feedback for this trial (``where``
    keeps two forms for one trial apart, the matrix's and the heatmap's)."""
    if not frame.allowed(Permission.LABEL):
        return
    with st.form(f"{where}.correct.{trial.id}", border=False, clear_on_submit=True):
        cols = st.columns([1, 3, 1], vertical_alignment="bottom")
        score = cols[0].number_input("Human score", 0.0, 1.0, value=None, step=0.05,
                                     placeholder="keep the judge's")
        feedback = cols[1].text_input("Human feedback", max_chars=MAX_FEEDBACK_CHARS,
                                      placeholder="optional: what the critic missed")
        if cols[2].form_submit_button("Save correction", icon=":material/save:"):
            save(run_id, trial, score, feedback)


def save(run_id: str, trial: Any, score: float | None, feedback: str | None) -> None:
    try:
        score, feedback = merge_correction(trial.override, score, feedback)
        override(trial.id, score=score, feedback=feedback, author=session.author(),
                 store=loaders.store(), reviewer=session.reviewer())
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    title = loaders.trial_title(trial.run_id, trial.id).lower()
    session.flash(f"Saved the correction of {title} as "
                  f"{escape_markdown(session.author())}.")
    st.rerun()
