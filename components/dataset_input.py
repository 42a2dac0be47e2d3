"""Dataset fields of the project editor: upload or paste rows, preview them, pick the input and
expected columns, and choose how the validation set is made."""

from __future__ import annotations

from typing import Any

import streamlit as st

from studio.model.errors import StudioError
from studio.projects.files import decode_text
from studio.views import drafts
from studio.views.markdown import escape_markdown


def dataset_fields(editor: Any, errors: dict[str, str]) -> None:
    rows = editor.get("train_rows")
    val_rows = editor.get("val_rows")
    if rows:
        st.markdown(f"**Training rows: {len(rows)}**")
        st.dataframe(rows, hide_index=False, width="stretch", height=min(38 + 35 * len(rows), 250))
    _error(errors, "train_rows")
    load_rows(editor)
    names = drafts.columns(rows)
    if names:
        _column_pickers(editor, names, errors)
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
    """Replace the training or validation rows from an uploaded file or pasted text."""
    pid = editor.record.id
    with st.expander("Load rows: upload a CSV/JSONL file or paste", expanded=not editor.get(
            "train_rows")):
        target = st.radio("Into", ["training rows", "validation rows"], horizontal=True,
                          key=f"projects.rows_target.{pid}")
        field = "train_rows" if target == "training rows" else "val_rows"
        upload = st.file_uploader("File (CSV with a header row, JSONL, or a JSON array)",
                                  type=["csv", "jsonl", "ndjson", "json"],
                                  key=f"projects.rows_upload.{pid}")
        if upload is not None and st.button("Use the uploaded file",
                                            key=f"projects.rows_use_upload.{pid}"):
            try:
                text = decode_text(upload.getvalue(), upload.name)
            except StudioError as exc:
                st.error(escape_markdown(str(exc)), icon=":material/error:")
            else:
                _apply(editor, field, text, drafts.detect_format(text, upload.name), upload.name)
        st.text_area("Or paste rows", key=f"projects.rows_paste.{pid}", height=120,
                     placeholder='topic,expected\nautumn leaves,...\n\nor one JSON object per '
                                 'line: {"topic": "autumn leaves"}')
        fmt = st.selectbox("Pasted format", drafts.DATASET_FORMATS,
                           key=f"projects.rows_format.{pid}")
        if st.button("Use the pasted rows", key=f"projects.rows_use_paste.{pid}"):
            _apply(editor, field, st.session_state.get(f"projects.rows_paste.{pid}", ""), fmt,
                   "pasted data")


def _apply(editor: Any, field: str, text: str, fmt: str, source: str) -> None:
    try:
        rows = drafts.parse_rows(text, fmt, source=source)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    editor.set(field, rows)
    st.rerun()


def _error(errors: dict[str, str], field: str) -> None:
    if field in errors:
        st.error(escape_markdown(errors[field]), icon=":material/error:")
