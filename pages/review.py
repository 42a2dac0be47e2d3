"""Review: correct the critic on one trial or many, see judge and human side by side, undo, and
see at once what a correction changes in the run."""

import streamlit as st

from components import frame, loaders, review_panel, review_queue, session, team_panel
from studio.model.team import Permission

st.title("Review")
run_id = frame.need_run(blind_ok=True)
if run_id is None:
    st.stop()
blind = loaders.blinded(run_id, session.actor())

if not blind:
    st.caption("Your corrections replace the judge's score and feedback everywhere: in the "
               "pending acceptance decision, the Pareto front, the best candidate and the next "
               "reflection.")
    review_panel.effect_panel(run_id)
if frame.allowed(Permission.LABEL):
    review_panel.watch_new_trials(run_id, loaders.count_trials(run_id))
    review_queue.panel(run_id)
team_panel.progress(run_id)
if blind:  # a blind reviewer sees only the trials to label, never the run's scores
    st.stop()

if session.actor().can(Permission.LABEL):
    st.subheader("Correct many trials")
    trials = review_panel.scope_trials(run_id)
    review_panel.editor(run_id, trials)
    review_panel.single(run_id, trials)

st.subheader("Corrections")
review_panel.history(run_id)
