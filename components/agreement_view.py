"""Judge vs human, per critic: overrides, mean absolute error, Pearson, Cohen's kappa at the pass
threshold, the confusion matrix and the disagreements."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components import session
from studio.views.tables import confusion_frame, disagreements_frame, format_score

SCOPES = ("This run", "All runs")


def controls(run_id: str | None) -> tuple[str | None, float]:
    session.init(session.AGREEMENT_SCOPE, SCOPES[0] if run_id else SCOPES[1])
    session.init(session.AGREEMENT_THRESHOLD, 0.5)
    cols = st.columns(2)
    scope = cols[0].segmented_control("Overrides from", SCOPES, key=session.AGREEMENT_SCOPE) \
        or SCOPES[0]
    threshold = cols[1].slider("Pass threshold (score ≥ threshold passes)", 0.0, 1.0, step=0.05,
                               key=session.AGREEMENT_THRESHOLD)
    return (run_id if scope == SCOPES[0] else None), float(threshold)


def report(name: str, rep: Any) -> None:
    cols = st.columns(5)
    cols[0].metric("Overrides compared", rep.count,
                   help=f"{rep.skipped} left out (a score was missing)" if rep.skipped else None)
    cols[1].metric("Mean absolute error", format_score(rep.mae, missing="n/a"))
    cols[2].metric("Pearson r", format_score(rep.pearson, missing="n/a"),
                   help="n/a with fewer than two pairs or a constant series")
    cols[3].metric("Cohen's kappa", format_score(rep.kappa, missing="n/a"),
                   help="Agreement on pass/fail beyond chance; n/a when chance agreement is total")
    cols[4].metric("Same verdict", format_score(rep.agreement_rate, missing="n/a"))
    left, right = st.columns([1, 2])
    with left:
        st.caption("Confusion matrix (the human is the truth)")
        st.dataframe(confusion_frame(rep.confusion), width="stretch")
    with right:
        table = disagreements_frame(rep)
        st.caption(f"Disagreements on pass/fail ({len(table)}), largest gap first")
        if table.empty:
            st.caption("None: the judge and the humans agree on every verdict.")
        else:
            st.dataframe(table, hide_index=True, width="stretch", column_config={
                "judge_score": st.column_config.NumberColumn("judge", format="%.3f"),
                "human_score": st.column_config.NumberColumn("human", format="%.3f"),
                "gap": st.column_config.NumberColumn(format="%.3f")})
