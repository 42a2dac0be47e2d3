"""Proposals: the pending proposal with its evidence; accept, edit then re-score, or reject with a
reason; the history of decisions."""

import streamlit as st

from components import frame, loaders, proposal_view, team_panel
from studio.model.records import stored_id
from studio.views.markdown import escape_markdown
from studio.views.tables import proposal_label

st.title("Proposals")
run_id = frame.need_run()
if run_id is None:
    st.stop()

run = loaders.run(run_id)
proposal_view.watch(run_id)
proposal = proposal_view.current(run)
if proposal is not None:
    index_of = {stored_id(c): c.index for c in loaders.candidates(run_id)}
    st.subheader(f"{loaders.proposal_title(proposal)} · iteration {proposal.iteration} · "
                 f"{escape_markdown(proposal_label(proposal, index_of).replace('.', ' · '))}")
    proposal_view.evidence(proposal)
    team_panel.comments(proposal)
    proposal_view.decision_form(proposal)

st.subheader("History")
proposal_view.history(run_id)
