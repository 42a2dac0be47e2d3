"""Home: what the studio is, what to do next, and the recent runs."""

import streamlit as st

from components import frame, loaders, run_list

st.title("Evolution Studio")
st.markdown(
    "Evolve a Google ADK agent's instruction with **GEPA**: the agent runs on your examples, a "
    "critic scores each output with feedback, a reflection agent proposes a better instruction, "
    "and the child is kept if it scores better. You watch trials stream in, correct the critic, "
    "and accept, edit or reject each proposal.")

runs = loaders.runs()
if not runs:
    st.subheader("Get started")
    st.markdown(
        "1. Open **Projects** and load an example (no API key needed: `haiku-scripted` runs in "
        "seconds on a scripted model, `haiku` on the embedded SmolLM2 model; "
        "`pipeline-scripted` evolves the middle agent of a three-agent workflow).\n"
        "2. Open **Run**, choose *review* to decide on each proposal yourself, and start.\n"
        "3. Watch trials arrive, correct scores on **Review**, decide on **Proposals**, and "
        "see what changed on **Compare**.")
    run_list.quick_start()
else:
    st.subheader("Recent runs")
    run_list.recent_runs(runs)
    with st.expander("Start something new"):
        run_list.quick_start()

st.divider()
cols = st.columns(3)
frame.link(frame.PROJECTS, "Projects: create, import, edit", ":material/folder_open:",
           where=cols[0])
frame.link(frame.RUN, "Run: start, watch, steer", ":material/play_circle:", where=cols[1])
frame.link(frame.COMPARE, "Compare: versions side by side", ":material/compare_arrows:",
           where=cols[2])
