"""The project editor: agent, critic, reflection, dataset and run defaults, each field checked as
you type (the error is shown under the field), a YAML view, Save, and "try on one example".

Widget keys are ``projects.field.<project id>.<field>`` (the field names of
:func:`studio.views.drafts.to_fields`), so each project keeps its own unsaved edits, and they
survive a visit to another page.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from components import dataset_input, loaders, session, workflow_builder
from components.trial_detail import show_probe
from studio.critics.agent import ADVANCED_CRITIC_INSTRUCTION, SIMPLE_CRITIC_INSTRUCTION
from studio.engine.propose.reflection import DEFAULT_REFLECTION_INSTRUCTION
from studio.model.errors import StudioError
from studio.model.limits import MAX_COMPONENT_CHARS
from studio.model.records import example_input_text
from studio.projects.files import dump_project, parse_project
from studio.projects.probe import ProbeJob, ProbePhase, check_probe
from studio.projects.workspace import save_project
from studio.views import drafts
from studio.views.markdown import escape_markdown
from studio.views.media import example_thumbnails
from studio.views.workflows import latest_graph_spec, scored_author

MODEL_HELP = ("A LiteLLM model string: `local/smollm2` (embedded, offline), `scripted/demo` "
              "(deterministic test model), `gemini/gemini-2.5-flash`, `openai/gpt-4o-mini`, "
              "`ollama_chat/llama3.2`... Hosted models read their API key from the environment.")
RUN_FIELDS = ("max_iterations", "minibatch_size", "max_metric_calls", "review", "seed",
              "max_concurrency")
COMPONENT_CHOICES = workflow_builder.COMPONENT_CHOICES


class Editor:
    """Reads and writes one project's editor fields in the session session."""

    def __init__(self, record: Any) -> None:
        self.record = record
        self.prefix = f"{session.PROJECTS_FIELD}.{record.id}."
        self.stored: dict[str, Any] = {}
        """The stored project's values, field by field (what "unsaved" compares against)."""

    def key(self, field: str) -> str:
        return self.prefix + field

    def get(self, field: str) -> Any:
        return st.session_state.get(self.key(field))

    def set(self, field: str, value: Any) -> None:
        st.session_state[self.key(field)] = value

    def load(self, project: Any, *, force: bool = False) -> None:
        """Put a project's values into the editor (only missing ones unless ``force``)."""
        values = drafts.to_fields(project)
        run = values.pop("run")
        for name in RUN_FIELDS:
            values[f"run_{name}"] = run.get(name)
        values["run_rest"] = {k: v for k, v in run.items() if k not in RUN_FIELDS}
        if not force:
            self.stored = values
        for name, value in values.items():
            if force or self.key(name) not in st.session_state:
                self.set(name, value)

    def fields(self) -> dict[str, Any]:
        names = [k[len(self.prefix):] for k in st.session_state
                 if isinstance(k, str) and k.startswith(self.prefix)]
        values = {name: self.get(name) for name in names}
        run = dict(values.pop("run_rest", None) or {})
        for name in RUN_FIELDS:
            value = values.pop(f"run_{name}", None)
            if value is not None:
                run[name] = value
        values["run"] = run
        return values

    def unsaved(self) -> bool:
        """True when a field differs from the stored project (valid or not yet)."""
        current = {name: self.get(name) for name in self.stored}
        return drafts.unsaved(current, self.stored)


def open_editor(record: Any) -> Editor | None:

    editor = Editor(record)
    try:
        editor.load(parse_project(record.yaml, source=f"project {record.name!r}"))
    except StudioError as exc:
        st.error(f"The stored project does not load: {escape_markdown(str(exc))}. Fix it in "
                 "the YAML below and apply it.")
        yaml_tab(editor, stored_only=True)
        return None
    return editor


TABS = ("Agent", "Critic", "Reflection", "Dataset", "Run defaults", "YAML")


def tab_key(project_id: int) -> str:
    """The editor's tab bar key; its value is the open tab's label (set it to open a tab)."""
    return f"projects.tab.{project_id}"


def edit(editor: Editor) -> tuple[Any, dict[str, str]]:
    """Render the open editor tab; returns ``(project or None, errors by field)``.

    Only the open tab is drawn: drawing all six made every action on the page (Add agent,
    Import) repaint the whole editor in the browser, ~0.65 s on two cores (issue 21, defect
    10). The fields of closed tabs keep their values: they live in the session under
    ``projects.field.`` (see ``session.PERSISTENT_PREFIXES``) and the project is built from
    there, so errors on a closed tab still block Save and are named by tab in the save bar.
    """
    project, errors = drafts.from_fields(editor.fields())
    # A keyed tab bar keeps the chosen tab when a button below re-runs the page, and tells
    # which tab is open (``.open``), so the others are not drawn.
    tabs = st.tabs(list(TABS), key=tab_key(editor.record.id), on_change="rerun")
    draw = {"Agent": lambda: agent_tab(editor, errors),
            "Critic": lambda: critic_tab(editor, errors),
            "Reflection": lambda: reflection_tab(editor, errors),
            "Dataset": lambda: dataset_tab(editor, errors),
            "Run defaults": lambda: run_tab(editor, errors),
            "YAML": lambda: yaml_tab(editor, project=project)}
    for label, tab in zip(TABS, tabs, strict=True):
        if tab.open is not False:  # None: a tab bar without state draws every tab
            with tab:
                draw[label]()
    return project, errors


def _error(errors: dict[str, str], field: str) -> None:
    if field in errors:
        st.error(escape_markdown(errors[field]), icon=":material/error:")


def _model_field(editor: Editor, field: str, label: str, errors: dict[str, str], *,
                 empty: str | None = None) -> None:
    st.text_input(label, key=editor.key(field), help=MODEL_HELP, placeholder=empty)
    if field in errors:
        _error(errors, field)
    elif empty and not str(editor.get(field) or "").strip():
        st.caption(empty)
    else:
        st.caption(":green[:material/check_circle:] ready to call from this machine")


def agent_tab(editor: Editor, errors: dict[str, str]) -> None:
    st.text_input("Project name", key=editor.key("name"))
    _error(errors, "name")
    st.text_input("Description", key=editor.key("description"))
    if workflow_builder.mode_switch(editor):
        workflow_builder.show(editor, errors, MODEL_HELP)
        return
    if editor.get("agent_ref"):
        st.info(f"This agent is loaded from Python (`{escape_markdown(editor.get('agent_ref'))}`)"
                "; the fields below are not used for it.")
        workflow_builder.graph_picture(latest_graph_spec(
            loaders.runs(), editor.record.id, editor.record.name))  # as its latest run read it
    left, right = st.columns(2)
    left.text_input("Agent name", key=editor.key("agent_name"))
    with right:
        _model_field(editor, "agent_model", "Model", errors)
    _error(errors, "agent_name")
    st.text_area("Instruction", key=editor.key("agent_instruction"), height=160,
                 max_chars=MAX_COMPONENT_CHARS,
                 help="What evolution improves. `{field}` inserts a dataset field.")
    st.text_area("Tools (one `package.module:function` per line)", key=editor.key("agent_tools"),
                 height=68, placeholder="calendar:isleap",
                 help="Python functions the agent may call, from installed packages only. They "
                      "run on this server, so a project from the browser may name them only "
                      "when the studio was started with --allow-code-refs.")
    _error(errors, "agent_tools")
    st.text_area("Output schema (JSON Schema; empty for free text)",
                 key=editor.key("agent_schema"), height=120,
                 placeholder='{"type": "object", "properties": {"answer": {"type": "string"}}}')
    _error(errors, "agent_schema")
    st.text_area("Few-shot demos (JSON list of {\"input\", \"output\"}; empty for none)",
                 key=editor.key("agent_few_shot"), height=120, max_chars=MAX_COMPONENT_CHARS,
                 placeholder='[{"input": "What is the capital of Italy?", "output": "Rome"}]',
                 help="Shown to the model as earlier turns of the conversation (the input as "
                      "the user's message, the output as the agent's reply). Evolve the "
                      "few_shot component to let the run choose them from the training set.")
    _error(errors, "agent_few_shot")
    cols = st.columns(3)
    cols[0].number_input("Temperature", 0.0, 2.0, step=0.1, key=editor.key("agent_temperature"),
                         placeholder="model default")
    cols[1].number_input("Top p", 0.0, 1.0, step=0.05, key=editor.key("agent_top_p"),
                         placeholder="model default")
    cols[2].number_input("Max tokens", 1, 32768, step=32, key=editor.key("agent_max_tokens"),
                         placeholder="model default")
    for field in ("agent_temperature", "agent_top_p", "agent_max_tokens"):
        _error(errors, field)


def critic_tab(editor: Editor, errors: dict[str, str]) -> None:
    evaluators = drafts.available_evaluators()
    kinds = ["agent", "evaluator"] if evaluators or editor.get("critic_type") == "evaluator" \
        else ["agent"]
    st.radio("Critic", kinds, key=editor.key("critic_type"), horizontal=True,
             format_func={"agent": "An LLM critic agent",
                          "evaluator": "Programmatic evaluators"}.get)
    st.text_input("Critic name", key=editor.key("critic_name"))
    if editor.get("critic_type") == "evaluator":
        _evaluator_fields(editor, evaluators, errors)
        return
    _model_field(editor, "critic_model", "Critic model", errors)
    st.radio("Output schema", ["simple", "advanced", "custom"], key=editor.key("critic_schema"),
             horizontal=True, help="simple: score + feedback; advanced: + dimension scores and "
                                   "actionable guidance; custom: your own JSON Schema.")

    templates = {"Simple critic (seed)": SIMPLE_CRITIC_INSTRUCTION,
                 "Advanced critic (seed)": ADVANCED_CRITIC_INSTRUCTION}
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    choice = left.selectbox("Instruction template", list(templates),
                            key=f"projects.template.{editor.record.id}")
    right.button("Use template", width="stretch",
                 on_click=editor.set, args=("critic_instruction", templates[choice]))
    st.text_area("Critic instruction (empty: the seed's instruction for the schema)",
                 key=editor.key("critic_instruction"), height=160)
    if editor.get("critic_schema") == "custom":
        st.text_area("Custom critic output schema (must include a numeric `score`)",
                     key=editor.key("critic_output_schema"), height=120)
        _error(errors, "critic_output_schema")


def _evaluator_fields(editor: Editor, evaluators: list[dict[str, str]],
                      errors: dict[str, str]) -> None:
    names = [e["name"] for e in evaluators]
    descriptions = {e["name"]: e["description"] for e in evaluators}
    if names:
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        name = left.selectbox("Evaluator", names, key=f"projects.evaluator.{editor.record.id}",
                              format_func=lambda n: f"{n}: {descriptions.get(n, '')}"[:90])
        right.button("Use evaluator", width="stretch", on_click=editor.set,
                     args=("critic_evaluator",
                           json.dumps({"evaluator": name, "params": {}}, indent=2)))
    st.text_area("Evaluator config (JSON or YAML): one `evaluator` with `params`, or weighted "
                 "`evaluators`", key=editor.key("critic_evaluator"), height=160)
    _error(errors, "critic_evaluator")


def reflection_tab(editor: Editor, errors: dict[str, str]) -> None:

    _model_field(editor, "reflection_model", "Reflection model", errors,
                 empty="empty: the agent's own model writes the proposals")
    st.selectbox("Who writes an instruction's proposal", list(drafts.REFLECTION_STRATEGY_LABELS),
                 key=editor.key("reflection_strategy"),
                 format_func=drafts.REFLECTION_STRATEGY_LABELS.__getitem__)
    _error(errors, "reflection_strategy")
    if editor.get("agent_mode") == "workflow":
        st.caption("Components to evolve are chosen per agent on the Agent tab.")
    else:
        st.multiselect("Components to evolve", COMPONENT_CHOICES, key=editor.key("components"))
        _error(errors, "components")
    st.button("Start from the default template", on_click=editor.set,
              args=("reflection_instruction", DEFAULT_REFLECTION_INSTRUCTION))
    st.text_area("Reflection template for the instruction (empty: the default). It must contain "
                 "`{component_text}` and `{trials}`.", key=editor.key("reflection_instruction"),
                 height=200)
    text = editor.get("reflection_instruction") or ""
    if text.strip():
        marks = [f"`{{{name}}}` " + (":green[present]" if "{" + name + "}" in text
                                     else ":red[missing]")
                 for name in ("component_text", "trials")]
        st.caption(" · ".join(marks))
    _error(errors, "reflection_instruction")


def dataset_tab(editor: Editor, errors: dict[str, str]) -> None:

    dataset_input.dataset_fields(editor, errors)


def run_tab(editor: Editor, errors: dict[str, str]) -> None:
    st.caption("Defaults for new runs of this project (the Run page can change them per run).")
    cols = st.columns(3)
    cols[0].number_input("Max iterations", 0, 100_000, key=editor.key("run_max_iterations"))
    cols[1].number_input("Minibatch size", 1, 1000, key=editor.key("run_minibatch_size"))
    cols[2].number_input("Metric-call budget", 1, 10_000_000, key=editor.key(
        "run_max_metric_calls"), placeholder="no limit")
    cols = st.columns(3)
    cols[0].radio("Review", ["auto", "review"], key=editor.key("run_review"), horizontal=True)
    cols[1].number_input("Seed", 0, 2**31 - 1, key=editor.key("run_seed"))
    cols[2].number_input("Concurrent calls", 1, 256, key=editor.key("run_max_concurrency"))
    _error(errors, "run")


def yaml_tab(editor: Editor, *, project: Any = None, stored_only: bool = False) -> None:

    key = f"projects.yaml.{editor.record.id}"
    session.init(key, editor.record.yaml)
    saved = st.session_state.pop(f"projects.yaml_saved.{editor.record.id}", None)
    if saved is not None:  # the project was saved: edit the stored text from now on
        st.session_state[key] = saved
    if project is not None and not stored_only:
        st.caption("The project as it will be saved:")
        st.code(dump_project(project), language="yaml")
    with st.expander("Edit as YAML", expanded=stored_only):
        st.text_area("Project YAML", key=key, height=320, label_visibility="collapsed")
        st.button("Apply YAML to the editor", key=f"projects.apply_yaml.{editor.record.id}",
                  on_click=_apply_yaml, args=(editor, key))
        problem = st.session_state.pop(f"projects.yaml_problem.{editor.record.id}", None)
        if problem:
            st.error(escape_markdown(problem), icon=":material/error:")


def _apply_yaml(editor: Editor, key: str) -> None:
    """Load the YAML into the editor before the page re-runs (widgets cannot change once
    drawn)."""
    try:
        parsed = parse_project(st.session_state[key], source="YAML editor")
    except StudioError as exc:
        st.session_state[f"projects.yaml_problem.{editor.record.id}"] = str(exc)
        return
    editor.load(parsed, force=True)


def save_bar(editor: Editor, project: Any, errors: dict[str, str]) -> None:

    if errors:
        where = ", ".join(sorted({_FIELD_TAB.get(f, "Agent") for f in errors}))
        st.warning(f"{len(errors)} field(s) need attention ({where} tab); the project can be "
                   "saved once they are fixed. Your edits are kept meanwhile.")
    dirty = (dump_project(project) != editor.record.yaml if project is not None
             else editor.unsaved())
    left, right = st.columns([1, 4], vertical_alignment="center")
    if left.button("Save project", type="primary", disabled=project is None or not dirty,
                   icon=":material/save:"):
        try:
            record = save_project(loaders.store(), project, editor.record.id)
        except StudioError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/error:")
            return
        loaders.projects.clear()
        st.session_state[f"projects.yaml_saved.{record.id}"] = record.yaml
        session.flash(f"Saved {escape_markdown(record.name)}.")
        st.rerun()
    right.caption(save_state(dirty, bool(errors)))
    leave_guard(dirty)


def save_state(dirty: bool, has_errors: bool) -> str:
    """The line beside Save: never "saved" while an edit is not."""
    if dirty and has_errors:
        return ("Unsaved changes: fix the field(s) above to save them. Reloading or closing "
                "this tab drops them.")
    if dirty:
        return "Unsaved changes (reloading or closing this tab drops them)."
    return "All changes saved."


LEAVE_GUARD = """<script>/* unsaved: %s */
(() => {
  window.studioUnsaved = %s;
  if (window.studioLeaveGuard) return;
  window.studioLeaveGuard = true;
  window.addEventListener("beforeunload", (event) => {
    if (!window.studioUnsaved) return;
    event.preventDefault();
    event.returnValue = "";
  });
})();
</script>"""
"""Asks the browser to confirm a reload or a close while the editor has unsaved edits (a
session's edits live in the server's session, which a reload replaces). No project text goes
into it."""


def leave_guard(dirty: bool) -> None:
    flag = "true" if dirty else "false"
    st.html(LEAVE_GUARD % (flag, flag), unsafe_allow_javascript=True)


_FIELD_TAB = {
    "critic_model": "Critic", "critic_output_schema": "Critic", "critic_evaluator": "Critic",
    "reflection_model": "Reflection", "reflection_instruction": "Reflection",
    "reflection_strategy": "Reflection",
    "components": "Reflection", "train_rows": "Dataset", "val_rows": "Dataset",
    "test_rows": "Dataset", "split_seed": "Dataset",
    "input_column": "Dataset", "expected_column": "Dataset", "val_fraction": "Dataset",
    "run": "Run defaults", "project": "YAML",
}


def try_one(editor: Editor, project: Any) -> None:
    """Run the agent and the critic once on an example the person picks; nothing is stored."""
    st.subheader("Try on one example")
    if project is None:
        st.caption("Fix the fields above to try the project.")
        return
    try:
        rows = drafts.training_examples(project)
    except StudioError as exc:
        st.error(escape_markdown(str(exc)))
        return
    if not rows:
        st.caption("Add training rows on the Dataset tab first.")
        return

    labels = [f"{i}: {example_input_text(r, project.dataset.input_column)[:80]}"
              for i, r in enumerate(rows)]
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    index = left.selectbox("Example", range(len(rows)), format_func=labels.__getitem__,
                           key=f"projects.try_example.{editor.record.id}")
    key = f"{session.PROJECTS_PROBE}.{editor.record.id}"
    job_key = f"{key}.job"
    if right.button("Try it", icon=":material/science:", width="stretch",
                    disabled=_probing(job_key)):
        try:  # a configuration problem (unknown model, missing key) is said before any call
            check_probe(project)
        except StudioError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/error:")
            return
        st.session_state.pop(key, None)
        st.session_state[job_key] = ProbeJob(project, rows[index])
    if st.session_state.get(job_key) is not None:
        _probe_progress(key, job_key)
    stopped = st.session_state.pop(key + ".stopped", None)
    if stopped:
        st.warning(escape_markdown(stopped), icon=":material/stop_circle:")
    result = st.session_state.get(key)
    if result is not None:
        show_probe(result, example_thumbnails(rows[index]),
                   scored=scored_author(project.run_spec()))
    else:
        st.caption("Runs the agent and the critic once and shows the trial; nothing is stored.")



def _probing(job_key: str) -> bool:
    job = st.session_state.get(job_key)
    return job is not None and job.running


@st.fragment(run_every=0.5)
def _probe_progress(key: str, job_key: str) -> None:
    """The running probe's phase, time and tokens, with a Cancel that stops it; its result
    goes to the page once it is done."""
    job: ProbeJob | None = st.session_state.get(job_key)
    if job is None:
        return
    if job.running:
        left, right = st.columns([4, 1], vertical_alignment="center")
        left.info(probe_status(job), icon=":material/hourglass_top:")
        if right.button("Cancel", icon=":material/stop_circle:", width="stretch",
                        key=f"{job_key}.cancel", disabled=job.watch.cancelled):
            job.cancel()
            job.wait(timeout=5)
        else:
            return
    st.session_state.pop(job_key, None)
    if job.phase is ProbePhase.DONE:
        st.session_state[key] = job.result
    else:
        st.session_state[key + ".stopped"] = probe_status(job)
    st.rerun(scope="app")


def probe_status(job: ProbeJob) -> str:
    """What the page says of a probe: its phase, the time so far and the tokens written."""
    tokens = f" · {job.watch.tokens} token(s) written" if job.watch.tokens else ""
    if job.phase is ProbePhase.CANCELLED:
        return f"Cancelled after {job.elapsed_s:.0f} s{tokens}."
    if job.phase is ProbePhase.FAILED:
        return f"Stopped after {job.elapsed_s:.0f} s: {job.error}"
    if job.watch.cancelled:
        return f"Cancelling… ({job.elapsed_s:.0f} s{tokens})"
    return (f"{job.phase.value.capitalize()}… {job.elapsed_s:.0f} s{tokens} (the embedded "
            "model takes a few seconds per call, up to a minute on a busy machine).")
