"""The Projects page's "Import recorded sessions" (under ``studio ui --agents``): an ADK app's
sessions from a database the server offers become an eval set in the agent's folder, listed
at once among the agent's eval sets (:mod:`studio.projects.session_import`). The browser picks
the database by its listed name and names only the new file."""

from __future__ import annotations

import streamlit as st

from components import loaders
from studio.model.errors import StudioError
from studio.projects.session_import import import_for_served_agent, rows, typed_filter
from studio.runtime.adk_sessions import SessionFilter
from studio.views.markdown import escape_markdown

KEY = "projects.sessions"


def panel(agent: str) -> None:
    with st.expander("Import examples from recorded sessions", icon=":material/history:"):
        sources = loaders.session_sources()
        if not sources:
            st.caption("No session database here: `adk web` keeps one in "
                       "*agent*/.adk/session.db; a deployed app's database is offered when the "
                       "studio starts with `--sessions URL`.")
            return
        st.caption("Each session's first turn (or every turn) becomes a case: the user's "
                   "message as the input, the agent's recorded reply as the reference.")
        with st.form(f"{KEY}.{agent}"):
            source = st.selectbox("Session database", list(sources), key=f"{KEY}.source")
            left, right = st.columns(2)
            app = left.text_input("App name", value=agent, max_chars=200, key=f"{KEY}.app")
            user = right.text_input("User id (optional)", max_chars=200, key=f"{KEY}.user")
            ids = left.text_input("Session ids (optional, comma-separated)", max_chars=20_000,
                                  key=f"{KEY}.ids")
            state = right.text_input("State (optional): key=value, key", max_chars=2_000,
                                     key=f"{KEY}.state")
            since = left.date_input("Updated since (optional)", value=None, key=f"{KEY}.since")
            until = right.date_input("Updated until (optional)", value=None,
                                     key=f"{KEY}.until")
            name = left.text_input("Eval set to write", value="sessions.evalset.json",
                                   max_chars=200, key=f"{KEY}.name")
            all_turns = right.checkbox("Every turn, not only each session's first",
                                       key=f"{KEY}.all_turns")
            replace = right.checkbox("Replace the eval set if it exists", key=f"{KEY}.replace")
            submitted = st.form_submit_button("Import", icon=":material/download:")
        if submitted:
            _import(agent, source, app, typed_filter(ids, user, since, until, state, all_turns),
                    name, replace)


def _import(agent: str, source: str, app: str, choice: SessionFilter, name: str,
            replace: bool) -> None:
    try:
        with st.spinner("Reading the sessions…"):
            done = import_for_served_agent(source, app.strip(), choice, agent, name.strip(),
                                           replace=replace)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    loaders.served_agents.clear()
    st.success(escape_markdown(f"{len(done.read.turns)} examples from {done.read.sessions} "
                               f"sessions written to {agent}/{done.path.name}: pick it as the "
                               "eval set above."), icon=":material/check_circle:")
    if done.read.left_out:
        st.caption(escape_markdown("Left out: " + "; ".join(done.read.left_out[:20])))
    st.dataframe(rows(done.read), hide_index=True, width="stretch",
                 column_order=["input", "expected", "session_id", "turn"])
