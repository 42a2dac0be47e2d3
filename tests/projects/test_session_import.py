"""In from production: sessions an ADK app recorded become examples (issue 31). The sessions
are recorded by ADK itself: a real agent on the scripted model, run by ADK's ``Runner`` with
ADK's ``DatabaseSessionService`` into a temporary SQLite file (and PostgreSQL when CI gives
one), and with ``adk web``'s ``SqliteSessionService``."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import Runner
from google.genai import types

from studio.cli import main
from studio.model.errors import ConfigError
from studio.model.tools import ToolCall
from studio.projects.files import parse_project
from studio.projects.served_agents import AGENTS_DIR_ENV, served_agent
from studio.projects.session_import import (
    SESSIONS_URL_ENV,
    import_for_served_agent,
    session_sources,
)
from studio.runtime.adk_evalsets import eval_set_rows
from studio.runtime.adk_sessions import SessionFilter
from studio.runtime.providers import register_providers
from studio.runtime.providers.scripted import ScriptedReply, register_script, unregister_script
from studio.store import open_store
from tests.helpers import postgres_url
from tests.projects.test_adk_projects import write_agent_folder

APP = "weather_app"
SCRIPT = "sessions_weather"


def lookup(city: str) -> dict:
    """Weather for a city."""
    return {"city": city, "temp": 21}


def reply(request) -> str | ScriptedReply:
    """Weather questions go through the tool; anything else is echoed back."""
    if "[tool result]" in request.prompt_text:
        return "It is 21 degrees in Paris."
    if "weather" in request.last_user:
        return ScriptedReply(tool_calls=(ToolCall("lookup", {"city": "Paris"}),))
    return f"You said: {request.last_user}"


CONVERSATIONS = [  # (user, session, state, turns)
    ("ana", "s1", {"channel": "web"}, ["weather in Paris?"]),
    ("ana", "s2", {"channel": "mobile"}, ["hello", "and goodbye"]),
    ("bo", "s3", {"channel": "web"}, ["tell me a joke"]),
]


async def record(service) -> None:
    """Each conversation, turn by turn, through ADK's Runner into ``service``."""
    agent = LlmAgent(name="helper", model=LiteLlm(model=f"scripted/{SCRIPT}"),
                     instruction="Answer the user.", tools=[lookup])
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    for user, session_id, state, turns in CONVERSATIONS:
        await service.create_session(app_name=APP, user_id=user, session_id=session_id,
                                     state=state)
        for text in turns:
            message = types.Content(role="user", parts=[types.Part.from_text(text=text)])
            async for _event in runner.run_async(user_id=user, session_id=session_id,
                                                 new_message=message):
                pass
    await runner.close()
    await service.close()


@pytest.fixture(scope="module")
def scripted():
    register_providers()  # LiteLlm(model="scripted/...") reaches the studio's provider
    register_script(SCRIPT, reply)
    yield
    unregister_script(SCRIPT)


@pytest.fixture(scope="module")
def database(tmp_path_factory, scripted) -> Path:
    """A SQLite file written by ADK's DatabaseSessionService."""
    from google.adk.sessions import DatabaseSessionService

    path = tmp_path_factory.mktemp("sessions") / "sessions.db"
    asyncio.run(record(DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")))
    return path


def imported(tmp_path: Path, url: str, *args: str) -> list[dict]:
    out = tmp_path / "prod.evalset.json"
    assert main(["--db", f"sqlite:///{tmp_path}/s.db", "import-sessions", url, "--app", APP,
                 "--out", str(out), *args]) == 0
    return eval_set_rows(out.read_text(), source=str(out))


@pytest.mark.slow
def test_recorded_sessions_become_an_eval_set_the_studio_and_adk_read(database, tmp_path,
                                                                     capsys):
    rows = imported(tmp_path, f"sqlite:///{database}")
    assert "3 examples from 3 sessions of weather_app" in capsys.readouterr().out
    assert [(r["eval_id"], r["input"], r["expected"]) for r in rows] == [
        ("s1", "weather in Paris?", "It is 21 degrees in Paris."),
        ("s2", "hello", "You said: hello"),
        ("s3", "tell me a joke", "You said: tell me a joke")]
    assert rows[0]["expected_trajectory"] == [{"name": "lookup", "args": {"city": "Paris"}}]
    assert rows[1]["expected_trajectory"] == []

    from google.adk.evaluation.eval_set import EvalSet

    eval_set = EvalSet.model_validate_json((tmp_path / "prod.evalset.json").read_text())
    assert eval_set.eval_set_id == "prod" and len(eval_set.eval_cases) == 3


@pytest.mark.slow
def test_sessions_are_chosen_by_state_user_id_and_time(database, tmp_path, capsys):
    url = str(database)  # a plain path is a SQLite file
    assert [r["eval_id"] for r in imported(tmp_path, url, "--state", "channel=web")] == \
        ["s1", "s3"]
    assert [r["eval_id"] for r in imported(tmp_path, url, "--user", "bo")] == ["s3"]
    assert [r["eval_id"] for r in imported(tmp_path, url, "--session", "s2", "--all-turns")] \
        == ["s2", "s2-turn2"]
    assert [r["eval_id"] for r in imported(tmp_path, url, "--since", "2000-01-01",
                                           "--until", "2999-01-01", "--state", "channel")] \
        == ["s1", "s2", "s3"]
    capsys.readouterr()
    assert main(["import-sessions", url, "--app", APP, "--out", str(tmp_path / "x.jsonl"),
                 "--since", "2999-01-01"]) == 2
    assert ("has 3 sessions of app 'weather_app', and none matches the filters" in
            capsys.readouterr().err)


def test_rows_go_to_jsonl_with_where_each_came_from(database, tmp_path, capsys):
    out = tmp_path / "turns.jsonl"
    assert main(["import-sessions", f"sqlite:///{database}", "--app", APP, "--out", str(out),
                 "--session", "s2", "--all-turns"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [
        {"input": "hello", "expected": "You said: hello", "expected_trajectory": [],
         "session_id": "s2", "user_id": "ana", "turn": 1},
        {"input": "and goodbye", "expected": "You said: and goodbye",
         "expected_trajectory": [], "session_id": "s2", "user_id": "ana", "turn": 2}]


def test_sessions_become_a_stored_projects_training_rows(database, tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/s.db"
    store = open_store(db, cached=False)
    store.save_project("weather", "name: weather\nagent: {name: w, model: scripted/demo, "
                       "instruction: Answer.}\ndataset: {train: [{input: old}]}\n")
    store.close()
    assert main(["--db", db, "import-sessions", f"sqlite:///{database}", "--app", APP,
                 "--project", "weather", "--user", "bo"]) == 0
    assert "are project 'weather''s training rows now (1 rows replaced)" in \
        capsys.readouterr().out
    store = open_store(db, cached=False)
    project = parse_project(store.find_project("weather").yaml)
    store.close()
    assert project.dataset.train == [{"input": "tell me a joke",
                                      "expected": "You said: tell me a joke",
                                      "expected_trajectory": [], "session_id": "s3",
                                      "user_id": "bo", "turn": 1}]
    assert (project.dataset.input_column, project.dataset.expected_column) == \
        ("input", "expected")


def test_a_database_without_adk_sessions_is_refused_and_left_as_it_was(tmp_path, capsys):
    studio_db = tmp_path / "studio.db"
    open_store(f"sqlite:///{studio_db}", cached=False).close()
    before = studio_db.read_bytes()
    assert main(["import-sessions", str(studio_db), "--app", APP, "--out",
                 str(tmp_path / "x.jsonl")]) == 2
    assert "holds no ADK sessions (no sessions and events tables)" in capsys.readouterr().err
    assert studio_db.read_bytes() == before
    assert main(["import-sessions", str(tmp_path / "missing.db"), "--app", APP, "--out",
                 str(tmp_path / "x.jsonl")]) == 2
    assert "session database not found" in capsys.readouterr().err


def test_adk_webs_own_session_file_is_read_with_its_own_class(scripted, tmp_path, capsys):
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    path = tmp_path / "agent" / ".adk" / "session.db"
    path.parent.mkdir(parents=True)
    asyncio.run(record(SqliteSessionService(db_path=str(path))))
    rows = imported(tmp_path, str(path))
    assert [(r["eval_id"], r["expected"]) for r in rows][0] == ("s1",
                                                               "It is 21 degrees in Paris.")


def _drop_adk_tables(url: str) -> None:
    from google.adk.sessions.schemas.v1 import Base
    from sqlalchemy import create_engine

    engine = create_engine(url)
    Base.metadata.drop_all(engine)
    engine.dispose()


def test_a_postgresql_session_database_is_read_too(scripted, tmp_path, capsys):
    """DatabaseSessionService on PostgreSQL (CI's server): the same examples from the URL a
    deployment gives its session service."""
    from google.adk.sessions import DatabaseSessionService

    url = postgres_url()
    driver_url = "postgresql+psycopg://" + url.partition("://")[2]
    _drop_adk_tables(driver_url)
    try:
        asyncio.run(record(DatabaseSessionService(db_url=driver_url)))
        rows = imported(tmp_path, url, "--state", "channel=mobile", "--all-turns")
        assert [(r["eval_id"], r["input"]) for r in rows] == [("s2", "hello"),
                                                              ("s2-turn2", "and goodbye")]
        assert "studio_ci:***@" in capsys.readouterr().out  # the password is never printed
    finally:
        _drop_adk_tables(driver_url)


def test_the_browser_imports_only_from_databases_the_server_offers(database, tmp_path,
                                                                   monkeypatch):
    """A SQLite file inside the served folder, or the server's --sessions URL, picked by its
    listed name: a path, an address or a link out of the folder is refused, and the eval set
    lands in the agent's own folder by a plain file name."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "agents"
    folder = write_agent_folder(root, "sessions_agent")
    (folder / ".adk").mkdir()
    shutil.copy(database, folder / ".adk" / "session.db")
    (folder / "escape.db").symlink_to(database)
    monkeypatch.setenv(AGENTS_DIR_ENV, str(root))
    monkeypatch.setenv(SESSIONS_URL_ENV, "postgresql://ops:hunter22@db.internal/adk")
    sources = session_sources()
    assert list(sources) == ["the server's session database (postgresql://ops:***@db.internal/adk)",
                             "sessions_agent/.adk/session.db"]
    choice = SessionFilter()
    for source in (str(database), f"sqlite:///{database}", "sessions_agent/escape.db",
                   "postgresql://ops:hunter22@elsewhere/adk"):
        with pytest.raises(ConfigError, match="is offered here"):
            import_for_served_agent(source, APP, choice, "sessions_agent", "x.evalset.json")
    for name in ("../x.evalset.json", "x.json", ".hidden.evalset.json"):
        with pytest.raises(ConfigError, match="without folders"):
            import_for_served_agent("sessions_agent/.adk/session.db", APP, choice,
                                    "sessions_agent", name)
    done = import_for_served_agent("sessions_agent/.adk/session.db", APP, choice,
                                   "sessions_agent", "prod.evalset.json")
    assert done.path == (folder / "prod.evalset.json").resolve()
    assert served_agent("sessions_agent").eval_sets == ("prod.evalset.json",)
    with pytest.raises(ConfigError, match="exists: choose another name, or replace it"):
        import_for_served_agent("sessions_agent/.adk/session.db", APP, choice,
                                "sessions_agent", "prod.evalset.json")
