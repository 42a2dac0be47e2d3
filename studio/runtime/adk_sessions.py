"""Conversations an ADK app recorded in production, read with ADK's own session services, as
single-turn examples: the user's message is the input, the agent's recorded reply the
reference kept for comparison (``studio import-sessions``).

Two stores are read, each with its own ADK class: a ``DatabaseSessionService`` database
(SQLite or PostgreSQL, the service an ADK app deploys with), and the SQLite file ``adk web``
keeps in ``<agent>/.adk/session.db`` (``SqliteSessionService``, another schema). Which one a
database is comes from its tables, read before either service opens it, so a database that
holds no ADK sessions is refused and never given ADK's tables.

One turn of a session is one invocation: the user's message that started it, and the last
final text reply in it (the agent's, or a sub-agent's it transferred to), with the tool calls
made on the way (the reference trajectory). Only a session's first turn is taken unless asked:
a later turn alone lacks the conversation before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from studio.model.errors import DatasetError
from studio.model.limits import MAX_DATASET_ROWS, MAX_OUTPUT_CHARS
from studio.model.redaction import mask_url

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.adk.sessions import DatabaseSessionService, Session
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

MAX_SESSIONS = 5_000
"""At most this many sessions are read in one import (the newest first)."""
ADK_METADATA_TABLE = "adk_internal_metadata"
"""The table ``DatabaseSessionService`` keeps its schema version in (``adk web``'s SQLite
store has none)."""


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions to read: by id, user, last-update time and state; all filters hold."""

    session_ids: tuple[str, ...] = ()
    user_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    state: tuple[tuple[str, str | None], ...] = ()
    """``(key, value)``: the session's state has ``key`` equal to ``value`` (compared as text);
    ``(key, None)``: the state has ``key`` at all."""
    all_turns: bool = False
    """Every turn of a session, not only the first."""

    def chooses(self, session: Session) -> bool:
        if self.session_ids and session.id not in self.session_ids:
            return False
        updated = session.last_update_time
        if self.since is not None and updated < self.since.timestamp():
            return False
        if self.until is not None and updated > self.until.timestamp():
            return False
        return all(key in session.state and (value is None or str(session.state[key]) == value)
                   for key, value in self.state)


@dataclass(frozen=True)
class Turn:
    """One recorded turn: what the user said, what the agent answered, the tools it called."""

    session_id: str
    user_id: str
    invocation_id: str
    number: int
    """The turn's place in its session (1 for the first)."""
    input: str
    reply: str
    tool_calls: tuple[dict[str, Any], ...] = ()
    """``{"name", "args"}`` of each tool call, in order."""


@dataclass
class SessionsRead:
    """The turns read, how many sessions they came from, and what was left out and why."""

    turns: list[Turn] = field(default_factory=list)
    sessions: int = 0
    left_out: list[str] = field(default_factory=list)


def read_sessions(url: str, app_name: str, choice: SessionFilter) -> SessionsRead:
    """The turns of ``app_name``'s sessions in the database ``url`` (a SQLAlchemy URL, or a
    SQLite file's path) that ``choice`` picks, oldest session first.

    Raises:
        DatasetError: the database cannot be opened or holds no ADK sessions, or no session of
            the app matches (naming the filters).
    """
    return asyncio.run(_read(url, app_name, choice))


async def _read(url: str, app_name: str, choice: SessionFilter) -> SessionsRead:
    service = open_session_service(url)
    try:
        listed = await service.list_sessions(app_name=app_name, user_id=choice.user_id)
        chosen = [s for s in listed.sessions if choice.chooses(s)]
        if not chosen:
            raise DatasetError(_nothing_found(url, app_name, choice, len(listed.sessions)),
                               where="sessions", value=app_name)
        chosen = sorted(chosen, key=lambda s: s.last_update_time)[-MAX_SESSIONS:]
        read = SessionsRead(sessions=len(chosen))
        for listed_session in chosen:
            session = await service.get_session(app_name=app_name,
                                                user_id=listed_session.user_id,
                                                session_id=listed_session.id)
            if session is not None:
                _add_turns(read, session, choice.all_turns)
        return read
    finally:
        await service.close()  # both services dispose of their connections here


def _nothing_found(url: str, app_name: str, choice: SessionFilter, listed: int) -> str:
    where = f"{mask_url(url)} has {listed} session{'s' if listed != 1 else ''} of app " \
            f"{app_name!r}"
    if not listed:
        return f"{where}: is the app name the one the Runner was given (app_name=...)?"
    return f"{where}, and none matches the filters (session ids, user, time range, state)"


def _add_turns(read: SessionsRead, session: Session, all_turns: bool) -> None:
    for number, events in enumerate(_invocations(session.events), start=1):
        if number > 1 and not all_turns:
            break
        turn = _turn(session, number, events)
        if isinstance(turn, str):
            read.left_out.append(turn)
        elif len(read.turns) < MAX_DATASET_ROWS:
            read.turns.append(turn)


def _invocations(events: Iterable[Event]) -> list[list[Event]]:
    """The session's events grouped by invocation, in the order the invocations began."""
    grouped: dict[str, list[Event]] = {}
    for event in events:
        grouped.setdefault(event.invocation_id or "", []).append(event)
    return list(grouped.values())


def _turn(session: Session, number: int, events: list[Event]) -> Turn | str:
    """The turn, or why it is left out."""
    said = f"session {session.id} turn {number}"
    asked = next((_text(e) for e in events if e.author == "user" and _text(e)), "")
    replies = [_text(e) for e in events if e.author != "user" and e.is_final_response()
               and _text(e)]
    if not asked:
        return f"{said}: no text from the user"
    if not replies:
        return f"{said}: no final text reply"
    if max(len(asked), len(replies[-1])) > MAX_OUTPUT_CHARS:
        return f"{said}: longer than {MAX_OUTPUT_CHARS:,} characters"
    calls = tuple({"name": call.name, "args": dict(call.args or {})}
                  for e in events for call in e.get_function_calls())
    return Turn(session.id, session.user_id, events[0].invocation_id or "", number, asked,
                replies[-1], calls)


def _text(event: Event) -> str:
    content = event.content
    if content is None or not content.parts:
        return ""
    return "".join(p.text for p in content.parts if p.text and not p.thought).strip()


# --------------------------------------------------------------------------- the database


def open_session_service(url: str) -> SqliteSessionService | DatabaseSessionService:
    """ADK's session service for the database ``url``: ``SqliteSessionService`` for ``adk
    web``'s SQLite file, ``DatabaseSessionService`` for anything else.

    Raises:
        DatasetError: the database is missing, cannot be opened, or has no ADK session tables.
    """
    from google.adk.sessions import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    sync_url, async_url = database_urls(url)
    tables = _tables(sync_url, url)
    if "sessions" not in tables or "events" not in tables:
        raise DatasetError(f"{mask_url(url)} holds no ADK sessions (no sessions and events "
                           "tables): give the database your app's session service writes to",
                           where="sessions", value=mask_url(url))
    if sync_url.startswith("sqlite") and ADK_METADATA_TABLE not in tables and \
            "event_data" in tables["events"]:
        return SqliteSessionService(db_path=sync_url.split("///", 1)[1])
    try:
        return DatabaseSessionService(db_url=async_url)
    except ValueError as exc:
        raise DatasetError(f"ADK cannot open {mask_url(url)}: {exc}", where="sessions",
                           value=mask_url(url)) from exc


def database_urls(url: str) -> tuple[str, str]:
    """``(sync URL, async URL)`` for ``url``: a path is a SQLite file; SQLite is read with
    aiosqlite, PostgreSQL with psycopg (the driver the studio installs; an asyncpg URL is
    read with it too).

    Raises:
        DatasetError: a SQLite file that does not exist, or a database other than SQLite and
            PostgreSQL.
    """
    if "://" not in url:
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    scheme, _, rest = url.partition("://")
    backend = scheme.partition("+")[0]
    if backend == "sqlite":
        path = Path(rest[1:] if rest.startswith("/") else rest)
        if not path.is_file():
            raise DatasetError(f"session database not found: {path}", where="sessions",
                               value=str(path))
        return f"sqlite:///{path}", f"sqlite+aiosqlite:///{path}"
    if backend in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}", f"postgresql+psycopg://{rest}"
    raise DatasetError(f"{scheme}:// databases are not read here: give a SQLite file or a "
                       "PostgreSQL URL", where="sessions", value=mask_url(url))


def _tables(sync_url: str, shown: str) -> dict[str, set[str]]:
    """Each table of the database with its column names (read-only, never created)."""
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(sync_url)
    try:
        inspector = inspect(engine)
        return {name: {c["name"] for c in inspector.get_columns(name)}
                for name in inspector.get_table_names()}
    except SQLAlchemyError as exc:
        raise DatasetError(f"cannot read {mask_url(shown)}: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0]}", where="sessions",
                           value=mask_url(shown)) from exc
    finally:
        engine.dispose()
