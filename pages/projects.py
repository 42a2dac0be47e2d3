"""Projects: create, open, duplicate, import and export projects; edit the agent, critic,
reflection agent and dataset; try the project on one example."""

import streamlit as st

from components import frame, project_bar, project_editor, served_agents
from studio.model.team import Permission

st.title("Projects")
if not frame.allowed(Permission.CONFIGURE):
    st.stop()
served_agents.panel()
record = project_bar.toolbar()
if record is None:
    project_bar.empty_state()
    st.stop()

editor = project_editor.open_editor(record)
if editor is None:
    st.stop()
project, errors = project_editor.edit(editor)
project_editor.save_bar(editor, project, errors)
st.divider()
project_editor.try_one(editor, project)
if project is not None and not errors:
    frame.link(frame.RUN, "Start a run of this project", ":material/play_circle:")
