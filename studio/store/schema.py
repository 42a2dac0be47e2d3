"""Tables and migrations. The schema version lives in ``meta``; :data:`MIGRATIONS` upgrades an
older database step by step, inside one transaction per step."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    func,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.types import TypeEngine

from studio.model.limits import (
    MAX_COMPONENT_NAME_CHARS,
    MAX_NAME_CHARS,
    MAX_QUEUE_CHARS,
    check_length,
)

SCHEMA_VERSION = 12


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no offset)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value


NUL_MARKER = "\u2400"
"""What a NUL character becomes in the store: PostgreSQL refuses NUL in text, so ``␀`` (the
visible SYMBOL FOR NULL) is stored on every backend, the same on SQLite and PostgreSQL."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(value: Any) -> Any:
    """``value`` with every string made storable on any backend: a lone surrogate (half of a split
    emoji, which no database can encode as UTF-8) becomes U+FFFD, the replacement character, and
    NUL becomes :data:`NUL_MARKER`. One bad character in a model's reply or a dataset cell then
    costs that character, never the trial or the run. A value with nothing to replace (nearly
    every one) is returned as it is, not copied: this runs on every JSON value of every insert."""
    return value if _is_storable(value) else _made_storable(value)


def _is_storable(value: object) -> bool:
    if isinstance(value, dict | list) and _clean_when_encoded(value):
        return True
    return _walked_storable(value)


def _clean_when_encoded(value: dict | list) -> bool:
    """True when ``value``'s JSON text (one pass of the C encoder, non-ASCII kept) has no NUL
    (which the encoder writes as an escape) and encodes as UTF-8 (a lone surrogate does not):
    then no string in it needs a change. An escaped backslash before ``u0000`` looks like a
    NUL: that value is walked, which is slower, never wrong."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON: the walk decides
        return False
    return "\\u0000" not in text and not _has_surrogate(text)


def _walked_storable(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" not in value and (value.isascii() or not _has_surrogate(value))
    if isinstance(value, dict):
        return all(_walked_storable(k) and _walked_storable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_walked_storable(v) for v in value)
    return True


def _made_storable(value: Any) -> Any:
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", NUL_MARKER)
        return _LONE_SURROGATE.sub("\ufffd", value) if _has_surrogate(value) else value
    if isinstance(value, dict):
        return {_made_storable(k): _made_storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_made_storable(v) for v in value]
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class SafeText(TypeDecorator):
    """Text made :func:`storable` on the way in."""

    impl: type[TypeEngine[Any]] = Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return storable(value)


class SafeString(SafeText):
    """A bounded string made :func:`storable`, refused past its width on every backend.

    SQLite ignores column widths and PostgreSQL refuses past them with a message that names no
    field, so the width is checked here, the one place every write passes, with the field's
    name (:data:`FIELD_NAMES`): both backends then accept and refuse the same values."""

    impl = String
    cache_ok = True

    def __init__(self, length: int, field: str = "") -> None:
        super().__init__(length)
        self.length = length
        self.field = field

    def process_bind_param(self, value, dialect):
        value = storable(value)
        if isinstance(value, str):
            check_length(value, self.length, FIELD_NAMES.get(self.field, self.field))
        return value


class SafeJSON(TypeDecorator):
    """JSON whose strings (keys and values) are made :func:`storable` on the way in."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return storable(value)


metadata = MetaData()

meta = Table("meta", metadata, Column("key", String(64), primary_key=True),
             Column("value", Text, nullable=False))

projects = Table(
    "projects", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("yaml", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

runs = Table(
    "runs", metadata,
    Column("id", String(40), primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="SET NULL"), nullable=True),
    Column("name", String(200), nullable=False, default=""),
    Column("status", String(20), nullable=False),
    Column("config", JSON, nullable=False),
    Column("spec", JSON, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime),
    Column("finished_at", UTCDateTime),
    Column("heartbeat_at", UTCDateTime),
    Column("worker", String(200)),
    Column("stop_reason", Text),
    Column("error", Text),
    Column("control", String(20)),  # added in version 2
    Column("queue", String(64)),  # added in version 3
    Column("build_tries", Integer, nullable=False, default=0, server_default="0"),  # v8
    Column("build_error", Text),  # version 8
    Column("build_tries_max", Integer),  # version 8
    Column("control_seq", Integer, nullable=False, default=0, server_default="0"),  # version 11
    Column("forked_from_run", String(40)),  # version 12: spec.forked_from.run_id
    Column("aligns_run", String(40)),  # version 12: spec.aligns.run_id
    Index("ix_runs_queue_status", "queue", "status"),  # added in version 3
    Index("ix_runs_created_at", "created_at"),  # version 12 (and the four below)
    Index("ix_runs_status", "status"),
    Index("ix_runs_project_created", "project_id", "created_at"),
    Index("ix_runs_forked_from", "forked_from_run"),
    Index("ix_runs_aligns", "aligns_run"),
)

examples = Table(
    "examples", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("split", String(8), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("data", JSON, nullable=False),
    UniqueConstraint("run_id", "split", "idx"),
)

candidates = Table(
    "candidates", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("parent_ids", JSON, nullable=False),
    Column("components", JSON, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("iteration", Integer, nullable=False, default=0),
    Column("proposal_id", Integer),
    Column("pooled", Boolean, nullable=False, default=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("run_id", "idx"),
    Index("ux_candidates_run_content_hash", "run_id", "content_hash", unique=True),  # version 11
)

trials = Table(
    "trials", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("candidate_id", Integer, ForeignKey("candidates.id", ondelete="CASCADE"),
           nullable=False),
    Column("example_id", Integer, ForeignKey("examples.id", ondelete="CASCADE"), nullable=False),
    Column("split", String(8), nullable=False),
    Column("example_index", Integer, nullable=False),
    Column("iteration", Integer, nullable=False),
    Column("phase", String(12), nullable=False),
    Column("proposal_id", Integer),
    Column("input_text", Text, nullable=False),
    Column("output", Text, nullable=False),
    Column("score", Float),
    Column("feedback", JSON, nullable=False),
    Column("error", Text),
    Column("trace", JSON, nullable=False),
    Column("latency_s", Float, nullable=False, default=0.0),
    Column("tokens", Integer, nullable=False, default=0),
    Column("created_at", UTCDateTime, nullable=False),
    Column("worker", String(200)),  # added in version 3
    Column("cost_usd", Float, nullable=False, default=0.0, server_default="0"),  # v8
    Index("ix_trials_run_id_id", "run_id", "id"),
    Index("ix_trials_candidate_example", "candidate_id", "example_id"),
    Index("ix_trials_run_phase_proposal", "run_id", "phase", "proposal_id"),  # version 4
    Index("ix_trials_run_iteration", "run_id", "iteration"),  # version 4
)

overrides = Table(
    "overrides", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("score", Float),
    Column("feedback", Text),
    Column("judge_score", Float),
    Column("judge_feedback", Text),
    Column("author", String(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("undone_at", UTCDateTime),
    Column("corrected_output", Text),  # added in version 7
    Column("reviewer", String(200)),  # version 10
    Column("adjudicated", Boolean, nullable=False, default=False,
           server_default=false()),  # version 10
    Column("dimensions", JSON),  # version 10
    Index("ix_overrides_trial", "trial_id"),
    Index("ix_overrides_run", "run_id"),
)

proposals = Table(
    "proposals", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("iteration", Integer, nullable=False),
    Column("parent_id", Integer, nullable=False),
    Column("component", String(200), nullable=False),  # 40 before version 5
    Column("text", Text, nullable=False),
    Column("reasoning", Text, nullable=False, default=""),
    Column("status", String(12), nullable=False),
    Column("child_id", Integer),
    Column("edited_from", Integer),
    Column("invalid_reason", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("decided_at", UTCDateTime),
    Column("kind", String(12), nullable=False, default="reflection",
           server_default="reflection"),  # added in version 5
    Column("merge", JSON),  # added in version 5
    Column("minibatch", JSON),  # added in version 6
    Column("cost_usd", Float, nullable=False, default=0.0, server_default="0"),  # v9
    Index("ix_proposals_run", "run_id", "iteration"),
    Index("ix_proposals_status", "status"),  # version 12
)

decisions = Table(
    "decisions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("proposal_id", Integer, ForeignKey("proposals.id", ondelete="CASCADE"),
           nullable=False),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("action", String(12), nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Column("edited_text", Text),
    Column("author", String(200), nullable=False),
    Column("automatic", Boolean, nullable=False, default=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("evidence", JSON),  # added in version 6
    Index("ix_decisions_run", "run_id"),  # version 4
    Index("ix_decisions_proposal", "proposal_id"),  # version 4
)

run_events = Table(
    "run_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(40), nullable=False),
    Column("iteration", Integer, nullable=False, default=0),
    Column("payload", JSON, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_run_events_run_id_id", "run_id", "id"),
)

checkpoints = Table(
    "checkpoints", metadata,
    Column("run_id", String(40), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("iteration", Integer, nullable=False),
    Column("state", JSON, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

workers = Table(
    "workers", metadata,  # added in version 3
    Column("id", String(200), primary_key=True),
    Column("queue", String(64), nullable=False),
    Column("host", String(200), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
    Column("run_id", String(40)),
)

users = Table(
    "users", metadata,  # added in version 10
    Column("name", String(200), primary_key=True),
    Column("role", String(12), nullable=False),
    Column("token_hash", String(64)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

review_settings = Table(
    "review_settings", metadata,  # added in version 10
    Column("project", String(200), primary_key=True),
    Column("reviewers_per_trial", Integer, nullable=False, default=1),
    Column("blind", Boolean, nullable=False, default=False),
    Column("updated_by", String(200)),
    Column("updated_at", UTCDateTime, nullable=False),
)

eval_runs = Table(
    "eval_runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("kind", String(60), nullable=False),
    Column("summary", JSON, nullable=False),
    Column("cases", JSON, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_eval_runs_name", "name"),
)


FIELD_NAMES = {
    "projects.name": "project name", "runs.name": "run name (--name)",
    "runs.queue": "queue name (--queue)", "workers.queue": "queue name (--queue)",
    "overrides.author": "author (--author)", "decisions.author": "author (--author)",
    "runs.worker": "worker id", "trials.worker": "worker id", "workers.id": "worker id",
    "workers.host": "host name", "proposals.component": "component name",
    "eval_runs.name": "evaluation name", "runs.id": "run id",
    "users.name": "user name", "overrides.reviewer": "reviewer",
    "review_settings.project": "project name", "review_settings.updated_by": "user name",
}
"""What a person calls each bounded column, for the message that refuses a value too long."""

FIELD_LIMITS = {"projects.name": MAX_NAME_CHARS, "runs.name": MAX_NAME_CHARS,
                "runs.queue": MAX_QUEUE_CHARS, "workers.queue": MAX_QUEUE_CHARS,
                "overrides.author": MAX_NAME_CHARS, "decisions.author": MAX_NAME_CHARS,
                "runs.worker": MAX_NAME_CHARS, "trials.worker": MAX_NAME_CHARS,
                "proposals.component": MAX_COMPONENT_NAME_CHARS,
                "users.name": MAX_NAME_CHARS, "overrides.reviewer": MAX_NAME_CHARS,
                "review_settings.project": MAX_NAME_CHARS,
                "review_settings.updated_by": MAX_NAME_CHARS}
"""The columns whose width is a limit people meet (:mod:`studio.model.limits`)."""


def _make_storable(column: Column) -> None:
    """Give a text, string or JSON column its storable twin (the same DDL)."""
    field = f"{column.table.name}.{column.name}"
    if isinstance(column.type, String) and column.type.length is not None:
        if FIELD_LIMITS.get(field, column.type.length) != column.type.length:
            raise RuntimeError(f"{field}: its width differs from studio.model.limits")
        column.type = SafeString(column.type.length, field)
    elif isinstance(column.type, Text | String):
        column.type = SafeText()
    elif isinstance(column.type, JSON):
        column.type = SafeJSON()


for _table in metadata.tables.values():  # every column, including those added later
    for _column in _table.columns:
        _make_storable(_column)

def _v1_to_v2(connection: Connection) -> None:
    """Version 2 adds ``runs.control`` (pause/stop requests from the studio to the worker).
    Idempotent: a database upgraded by an older, non-transactional studio already has it."""
    if "control" not in {column["name"] for column in inspect(connection).get_columns("runs")}:
        connection.execute(text("ALTER TABLE runs ADD COLUMN control VARCHAR(20)"))


def _v2_to_v3(connection: Connection) -> None:
    """Version 3 lets workers share one store: ``runs.queue`` (the queue a worker takes a run
    from), ``trials.worker`` (who judged it) and the ``workers`` table (created by
    ``create_all`` before the migrations run). Idempotent, like every step."""
    _add_column(connection, "runs", "queue", "VARCHAR(64)")
    _add_column(connection, "trials", "worker", "VARCHAR(200)")
    connection.execute(text("CREATE INDEX IF NOT EXISTS ix_runs_queue_status "
                            "ON runs (queue, status)"))


V4_INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_trials_run_phase_proposal ON trials (run_id, phase, "
    "proposal_id)",
    "CREATE INDEX IF NOT EXISTS ix_trials_run_iteration ON trials (run_id, iteration)",
    "CREATE INDEX IF NOT EXISTS ix_decisions_run ON decisions (run_id)",
    "CREATE INDEX IF NOT EXISTS ix_decisions_proposal ON decisions (proposal_id)",
)


def _v3_to_v4(connection: Connection) -> None:
    """Version 4 indexes what large runs are read by: a run's trials by phase and proposal
    (the children's minibatch means) and by iteration (the Review page), and decisions by run
    and by proposal. Idempotent (``IF NOT EXISTS``), in the step's transaction."""
    for statement in V4_INDEXES:
        connection.execute(text(statement))


def _v4_to_v5(connection: Connection) -> None:
    """Version 5 records merges: ``proposals.kind`` (``reflection`` for every older row) and
    ``proposals.merge`` (the two parents and which component came from which, JSON), and widens
    ``proposals.component`` to 200 characters for keys such as ``writer.instruction`` (SQLite
    does not enforce a length, so only PostgreSQL needs it). Idempotent."""
    _add_column(connection, "proposals", "kind",
                "VARCHAR(12) NOT NULL DEFAULT 'reflection'")
    _add_column(connection, "proposals", "merge", "JSON")
    if connection.dialect.name == "postgresql":
        connection.execute(text("ALTER TABLE proposals ALTER COLUMN component TYPE VARCHAR(200)"))


def _v5_to_v6(connection: Connection) -> None:
    """Version 6 records what the evidence is computed from and what a decision saw:
    ``proposals.minibatch`` (the example ids parent and child are compared on) and
    ``decisions.evidence`` (the sums and verdict when the decision was made; NULL for older
    decisions, which did not keep them). Older proposals get their minibatch here, once: a
    merge's subsample, else the latest "iteration started" event's minibatch of the proposal's
    iteration, else the examples its child was scored on. Idempotent."""
    _add_column(connection, "proposals", "minibatch", "JSON")
    _add_column(connection, "decisions", "evidence", "JSON")
    p = proposals.c
    missing = connection.execute(select(p.id, p.run_id, p.iteration, p.merge)
                                 .where(p.minibatch.is_(None))).all()
    if not missing:
        return
    started = _started_minibatches(connection)
    scored = _child_examples(connection)
    for row in missing:
        merge = _json(row.merge)
        batch = (list(merge.get("subsample") or []) if merge
                 else started.get((row.run_id, row.iteration)) or scored.get(row.id, []))
        connection.execute(update(proposals).where(p.id == row.id).values(minibatch=batch))


def _v6_to_v7(connection: Connection) -> None:
    """Version 7 keeps what the answer should have been beside a correction:
    ``overrides.corrected_output`` (NULL for older corrections and when the person gave none).
    Idempotent."""
    _add_column(connection, "overrides", "corrected_output", "TEXT")


def _v7_to_v8(connection: Connection) -> None:
    """Version 8 prices trials and counts failed builds: ``trials.cost_usd`` (LiteLLM's price
    of the trial's model calls; 0 for older trials, unpriced then) and, on runs, ``build_tries``
    / ``build_error`` / ``build_tries_max`` (workers that could not build a queued run, and
    why). Idempotent."""
    _add_column(connection, "trials", "cost_usd", "FLOAT NOT NULL DEFAULT 0")
    _add_column(connection, "runs", "build_tries", "INTEGER NOT NULL DEFAULT 0")
    _add_column(connection, "runs", "build_error", "TEXT")
    _add_column(connection, "runs", "build_tries_max", "INTEGER")


def _v8_to_v9(connection: Connection) -> None:
    """Version 9 prices the reflection: ``proposals.cost_usd`` (LiteLLM's price of the
    reflection agent's calls that made the proposal; 0 for older proposals, unpriced then, and
    for the model-free operators, merges and a person's edits). Idempotent."""
    _add_column(connection, "proposals", "cost_usd", "FLOAT NOT NULL DEFAULT 0")


def _v9_to_v10(connection: Connection) -> None:
    """Version 10 brings people to a shared studio: the ``users`` table (each person's role and
    CLI token hash) and ``review_settings`` (how many people review each trial of a project,
    and whether blind), both created by ``create_all`` before the migrations run; and, on
    ``overrides``, ``reviewer`` (the verified person whose label it is; NULL for every older
    correction, which were all one person's), ``adjudicated`` (an owner's ruling; false for
    older rows) and ``dimensions`` (a person's score per critic dimension). Idempotent."""
    _add_column(connection, "overrides", "reviewer", "VARCHAR(200)")
    _add_column(connection, "overrides", "adjudicated", "BOOLEAN NOT NULL DEFAULT false")
    _add_column(connection, "overrides", "dimensions", "JSON")


def _v10_to_v11(connection: Connection) -> None:
    """Version 11: one candidate per content hash in a run (a unique index: two people's equal
    edits on two lanes once both entered the pool), and ``runs.control_seq``, which counts a
    person's Pause and Stop requests so a resume withdraws only the requests it read (a Stop
    made after it began is kept). Duplicates an older studio stored keep their rows, trials
    and lineage: each later copy's hash becomes ``duplicate <id> of <first id>``, so the first
    is the one a lookup by content finds. Idempotent."""
    _add_column(connection, "runs", "control_seq", "INTEGER NOT NULL DEFAULT 0")
    c = candidates.c
    repeated = connection.execute(select(c.run_id, c.content_hash)
                                  .group_by(c.run_id, c.content_hash)
                                  .having(func.count() > 1)).all()
    for run_id, content_hash in repeated:
        first, *copies = connection.execute(
            select(c.id).where(c.run_id == run_id, c.content_hash == content_hash)
            .order_by(c.idx)).scalars().all()
        for copy in copies:
            connection.execute(update(candidates).where(c.id == copy).values(
                content_hash=f"duplicate {copy} of {first}"))
    connection.execute(text("CREATE UNIQUE INDEX IF NOT EXISTS ux_candidates_run_content_hash "
                            "ON candidates (run_id, content_hash)"))


V12_INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_runs_created_at ON runs (created_at)",
    "CREATE INDEX IF NOT EXISTS ix_runs_status ON runs (status)",
    "CREATE INDEX IF NOT EXISTS ix_proposals_status ON proposals (status)",
    "CREATE INDEX IF NOT EXISTS ix_runs_project_created ON runs (project_id, created_at)",
    "CREATE INDEX IF NOT EXISTS ix_runs_forked_from ON runs (forked_from_run)",
    "CREATE INDEX IF NOT EXISTS ix_runs_aligns ON runs (aligns_run)",
)


def _v11_to_v12(connection: Connection) -> None:
    """Version 12 reads what a page shows without scanning the store: the run lists by
    ``created_at`` (of the store, of a project), the runs a worker may have left by
    ``status``, the proposals waiting for a person (the inbox) by ``proposals.status``, a
    run's forks by ``runs.forked_from_run`` and its critic's align runs by
    ``runs.aligns_run`` (each the source run's id from the spec, copied here for older runs,
    written by ``create_run`` from now on), each indexed. Idempotent."""
    _add_column(connection, "runs", "forked_from_run", "VARCHAR(40)")
    _add_column(connection, "runs", "aligns_run", "VARCHAR(40)")
    r = runs.c
    for run_id, spec in connection.execute(select(r.id, r.spec)):
        sources = run_sources(_json(spec))
        if any(sources.values()):
            connection.execute(update(runs).where(r.id == run_id).values(**sources))
    for statement in V12_INDEXES:
        connection.execute(text(statement))


def run_sources(spec: Mapping[str, object]) -> dict[str, str | None]:
    """The run a spec was forked from and the run whose critic it aligns, as the ``runs``
    columns that find them (``forked_from_run``, ``aligns_run``)."""
    return {"forked_from_run": _source_run(spec.get("forked_from")),
            "aligns_run": _source_run(spec.get("aligns"))}


def _source_run(origin: object) -> str | None:
    run_id = origin.get("run_id") if isinstance(origin, dict) else None
    return str(run_id) if run_id else None


def _started_minibatches(connection: Connection) -> dict[tuple[str, int], list[int]]:
    """(run id, iteration) -> the minibatch of its latest "iteration started" event."""
    e = run_events.c
    found: dict[tuple[str, int], list[int]] = {}
    for run_id, iteration, payload in connection.execute(
            select(e.run_id, e.iteration, e.payload).where(e.kind == "iteration_started")
            .order_by(e.id)):
        found[(run_id, iteration)] = list(_json(payload).get("minibatch") or [])
    return found


def _child_examples(connection: Connection) -> dict[int, list[int]]:
    """Proposal id -> the examples its child was scored on in the iteration, oldest first."""
    t = trials.c
    found: dict[int, list[int]] = {}
    for proposal_id, example_id in connection.execute(
            select(t.proposal_id, t.example_id)
            .where(t.phase == "child", t.proposal_id.is_not(None)).order_by(t.id)):
        found.setdefault(proposal_id, []).append(example_id)
    return found


def _json(value: object) -> dict[str, Any]:
    """A JSON column's value as a dict (a driver may hand back the text)."""
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _add_column(connection: Connection, table: str, column: str, sql_type: str) -> None:
    if column not in {c["name"] for c in inspect(connection).get_columns(table)}:
        connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}"))


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3,
                                                        3: _v3_to_v4, 4: _v4_to_v5,
                                                        5: _v5_to_v6, 6: _v6_to_v7,
                                                        7: _v7_to_v8, 8: _v8_to_v9,
                                                        9: _v9_to_v10,
                                                        10: _v10_to_v11,
                                                        11: _v11_to_v12}
"""``MIGRATIONS[n]`` upgrades a database from version n to n + 1."""
