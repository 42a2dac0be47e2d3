"""Download a run: everything as JSONL (what ``studio export`` writes: candidates, proposals
with their decisions and reasons, trials with corrections), or its trials as CSV."""

from __future__ import annotations

import streamlit as st

from components import loaders
from studio.projects.export import Download

LABELS = {Download.JSONL: "Everything (JSONL)", Download.TRIALS_CSV: "Trials (CSV)"}


def export_menu(run_id: str, *, where=None) -> None:
    """A popover with one download button per :class:`Download`. The file is made when a
    button is clicked (on a thread of its own, so the page stays live) and streamed from the
    store, so a big run never sits in the page's memory while nobody asks for it."""
    with (where or st).popover("Export", icon=":material/download:", width="stretch"):
        st.caption("Candidates, proposals with each decision, its reason and the rule's "
                   "verdict, and every trial with its corrections. Secrets are shown as ***.")
        for what, label in LABELS.items():
            st.download_button(label, data=loaders.download(run_id, what),
                               file_name=what.file_name(run_id), mime=what.mime,
                               key=f"export.{run_id}.{what.value}", on_click="ignore",
                               icon=":material/file_download:", width="stretch")
