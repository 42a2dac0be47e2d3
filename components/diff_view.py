"""Word-level diffs, side by side or inline.

Safe for model-written text without ``unsafe_allow_html``: :mod:`studio.views.diffing` escapes every
Markdown character of the compared texts and marks changes with Streamlit's own
``:red-background[...]`` / ``:green-background[...]`` directives.
"""

from __future__ import annotations

import streamlit as st

from studio.views.diffing import diff_stats, side_by_side_markdown
from studio.views.markdown import escape_markdown


def side_by_side(old: str, new: str, *, left: str, right: str) -> None:
    left_md, right_md = side_by_side_markdown(old, new)
    columns = st.columns(2)
    for column, label, body in ((columns[0], left, left_md), (columns[1], right, right_md)):
        with column:
            st.caption(escape_markdown(label))
            with st.container(border=True):
                st.markdown(body)
    stats = diff_stats(old, new)
    st.caption("No change." if stats.unchanged else
               f"{stats.words_added} word(s) added, {stats.words_removed} removed "
               "(red, struck through: removed; green: added).")

