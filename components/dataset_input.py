"""Dataset fields of the project editor: upload or paste rows, preview them, pick the input and
expected columns, and choose how the validation and test sets are made.

Loaded rows never replace a dataset at once: they wait (``projects.rows_pending.<project id>``)
while the page shows their columns, the input and expected columns it would use (the current
ones when the new rows have them, else a usual name such as ``question``), and how many rows they
replace; the person confirms or keeps the current rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from studio.model.errors import StudioError
from studio.projects.files import decode_text
from studio.views import drafts
from studio.views.drafts import RowsImport, RowsTarget
from studio.views.markdown import escape_markdown

PENDING = "projects.rows_pending"
"""Prefix of the rows waiting for confirmation, per project."""
UPLOADER = "projects.rows_upload"
"""Prefix of the rows uploader's key; a new key after each use, so the next file (even under
the same name) is read afresh."""


def dataset_fields(editor: Any, errors: dict[str, str]) -> None:
    rows = editor.get("train_rows")
    if rows:
        st.markdown(f"**Training rows: {len(rows)}**")
        st.dataframe(rows, hide_index=False, width="stretch", height=min(38 + 35 * len(rows), 250))
    _error(errors, "train_rows")
    load_rows(editor)
    names = drafts.columns(rows)
    if names:
        _column_pickers(editor, names, errors)
    _validation_set(editor, errors)
    _test_set(editor, errors)


def _validation_set(editor: Any, errors: dict[str, str]) -> None:
    val_rows = editor.get("val_rows")
    st.markdown("**Validation set**")
    if val_rows is not None:
        st.caption(f"{len(val_rows)} validation rows, given separately.")
        st.dataframe(val_rows, width="stretch", height=min(38 + 35 * len(val_rows), 200))
        _error(errors, "val_rows")
        st.button("Split the training rows instead", on_click=editor.set,
                  args=("val_rows", None), key=f"projects.drop_val.{editor.record.id}")
    else:
        cols = st.columns(2)
        cols[0].slider("Share of training rows held out for validation (0: validate on the "
                       "training rows)", 0.0, 0.5, step=0.05, key=editor.key("val_fraction"))
        cols[1].number_input("Split seed", 0, 2**31 - 1, key=editor.key("split_seed"))
        _error(errors, "val_fraction")


def _test_set(editor: Any, errors: dict[str, str]) -> None:
    """The held-out test set: scored once on the best version after a run, never evolved on."""
    test_rows = editor.get("test_rows")
    st.markdown("**Test set**")
    if test_rows is None:
        st.caption("No test set. Load rows *Into: test rows* above to score the best version on "
                   "examples the run never sees.")
        return
    st.caption(f"{len(test_rows)} test rows: scored on the best version after a run, never "
               "shown to the reflection.")
    st.dataframe(test_rows, width="stretch", height=min(38 + 35 * len(test_rows), 200))
    _error(errors, "test_rows")
    st.button("Remove the test set", on_click=editor.set, args=("test_rows", None),
              key=f"projects.drop_test.{editor.record.id}")


def _column_pickers(editor: Any, names: list[str], errors: dict[str, str]) -> None:
    left, right = st.columns(2)
    inputs = ["", *names]  # "" (not None, which a selectbox shows as "nothing chosen")
    if editor.get("input_column") not in inputs:
        editor.set("input_column", "")
    left.selectbox("Input column (the agent's input text)", inputs,
                   key=editor.key("input_column"),
                   format_func=lambda c: c or drafts.ALL_FIELDS)
    with left:
        _error(errors, "input_column")
    if editor.get("expected_column") not in inputs:
        editor.set("expected_column", "")
    right.selectbox("Expected column (the reference answer, optional)", inputs,
                    key=editor.key("expected_column"),
                    format_func=lambda c: c or drafts.NO_EXPECTED)
    with right:
        _error(errors, "expected_column")


def load_rows(editor: Any) -> None:
    """Read rows from an uploaded file or pasted text; they wait for a confirmation."""
    pid = editor.record.id
    pending: RowsImport | None = st.session_state.get(f"{PENDING}.{pid}")
    if pending is not None:
        _confirm(editor, pending)
    with st.expander("Load rows: upload a CSV/JSONL file or paste", expanded=not editor.get(
            "train_rows") and pending is None):
        target = st.radio("Into", list(RowsTarget), horizontal=True,
                          key=f"projects.rows_target.{pid}", format_func=lambda t: t.label
                          ) or RowsTarget.TRAIN  # a radio with an index always has a choice
        generation = st.session_state.get(f"{UPLOADER}.generation.{pid}", 0)
        upload = st.file_uploader("File (CSV with a header row, JSONL, or a JSON array)",
                                  type=["csv", "jsonl", "ndjson", "json"],
                                  key=f"{UPLOADER}.{pid}.{generation}")
        if upload is not None and st.button("Use the uploaded file",
                                            key=f"projects.rows_use_upload.{pid}"):
            try:
                text = decode_text(upload.getvalue(), upload.name)
            except StudioError as exc:
                st.error(escape_markdown(str(exc)), icon=":material/error:")
            else:
                _read(editor, target, text, drafts.detect_format(text, upload.name), upload.name)
        st.text_area("Or paste rows", key=f"projects.rows_paste.{pid}", height=120,
                     placeholder='topic,expected\nautumn leaves,...\n\nor one JSON object per '
                                 'line: {"topic": "autumn leaves"}')
        fmt = st.selectbox("Pasted format", drafts.DATASET_FORMATS,
                           key=f"projects.rows_format.{pid}")
        if st.button("Use the pasted rows", key=f"projects.rows_use_paste.{pid}"):
            _read(editor, target, st.session_state.get(f"projects.rows_paste.{pid}", ""), fmt,
                  "pasted data")


def _read(editor: Any, target: RowsTarget, text: str, fmt: str, source: str) -> None:
    pid = editor.record.id
    try:
        pending = drafts.read_import(text, fmt, source, target, editor.get(target.value))
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    st.session_state[f"{PENDING}.{pid}"] = pending
    for role in ("input", "expected"):  # the new rows get their own suggestions
        st.session_state.pop(f"projects.rows_pending_{role}.{pid}", None)
    generation = f"{UPLOADER}.generation.{pid}"
    st.session_state[generation] = st.session_state.get(generation, 0) + 1
    st.rerun()


def _confirm(editor: Any, pending: RowsImport) -> None:
    """The loaded rows' columns, the columns they would use, and Replace / Keep."""
    pid = editor.record.id
    with st.container(border=True, key=f"projects-rows-pending-{pid}"):
        st.markdown(escape_markdown(pending.summary()))
        if pending.target is RowsTarget.TRAIN:
            _pending_columns(editor, pending)
            _other_sets_note(editor, pending)
        elif editor.get("input_column") and editor.get("input_column") not in pending.columns:
            st.warning(f"These rows have no column `{escape_markdown(editor.get('input_column'))}`"
                       ", the training rows' input column.", icon=":material/warning:")
        replace = (f"Replace the {pending.replaces} {pending.target.label}" if pending.replaces
                   else f"Use these rows as the {pending.target.label}")
        if pending.replaces:
            st.caption(f"The {pending.replaces} current {pending.target.label} are not kept "
                       "(until you save, the stored project still has them).")
        left, right, _ = st.columns([2, 2, 3])
        left.button(replace, key=f"projects.rows_replace.{pid}", width="stretch",
                    type="secondary" if pending.replaces else "primary",
                    on_click=_apply, args=(editor, pending))
        right.button("Keep the current rows" if pending.replaces else "Cancel",
                     key=f"projects.rows_keep.{pid}", width="stretch",
                     type="primary" if pending.replaces else "secondary",
                     on_click=st.session_state.pop, args=(f"{PENDING}.{pid}", None))


def _or_blank(choice: str, blank: str) -> str:
    return choice or blank


def _pending_columns(editor: Any, pending: RowsImport) -> None:
    pid = editor.record.id
    names = pending.columns
    suggested = drafts.suggest_columns(names, editor.get("input_column"),
                                       editor.get("expected_column"))
    choices = ["", *names]
    left, right = st.columns(2)
    for column, (role, label, blank), default in zip(
            (left, right), (("input", "Input column for these rows", drafts.ALL_FIELDS),
                            ("expected", "Expected column for these rows", drafts.NO_EXPECTED)),
            suggested, strict=True):
        key = f"projects.rows_pending_{role}.{pid}"
        if st.session_state.get(key) not in choices:
            st.session_state[key] = default
        column.selectbox(label, choices, key=key, format_func=partial(_or_blank, blank=blank))


def _other_sets_note(editor: Any, pending: RowsImport) -> None:
    """Say so when the validation or test rows given separately lack the new columns (they
    must have the training rows' columns)."""
    new = set(pending.columns)
    for target in (RowsTarget.VAL, RowsTarget.TEST):
        rows = editor.get(target.value)
        old = set(drafts.columns(rows))
        if rows and not new <= old:
            st.caption(f"The {len(rows)} {target.label} have other columns "
                       f"({escape_markdown(', '.join(sorted(old))[:200])}): load new ones "
                       "after these" + (", or split the training rows instead."
                                        if target is RowsTarget.VAL else "."))


def _apply(editor: Any, pending: RowsImport) -> None:
    """Replace the target's rows (and, for training rows, the columns) before the rerun."""
    pid = editor.record.id
    editor.set(pending.target.value, pending.rows)
    if pending.target is RowsTarget.TRAIN:
        editor.set("input_column", st.session_state.pop(f"projects.rows_pending_input.{pid}", ""))
        editor.set("expected_column",
                   st.session_state.pop(f"projects.rows_pending_expected.{pid}", ""))
    st.session_state.pop(f"{PENDING}.{pid}", None)


def _error(errors: dict[str, str], field: str) -> None:
    if field in errors:
        st.error(escape_markdown(errors[field]), icon=":material/error:")
