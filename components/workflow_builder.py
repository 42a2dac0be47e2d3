"""The workflow builder on the Projects page's Agent tab: agents (name, model, instruction, the
state key each writes, components to evolve), their order, the workflow's kind, the primary,
and a picture of the workflow that follows every edit.

The logic (fields, edits, checks, the project it writes) is in :mod:`studio.views.builder`;
this module only draws widgets keyed ``projects.field.<project id>.<field>`` like the rest of the
editor, so the builder's edits go through the same save path and survive other pages.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from studio.model.limits import MAX_COMPONENT_CHARS
from studio.views import builder
from studio.views.markdown import escape_markdown
from studio.views.workflows import graph_dot, workflow_dot

COMPONENT_CHOICES = ("instruction", "output_schema", "generate_content_config", "few_shot")
KIND_HELP = {"sequential": "one after the other", "loop": "in order, several times",
             "parallel": "at the same time (branches do not see each other's state)"}


def mode_switch(editor: Any) -> bool:
    """One agent or a workflow of agents; True when the builder is shown."""
    fields = editor.fields()
    if fields.get("agent_ref"):
        return False
    if builder.is_workflow_draft(fields):
        agents = builder.agents_of(fields)
        if len(agents) == 1:
            st.button("Back to a single agent", icon=":material/person:",
                      key=_button_key(editor, "btn_single"), on_click=_apply,
                      args=(editor, "single"))
        return True
    st.button("Make this a workflow of several agents", icon=":material/account_tree:",
              key=_button_key(editor, "btn_workflow"), on_click=_apply, args=(editor, "workflow"),
              help="ADK SequentialAgent, LoopAgent or ParallelAgent of LlmAgents; the "
                   "current agent becomes the first step.")
    return False


def show(editor: Any, errors: dict[str, str], model_help: str) -> None:
    """The builder: workflow settings, the picture, one card per agent, Add agent."""
    fields = editor.fields()
    nested = bool(fields.get("workflow_nested"))
    problem = st.session_state.pop(_problem_key(editor), None)
    if problem:
        st.warning(escape_markdown(problem), icon=":material/warning:")
    _settings(editor, fields, errors, nested)
    # One click away: a picture drawn inline is laid out again by the browser (viz.js) on every
    # edit, which made Add agent take ~2 s on two cores (bench/bench_ui.py --actions-only).
    with st.popover("Picture of the workflow", icon=":material/account_tree:"):
        picture(fields)
    agents = builder.agents_of(fields)
    for position, agent in enumerate(agents):
        _agent_card(editor, agent, position, len(agents), errors, model_help, nested)
    _error(errors, "agent_order")
    st.button("Add agent", icon=":material/add:", key=_button_key(editor, "btn_add"),
              on_click=_apply, args=(editor, "add"), disabled=nested)


def picture(fields: dict[str, Any]) -> None:
    """The workflow as a graph (names, models and keys are escaped into DOT strings)."""
    try:
        dot = workflow_dot(*builder.draft_picture(fields))
    except (ValueError, TypeError) as exc:
        st.caption(f"No picture: {escape_markdown(str(exc))}")
        return
    st.graphviz_chart(dot, width="stretch")
    st.caption("Double border: the agent whose output the critic scores · blue: agents with "
               "components to evolve · arrows: the state key handed on (`{key}`).")


def graph_picture(spec: Any) -> None:
    """An ADK 2 graph run's workflow: its nodes and edges (routes labelled), the evolved nodes
    in blue and the scored one doubled; nothing for other runs."""
    if getattr(spec, "graph", None) is None:
        return
    with st.expander(f"Graph workflow `{escape_markdown(spec.graph.name)}`", expanded=False):
        try:
            dot = graph_dot(spec.graph, spec.components, spec.primary)
        except ValueError as exc:
            st.caption(f"No picture: {escape_markdown(str(exc))}")
            return
        st.graphviz_chart(dot, width="stretch")
        st.caption("Boxes: LlmAgent nodes (blue: evolving; double border: scored) · "
                   "arrows: edges, labelled with their routes · each candidate is this graph "
                   "with the evolved nodes' agents swapped.")


def _settings(editor: Any, fields: dict[str, Any], errors: dict[str, str],
              nested: bool) -> None:
    if nested:
        st.info("This workflow nests workflows inside each other. The builder edits the agents; "
                "the structure is edited in YAML (the YAML tab).", icon=":material/account_tree:")
    else:
        st.caption("The builder makes one flat workflow; nested workflows are written in YAML "
                   "(the YAML tab).")
    cols = st.columns([2, 2, 1, 2])
    cols[0].segmented_control("Workflow", builder.WORKFLOW_KINDS, key=editor.key("workflow_type"),
                              disabled=nested, help=" · ".join(
                                  f"{k}: {v}" for k, v in KIND_HELP.items()))
    cols[1].text_input("Workflow name", key=editor.key("workflow_name"), disabled=nested)
    if fields.get("workflow_type") == "loop":
        cols[2].number_input("Iterations", 1, 20, key=editor.key("workflow_max_iterations"),
                             disabled=nested)
    agents = builder.agents_of(fields)
    names = {a["uid"]: str(a["name"] or "?") for a in agents}
    last = names[agents[-1]["uid"]] if agents else "?"
    if fields.get("primary") not in ("", *names):
        editor.set("primary", "")
    cols[3].selectbox("Scored agent (primary)", ["", *names], key=editor.key("primary"),
                      format_func=lambda uid: names.get(uid) or f"the last agent ({last})",
                      help="Whose reply the critic scores.")
    _error(errors, "workflow_max_iterations")
    _error(errors, "workflow_name")


def _agent_card(editor: Any, agent: dict[str, Any], position: int, count: int,
                errors: dict[str, str], model_help: str, nested: bool) -> None:
    uid = agent["uid"]
    key = lambda name: editor.key(builder.agent_key(uid, name))  # noqa: E731
    with st.container(border=True, key=f"builder-agent-{editor.record.id}-{uid}"):
        head, up, down, drop = st.columns([6, 1, 1, 1], vertical_alignment="center")
        label = "Agent" if nested else "Step"  # nested: declaration order, not run order
        head.markdown(f"**{label} {position + 1}: "
                      f"{escape_markdown(str(agent['name'] or ''))}**")
        up.button("↑", key=_button_key(editor, f"btn_up_{uid}"), help="Move up", width="stretch",
                  disabled=nested or position == 0, on_click=_move, args=(editor, uid, -1))
        down.button("↓", key=_button_key(editor, f"btn_down_{uid}"), help="Move down",
                    width="stretch",
                    disabled=nested or position == count - 1,
                    on_click=_move, args=(editor, uid, 1))
        drop.button("✕", key=_button_key(editor, f"btn_remove_{uid}"), help="Remove this agent",
                    width="stretch", disabled=nested or count == 1,
                    on_click=_apply, args=(editor, "remove", uid))
        cols = st.columns(3)
        cols[0].text_input("Agent name", key=key("name"))
        cols[1].text_input("Model", key=key("model"), help=model_help)
        cols[2].text_input("Writes its reply to state key", key=key("output_key"),
                           placeholder="(none)", help="Later agents read it as `{key}` in "
                                                      "their instruction.")
        for name in ("name", "model", "output_key"):
            _error(errors, builder.agent_key(uid, name))
        st.text_area("Instruction", key=key("instruction"), height=100,
                     max_chars=MAX_COMPONENT_CHARS,
                     help="`{key}` inserts a state key an earlier agent wrote, or a dataset "
                          "field.")
        st.multiselect("Components to evolve", COMPONENT_CHOICES, key=key("components"),
                       placeholder="none (kept as written)")
        _error(errors, builder.agent_key(uid, "instruction"))


def _error(errors: dict[str, str], field: str) -> None:
    if field in errors:
        st.error(escape_markdown(errors[field]), icon=":material/error:")


def _apply(editor: Any, action: str, uid: str | None = None) -> None:
    """A button's edit, applied before the page re-runs (so the widgets show it)."""
    fields = editor.fields()
    try:
        updates = {"single": builder.to_single, "workflow": builder.to_workflow,
                   "add": builder.add_agent}[action](fields) if action != "remove" \
            else builder.remove_agent(fields, uid or "")  # a remove button names its agent
    except ValueError as exc:
        st.session_state[_problem_key(editor)] = str(exc)
        return
    for name, value in updates.items():
        editor.set(name, value)


def _button_key(editor: Any, name: str) -> str:
    """Buttons live outside the field prefix (field keys are re-owned each run; a button's
    value cannot be)."""
    return f"projects.builder.{editor.record.id}.{name}"


def _problem_key(editor: Any) -> str:
    return f"projects.builder_problem.{editor.record.id}"


def _move(editor: Any, uid: str, offset: int) -> None:
    editor.set("agent_order", builder.move_agent(editor.get("agent_order") or [], uid, offset))
