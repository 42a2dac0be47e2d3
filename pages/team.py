"""Team: who you are, the users and their roles (owner, reviewer, viewer), and how each
project's trials are reviewed (by how many people, blind or not)."""

import streamlit as st

from components import team_panel

st.title("Team")
team_panel.who_am_i()
team_panel.users()
team_panel.review_settings()
