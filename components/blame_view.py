"""The blame view on Compare: each sentence of a compared version beside the proposal that
introduced it (iteration, proposal, the reflection or the person who edited it, score change).

Sentences are model-written: they are shown in a dataframe (text cells, never Markdown or HTML),
and the summary and labels that name people go through ``escape_markdown``.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import loaders, session
from studio.views.markdown import escape_markdown
from studio.views.provenance import blame_frame, blame_summary


def show(analysis: Any, selected: list[int]) -> None:
    """Blame for one of the versions compared (default: the last chosen, the diff's right)."""
    by_id = {c.id: c for c in analysis.view.candidates}
    chosen = [by_id[c] for c in selected if c in by_id]
    if not chosen:
        return
    run_id = analysis.view.run.id
    st.subheader("Where each sentence came from")
    left, right = st.columns(2)
    with left:
        candidate = _pick(chosen, run_id)
    with right:
        component = _component(candidate, chosen[0], run_id)
    provenance = loaders.provenance(run_id, candidate.index)
    st.caption(escape_markdown(
        f"#{candidate.index} {component}: {blame_summary(provenance, component)} Each row: "
        "iteration · proposal · the reflection or the person who edited it · change of the "
        "minibatch mean at that step."))
    st.dataframe(blame_frame(provenance, component), hide_index=True, width="stretch",
                 column_config={"origin": st.column_config.TextColumn("origin", width="medium")})


def _pick(chosen: list[Any], run_id: str) -> Any:
    if len(chosen) == 1:
        return chosen[0]
    options = {c.id: c for c in chosen}
    key = f"{session.COMPARE_BLAME}.{run_id}"
    if st.session_state.get(key) not in options:
        st.session_state[key] = chosen[-1].id
    picked = st.selectbox("Version", list(options), key=key,
                          format_func=lambda cid: f"#{options[cid].index}")
    return options[picked]


def _component(candidate: Any, base: Any, run_id: str) -> str:
    """One component; by default the one the diff above shows (its picker), else the first that
    differs from the baseline, else the first."""
    components = list(candidate.components)
    if len(components) == 1:
        return components[0]
    key = f"{session.COMPARE_BLAME}.component.{run_id}"
    if st.session_state.get(key) not in components:
        shown = st.session_state.get(session.COMPARE_COMPONENT)
        changed = [k for k in components if candidate.components[k] != base.components.get(k)]
        st.session_state[key] = shown if shown in components else (changed or components)[0]
    return st.selectbox("Component", components, key=key)
