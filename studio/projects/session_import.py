"""In from production: an ADK app's recorded sessions as examples (``studio import-sessions``,
the Projects page under ``studio ui --agents``), read by :mod:`studio.runtime.adk_sessions`.

The turns go into an ADK eval set (``*.evalset.json``, written with ADK's own classes: the
user's message as ``user_content``, the recorded reply as ``final_response``, the tool calls as
the expected ``tool_uses``), which ``adk eval``, ``adk web`` and ``studio run my_agent
--evalset`` all read; into JSONL rows (``input``, ``expected``, ``expected_trajectory`` and
where each came from); or into a stored project's training rows.

From the browser, the database is one the server already knows (:func:`session_sources`):
a SQLite file inside the folder ``studio ui --agents`` serves, or the URL the server was
started with (``--sessions``). The browser picks one by its listed name, never gives a path or
an address, and the eval set is written into the served agent's own folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from studio.model.errors import ConfigError
from studio.model.records import EXPECTED_KEY, INPUT_KEY
from studio.model.redaction import mask_url
from studio.projects.files import dump_project, parse_project
from studio.projects.files.sections import DatasetSection
from studio.projects.served_agents import served_agent, served_agents_dir
from studio.runtime.adk_evalsets import TRAJECTORY_KEY
from studio.runtime.adk_sessions import SessionFilter, SessionsRead, Turn, read_sessions
from studio.store.seams import SessionImportStore

SESSIONS_URL_ENV = "STUDIO_SESSIONS_DB_URL"
"""The session database ``studio ui --sessions URL`` names: the only network database the
browser may import from (named as a secret is, so its value is redacted wherever shown)."""
SERVER_SOURCE = "the server's session database"
"""How the browser names that database (its URL, with its password, is never shown)."""
DATABASE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
MAX_SOURCES = 100
"""At most this many database files under the served folder are offered."""


def rows(read: SessionsRead) -> list[dict[str, Any]]:
    """One dataset row per turn: ``input``, ``expected`` (the recorded reply),
    ``expected_trajectory`` and where it came from (``session_id``, ``user_id``, ``turn``)."""
    return [{INPUT_KEY: t.input, EXPECTED_KEY: t.reply,
             TRAJECTORY_KEY: [dict(call) for call in t.tool_calls],
             "session_id": t.session_id, "user_id": t.user_id, "turn": t.number}
            for t in read.turns]


def eval_set_json(read: SessionsRead, eval_set_id: str, app_name: str) -> str:
    """The turns as an ADK ``EvalSet`` (one single-turn case each), as ``adk web`` saves one."""
    from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation
    from google.adk.evaluation.eval_set import EvalSet
    from google.genai import types

    def content(role: str, text: str) -> types.Content:
        return types.Content(role=role, parts=[types.Part.from_text(text=text)])

    cases = [EvalCase(eval_id=_case_id(t), conversation=[Invocation(
        invocation_id=t.invocation_id, user_content=content("user", t.input),
        final_response=content("model", t.reply),
        intermediate_data=IntermediateData(tool_uses=[
            types.FunctionCall(name=c["name"], args=c["args"]) for c in t.tool_calls]))])
        for t in read.turns]
    return EvalSet(eval_set_id=eval_set_id, name=f"sessions of {app_name}",
                   eval_cases=cases).model_dump_json(indent=2, exclude_none=True)


def _case_id(turn: Turn) -> str:
    return turn.session_id if turn.number == 1 else f"{turn.session_id}-turn{turn.number}"


def write_examples(read: SessionsRead, out: Path, app_name: str, *, replace: bool = True
                   ) -> Path:
    """Write the turns to ``out``: an ADK eval set (``*.evalset.json``) or JSONL rows
    (``*.jsonl``).

    Raises:
        ConfigError: another kind of file, or ``out`` exists and ``replace`` is False.
    """
    name = out.name.lower()
    if not name.endswith((".evalset.json", ".jsonl")):
        raise ConfigError(f"{out.name}: write the examples to an ADK eval set "
                          "(NAME.evalset.json) or to JSONL rows (NAME.jsonl)", where="--out",
                          value=str(out))
    if out.exists() and not replace:
        raise ConfigError(f"{out} exists: choose another name, or replace it", where="--out",
                          value=str(out))
    if name.endswith(".jsonl"):
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows(read))
    else:
        text = eval_set_json(read, out.name[:-len(".evalset.json")], app_name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def into_project(store: SessionImportStore, name: str, read: SessionsRead) -> int:
    """Make the turns the stored project ``name``'s training rows (input and expected
    columns set); the number of rows they replace.

    Raises:
        ConfigError: no stored project has that name (the names are listed).
    """
    record = store.find_project(name)
    if record is None:
        known = ", ".join(p.name for p in store.list_projects()) or "none yet"
        raise ConfigError(f"no project named {name!r} (projects: {known})", where="--project",
                          value=name)
    project = parse_project(record.yaml, source=f"project {name!r}")
    old = project.dataset.train if project.dataset else None
    columns: dict[str, Any] = {"train": rows(read), "input_column": INPUT_KEY,
                               "expected_column": EXPECTED_KEY}
    dataset = project.dataset.model_copy(update=columns) if project.dataset else \
        DatasetSection.model_validate(columns)
    store.save_project(name, dump_project(project.model_copy(update={"dataset": dataset})),
                       record.id)
    return len(old) if isinstance(old, list) else 0


# --------------------------------------------------------------------------- from the browser


def session_sources(root: Path | None = None) -> dict[str, str]:
    """The session databases the browser may import from, by the name it shows: each SQLite
    file under the served folder (``my_agent/.adk/session.db`` as ``adk web`` keeps it,
    relative to the served folder), and the server's ``--sessions`` URL. Name -> URL."""
    root = root or served_agents_dir()
    found: dict[str, str] = {}
    configured = os.environ.get(SESSIONS_URL_ENV, "").strip()
    if configured:
        found[f"{SERVER_SOURCE} ({mask_url(configured)})"] = configured
    if root is None or not root.is_dir():
        return found
    base = root.resolve()
    for path in _database_files(base):
        found[path.relative_to(base).as_posix()] = f"sqlite:///{path}"
    return found


def _database_files(base: Path) -> list[Path]:
    """SQLite files up to three folders down (``agent/.adk/session.db``), never through a
    link out of the served folder."""
    files: list[Path] = []
    for depth in ("*", "*/*", "*/*/*"):
        for path in sorted(base.glob(depth)):
            if path.name.lower().endswith(DATABASE_SUFFIXES) and path.is_file() and \
                    path.resolve().is_relative_to(base) and len(files) < MAX_SOURCES:
                files.append(path.resolve())
    return files


def typed_filter(ids: str, user: str, since: date | None, until: date | None, state: str,
                 all_turns: bool) -> SessionFilter:
    """The filter a form's fields give: session ids and ``key=value`` (or ``key``) state
    conditions separated by commas, whole days from ``since`` to ``until`` (local time)."""
    def day(value: date | None, end: bool) -> datetime | None:
        if value is None:
            return None
        moment = datetime.combine(value, time.max if end else time.min)
        return moment.astimezone()

    conditions = []
    for item in (part.strip() for part in state.split(",")):
        if item:
            key, equals, value = item.partition("=")
            conditions.append((key.strip(), value.strip() if equals else None))
    return SessionFilter(session_ids=tuple(i.strip() for i in ids.split(",") if i.strip()),
                         user_id=user.strip() or None, since=day(since, False),
                         until=day(until, True), state=tuple(conditions), all_turns=all_turns)


@dataclass(frozen=True)
class ServedImport:
    """What an import from the browser wrote, and what it left out."""

    path: Path
    read: SessionsRead


def import_for_served_agent(source: str, app_name: str, choice: SessionFilter, agent: str,
                            file_name: str, *, replace: bool = False) -> ServedImport:
    """Import from the database the browser chose *by name* into an eval set named
    ``file_name`` in the served agent ``agent``'s folder.

    Raises:
        ConfigError: an unknown source or agent, or a file name that is not a plain
            ``NAME.evalset.json``; DatasetError: what reading the sessions refuses.
    """
    sources = session_sources()
    if source not in sources:
        raise ConfigError(f"no session database {source!r} is offered here (offered: "
                          f"{', '.join(sources) or 'none'})", where="sessions", value=source)
    folder = served_agent(agent).folder.resolve()
    if Path(file_name).name != file_name or not file_name.endswith(".evalset.json") or \
            file_name.startswith("."):
        raise ConfigError(f"{file_name!r}: give a file name ending in .evalset.json, without "
                          "folders", where="eval set name", value=file_name)
    read = read_sessions(sources[source], app_name, choice)
    path = write_examples(read, folder / file_name, app_name, replace=replace)
    return ServedImport(path, read)
