"""A fragment's timed rerun sent from a page the server has left is dropped (components/
stale_reruns.py), with Streamlit's own request objects: the race it closes blanked the Run page
after "Start a run" on a busy machine (tests/browser/test_browser_adk_agents.py, in CI)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests
from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

from components import stale_reruns


def tick(page: str, *, fragment: str = "badge", auto: bool = True) -> ClientState:
    return ClientState(page_script_hash=page, fragment_id=fragment, is_auto_rerun=auto)


def session_on(page: str, waiting: RerunData | None = None) -> SimpleNamespace:
    """An AppSession's state as the patch reads it: the page of its last run and, when given,
    a rerun already waiting in its script runner's queue."""
    requests = ScriptRequests()
    if waiting is not None:
        requests.request_rerun(waiting)
    return SimpleNamespace(_pages_manager=SimpleNamespace(current_page_script_hash=page),
                           _scriptrunner=SimpleNamespace(_requests=requests))


@pytest.fixture
def patched(monkeypatch):
    """The patch installed over a recorder of what reaches Streamlit, and a bare
    ``ScriptRunContext.reset``; all of it undone after the test."""
    seen: list[ClientState | None] = []
    monkeypatch.setattr(AppSession, "request_rerun",
                        lambda self, client_state: seen.append(client_state))
    monkeypatch.setattr(ScriptRunContext, "reset", lambda self, *args, **kwargs: None)
    for name in ("on_scriptrunner_yield", "on_scriptrunner_ready"):
        monkeypatch.setattr(ScriptRequests, name, getattr(ScriptRequests, name))
    assert stale_reruns.install()
    return seen


@pytest.mark.parametrize(("state", "stale"), [
    (tick("projects"), True),                      # a tick from the page left
    (tick("run"), False),                          # a tick of the page shown
    (tick("projects", auto=False), False),         # a person's click inside a fragment
    (tick("projects", fragment=""), False),        # a full rerun (a page switch) is never dropped
    (tick(""), False),                             # a client that names no page
])
def test_only_a_timed_fragment_rerun_from_another_page_is_stale(state, stale):
    assert stale_reruns.is_stale_fragment_tick(state, "run") is stale
    assert stale_reruns.is_stale_fragment_tick(state, None) is False  # page unknown: keep it


def test_a_waiting_page_switch_is_the_page_the_session_is_about_to_be_on():
    switching = session_on("projects", RerunData(page_script_hash="run", query_string="run=1"))
    assert stale_reruns.session_page(switching) == "run"
    # a tick already waiting is not a page switch: the session stays where it is
    ticking = session_on("projects", RerunData(page_script_hash="projects", fragment_id="b"))
    assert stale_reruns.session_page(ticking) == "projects"
    assert stale_reruns.session_page(session_on("run")) == "run"
    assert stale_reruns.session_page(SimpleNamespace()) is None


def test_a_switch_taken_but_not_started_is_the_sessions_page(patched):
    """Between the runner taking a page switch from its queue and the new page's run starting,
    Streamlit still reports the old page; a tick from it must not slip through then."""
    switching = session_on("projects", RerunData(page_script_hash="run"))
    requests = switching._scriptrunner._requests
    taken = requests.on_scriptrunner_yield()
    assert taken.rerun_data.page_script_hash == "run"
    assert stale_reruns.session_page(switching) == "run"
    assert stale_reruns.is_stale_fragment_tick(tick("projects"), "run")
    # the new run starts: what Streamlit reports (st.navigation's page) is the page again
    ScriptRunContext.reset(SimpleNamespace(script_requests=requests))
    assert stale_reruns.session_page(switching) == "projects"  # the fake's "current" page
    # a fragment's rerun taken from the queue says nothing of the session's page
    requests.request_rerun(RerunData(page_script_hash="other", fragment_id="badge"))
    requests.on_scriptrunner_ready()
    assert stale_reruns.session_page(switching) == "projects"


def test_internals_that_moved_mean_no_drop(patched):
    class Moved:
        @property
        def _scriptrunner(self):
            raise RuntimeError("this Streamlit keeps its runner elsewhere")

    AppSession.request_rerun(Moved(), tick("projects"))
    assert patched == [tick("projects")]


def test_the_patch_drops_stale_ticks_and_passes_everything_else(patched):
    seen = patched
    wrapped = ScriptRequests.on_scriptrunner_yield
    assert stale_reruns.install()  # once: a second install does not wrap twice
    assert ScriptRequests.on_scriptrunner_yield is wrapped
    session = session_on("run")
    AppSession.request_rerun(session, tick("projects"))           # dropped
    AppSession.request_rerun(session, tick("run"))
    AppSession.request_rerun(session, tick("projects", fragment=""))
    AppSession.request_rerun(session, None)                       # a rerun with no client state
    switching = session_on("projects", RerunData(page_script_hash="run"))
    AppSession.request_rerun(switching, tick("projects"))  # dropped: it would undo the switch
    assert [s and (s.page_script_hash, s.fragment_id) for s in seen] == [
        ("run", "badge"), ("projects", ""), None]


def test_the_studio_installs_it_when_it_serves_a_page(app, monkeypatch):
    targets = [(AppSession, "request_rerun"), (ScriptRunContext, "reset"),
               (ScriptRequests, "on_scriptrunner_yield"), (ScriptRequests, "on_scriptrunner_ready")]
    unpatched = [getattr(getattr(owner, name), "__wrapped__", getattr(owner, name))
                 for owner, name in targets]
    for (owner, name), original in zip(targets, unpatched, strict=True):
        monkeypatch.setattr(owner, name, original)
    app()
    for (owner, name), original in zip(targets, unpatched, strict=True):
        assert getattr(owner, name).__wrapped__ is original, name


def test_the_internals_it_reads_are_where_this_streamlit_keeps_them():
    """Against Streamlit's real objects (the other tests use stand-ins for a session): if an
    upgrade moves any of these, the patch stands aside, and this test says which moved."""
    import asyncio
    import dataclasses

    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
    from streamlit.runtime.script_data import ScriptData
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    async def a_session() -> dict[str, object]:
        session = AppSession(ScriptData("studio/app.py", is_hello=False),
                             MemoryUploadedFileManager("/upload"), ScriptCache(), None, {})
        try:
            return {name: getattr(session, name) for name in ("_scriptrunner", "_pages_manager")}
        finally:
            session.shutdown()

    held = asyncio.run(a_session())
    assert hasattr(held["_pages_manager"], "current_page_script_hash")
    requests = ScriptRequests()
    requests.request_rerun(RerunData(page_script_hash="run"))
    assert requests._state is ScriptRequestType.RERUN
    assert requests._rerun_data.page_script_hash == "run"
    assert requests.on_scriptrunner_ready()._rerun_data.page_script_hash == "run"
    assert "script_requests" in {field.name for field in dataclasses.fields(ScriptRunContext)}
