"""A fragment's timed rerun sent from a page the server has left is dropped (components/
stale_reruns.py), with Streamlit's own request objects: the race it closes blanked the Run page
after "Start a run" on a busy machine (tests/ui/test_browser_adk_agents.py, in CI)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

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


def test_the_patch_drops_stale_ticks_and_passes_everything_else(monkeypatch):
    seen: list[ClientState | None] = []
    monkeypatch.setattr(AppSession, "request_rerun",
                        lambda self, client_state: seen.append(client_state))
    assert stale_reruns.install()
    assert stale_reruns.install()  # once: a second install does not wrap twice
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
    unpatched = getattr(AppSession.request_rerun, "__wrapped__", AppSession.request_rerun)
    monkeypatch.setattr(AppSession, "request_rerun", unpatched)
    app()
    assert AppSession.request_rerun is not unpatched
    assert AppSession.request_rerun.__wrapped__ is unpatched
