"""The trial detail shows each tool call in order with its arguments and result, as text only
(model-chosen names and arguments never render as HTML or Markdown)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

HOSTILE = "<img src=x onerror=alert(1)> **bold** [link](http://evil)"
TRACE = {
    "tool_calls": [
        {"id": "c1", "name": "isleap", "args": {"year": 1900}, "result": {"result": False}},
        {"id": "c2", "name": HOSTILE, "args": {"note": HOSTILE}, "result": None},
    ],
    "events": [], "model_calls": 3, "usage": {"total_tokens": 42},
}


def render(trace):
    from components.trial_detail import show_trace

    show_trace(trace)


def test_each_call_shows_its_arguments_and_result_in_order_as_text():
    at = AppTest.from_function(render, args=(TRACE,), default_timeout=30).run()
    assert not at.exception
    assert [t.value for t in at.text] == ["1. isleap", f"2. {HOSTILE}"]
    blocks = [c.value for c in at.code]
    assert blocks[:2] == ['{\n  "year": 1900\n}', '{\n  "result": false\n}']
    assert blocks[2] == f'{{\n  "note": "{HOSTILE}"\n}}'
    assert blocks[3].startswith("(no result recorded")
    table = at.dataframe[0].value
    assert list(table["step"]) == [1, 2] and list(table["tool"]) == ["isleap", HOSTILE]
    rendered_markdown = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert not any("<img" in text for text in rendered_markdown)
    assert at.expander[0].label == "Trace: 2 tool call(s), 3 model call(s), 42 tokens"


def test_the_projects_page_edits_tools_under_the_browser_rule(app, studio_db, monkeypatch):
    from studio.projects.files import ALLOW_CODE_REFS_ENV, parse_project
    from studio.projects.workspace import import_example
    from tests.ui.conftest import assert_ok, texts
    from tests.ui.test_pages import SCRIPTED, button

    project = import_example(studio_db, SCRIPTED)
    at = app("projects", project_id=project.id)
    tools = at.text_area(key=f"projects.field.{project.id}.agent_tools")
    tools.set_value("calendar.isleap").run()
    assert any("agent 'writer' tool 'calendar.isleap'" in s for s in texts(at.error))
    assert button(at, "Save project").disabled

    at.text_area(key=f"projects.field.{project.id}.agent_tools").set_value(
        "calendar:isleap").run()
    button(at, "Save project").click().run()
    assert_ok(at)
    assert any("runs Python code on the server" in s and "--allow-code-refs" in s
               for s in texts(at.error))
    assert parse_project(studio_db.get_project(project.id).yaml).agent.tools == []

    monkeypatch.setenv(ALLOW_CODE_REFS_ENV, "1")
    button(at, "Save project").click().run()
    assert_ok(at)
    assert parse_project(studio_db.get_project(project.id).yaml).agent.tools == [
        "calendar:isleap"]
