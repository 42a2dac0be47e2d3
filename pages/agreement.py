"""Agreement: per critic, how the judge's scores compare with the humans' corrections."""

import streamlit as st

from components import agreement_view, align_panel, frame, loaders, session, team_panel
from studio.views.markdown import escape_markdown

st.title("Agreement")
st.caption("Computed from the corrections on the Review page: each corrected trial is a pair "
           "of the judge's score and the people's (their consensus, or an owner's ruling).")
if frame.blinded(session.current_run_id()):
    st.stop()
run_id, threshold = agreement_view.controls(session.current_run_id())
summary = loaders.agreement(run_id, threshold)
if summary is None:
    st.error("Agreement statistics are not available in this installation "
             "(studio.critics.agreement).")
    st.stop()
if summary.overall.count == 0 and summary.overall.skipped == 0:
    st.info("No corrections yet. Override a few critic scores on the Review page; their "
            "agreement with the judge shows here.")
    team_panel.people(run_id, threshold)
    frame.link(frame.REVIEW, "Go to Review", ":material/rate_review:")
    if (aligned := session.current_run_id()) is not None:
        align_panel.show(aligned)
    st.stop()

critics = summary.per_critic or {"all": summary.overall}
tabs = st.tabs([escape_markdown(name) for name in critics])
for tab, (name, report) in zip(tabs, critics.items(), strict=True):
    with tab:
        agreement_view.report(name, report)
if len(critics) > 1:
    st.subheader("All critics")
    agreement_view.report("all", summary.overall)
team_panel.people(run_id, threshold)
if run_id is not None:
    team_panel.disagreements(run_id, threshold)

if (aligned := session.current_run_id()) is not None:
    align_panel.show(aligned)
