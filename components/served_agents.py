"""The Projects page's "Your ADK agents" panel: the agent folders ``studio ui --agents DIR`` serves,
each startable on one of its eval sets (:mod:`studio.projects.served_agents`)."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from components import frame, loaders, session, session_import_panel, workflow_builder
from studio.model.config import EvolutionConfig
from studio.model.errors import StudioError
from studio.model.records import RunStatus
from studio.model.team import Permission
from studio.projects.served_agents import served_agents_dir, start_served_agent_run
from studio.views.markdown import escape_markdown

KEY = "projects.agents"


def panel() -> None:
    """Nothing when the server serves no agents; else the agents and a start form."""
    root = served_agents_dir()
    if root is None:
        return
    agents = loaders.served_agents()
    st.subheader("Your ADK agents")
    st.caption(escape_markdown(f"Agent folders under {root} (chosen when the studio was "
                               "started with --agents), run on an eval set saved in the folder."))
    if not frame.allowed(Permission.RUN):
        return
    if not agents:
        st.info(escape_markdown(f"No agent folder found under {root}: a folder with agent.py "
                                "defining root_agent, as `adk create` makes it."))
        return
    by_name = {agent.name: agent for agent in agents}
    name = st.selectbox("Agent", list(by_name), key=f"{KEY}.agent")
    sets = by_name[name].eval_sets if name in by_name else ()
    if name in by_name:
        _graph(name)
    with st.form(KEY):
        st.selectbox("Eval set", sets or ["(none: record one in adk web)"],
                     key=f"{KEY}.evalset", help="the eval sets saved in the agent's folder")
        model, reflection = st.columns(2)
        model.text_input("Model", key=f"{KEY}.agent_model",
                         placeholder="empty: the models the folder names",
                         help="run every agent of the folder (sub-agents, AgentTools, graph "
                         "nodes) on this model, with no edit to its files: a LiteLLM string "
                         "(scripted/demo, openai/gpt-4o-mini) or an ADK name (gemini-2.5-flash)")
        reflection.text_input("Reflection model", key=f"{KEY}.model",
                              placeholder="empty: the agent's own model",
                              help="the model that writes each proposal (a LiteLLM string or an "
                              "ADK name such as gemini-2.5-flash)")
        iterations, review = st.columns(2)
        iterations.number_input("Iterations", min_value=0, max_value=1000, value=5,
                                key=f"{KEY}.iterations")
        review.selectbox("Decide proposals", ["auto", "review"], key=f"{KEY}.review",
                         format_func={"auto": "by the acceptance rule",
                                      "review": "myself, at the gate"}.__getitem__)
        started = st.form_submit_button("Start a run", icon=":material/play_circle:")
    if started:
        _start(name, sets)
    if name in by_name:
        session_import_panel.panel(name)


def _graph(name: str) -> None:
    """An agent that is an ADK 2 graph Workflow: its picture (what a run of it evolves)."""
    try:
        spec = loaders.served_agent_graph(name)
    except StudioError as exc:
        st.caption(f"Its agent does not load: {escape_markdown(str(exc))}")
        return
    if spec is not None:
        workflow_builder.graph_picture(spec)


def _start(name: str, sets: tuple[str, ...]) -> None:
    ss = st.session_state
    eval_set = ss[f"{KEY}.evalset"]
    try:
        config = EvolutionConfig.model_validate({"max_iterations": int(ss[f"{KEY}.iterations"]),
                                                 "review": ss[f"{KEY}.review"]})
        with st.spinner("Loading the agent and starting the run…"):
            run = start_served_agent_run(loaders.store(), name, eval_set if eval_set in sets
                                         else "", config,
                                         model=ss[f"{KEY}.agent_model"],
                                         reflection_model=ss[f"{KEY}.model"])
    except (StudioError, ValidationError) as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    session.set_current_run(run.id)
    loaders.runs.clear()
    where = "queued for the team's workers" if run.status is RunStatus.QUEUED else "started"
    session.flash(escape_markdown(f"Run {run.id} of {name} on {eval_set} {where}."),
                  page=frame.RUN)
    frame.go(frame.RUN)
