"""Open the database: SQLite (WAL) by default, any SQLAlchemy URL via ``STUDIO_DB_URL``."""

from __future__ import annotations

import logging
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from sqlalchemy import create_engine, event, insert, select, text, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DatabaseError, DBAPIError, OperationalError, SQLAlchemyError

import studio.store.schema as schema
from studio.model.errors import StoreError, StoreFullError, StoreUnavailableError

DB_URL_ENV = "STUDIO_DB_URL"
HOME_ENV = "STUDIO_HOME"
RETRY_ENV = "STUDIO_DB_RETRY_SECONDS"
"""How long a call waits for a database that is unreachable or locked (default 60 s)."""
DEFAULT_RETRY_SECONDS = 60.0
T = TypeVar("T")
logger = logging.getLogger(__name__)


def default_db_path() -> Path:
    """``$STUDIO_HOME/studio.db``, by default ``~/.evolution-studio/studio.db``."""
    home = os.environ.get(HOME_ENV) or str(Path.home() / ".evolution-studio")
    return Path(home) / "studio.db"


def resolve_url(url: str | None = None) -> str:
    """Explicit URL, else ``STUDIO_DB_URL``, else the default SQLite file."""
    url = url or os.environ.get(DB_URL_ENV)
    if url:
        if url.startswith("postgres://"):  # the form Heroku and others hand out
            url = "postgresql://" + url[len("postgres://"):]
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url[len("postgresql://"):]
        return url
    return f"sqlite:///{default_db_path()}"


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL; None for other databases and in-memory SQLite."""
    if not url.startswith("sqlite:///") or url in ("sqlite:///:memory:", "sqlite://"):
        return None
    return Path(url[len("sqlite:///"):].split("?", 1)[0])


def check_sqlite_url(url: str) -> None:
    """Refuse the SQLite URLs the studio cannot honour, instead of misbehaving later.

    An in-memory database lives inside one connection, so a run's worker thread, a worker
    process and the UI would each see another empty database. Query options (``?mode=ro``) are
    not passed to SQLite by this URL form, so a "read-only" store would be written: the studio
    writes on every open (schema version, heartbeats), so read-only is refused by name.

    Raises:
        StoreError: naming the URL and what to use instead.
    """
    if not url.startswith("sqlite:"):
        return
    name = url.split("?", 1)[0]
    if name in ("sqlite://", "sqlite:///", "sqlite:///:memory:") or ":memory:" in name \
            or "mode=memory" in url:
        raise StoreError(
            f"{DB_URL_ENV}={url}: an in-memory SQLite database is not supported: it lives inside "
            "one connection, so the run, a worker and the studio would each see a different, "
            "empty database. Use a file, e.g. sqlite:////tmp/studio.db.")
    if "?" in url:
        options = url.split("?", 1)[1]
        raise StoreError(
            f"{DB_URL_ENV}={url}: SQLite URL options ({options}) are not supported; the studio "
            "writes to its database on every open (schema version, heartbeats), so a read-only "
            "store cannot be honoured. Copy the file and open the copy, or remove the options.")


SQLITE_BUSY_SECONDS = 15.0
"""How long one SQLite statement waits for another process's lock before it is refused (then
the store call is tried again, see :func:`with_retry`)."""


def create_db_engine(url: str) -> Engine:
    check_sqlite_url(url)
    retry_seconds()  # a bad setting is refused on opening, not in the middle of a run
    path = sqlite_file(url)
    if path is not None:
        _prepare_sqlite_dir(path)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_SECONDS},
            pool_pre_ping=False
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "commit", mark_commit)
        return engine
    try:
        engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        event.listen(engine, "commit", mark_commit)
        return engine
    except (ImportError, SQLAlchemyError) as exc:
        hint = " (install the driver: pip install -e '.[postgres]')" if "postgres" in url else ""
        raise StoreError(f"cannot use database URL {safe_url(url)}: {exc}{hint}") from exc


def _prepare_sqlite_dir(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the folder for the database {path}: {exc.strerror}. Set "
            f"{DB_URL_ENV} or {HOME_ENV} to a writable place."
        ) from exc
    if path.exists() and not os.access(path, os.W_OK):
        raise StoreError(
            f"the database file {path} is not writable. Fix its permissions, or set "
            f"{DB_URL_ENV} to another database."
        )
    if not os.access(path.parent, os.W_OK):
        raise StoreError(
            f"the folder {path.parent} is not writable, so the database cannot be created "
            f"there. Set {DB_URL_ENV} or {HOME_ENV} to a writable place."
        )


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_SECONDS * 1000)}")
    cursor.close()


def safe_url(url: str) -> str:
    """The URL without its password, for messages and the studio's sidebar."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable URL>"


def explain_database_error(exc: DatabaseError, url: str) -> StoreError:
    """A StoreError that names the database, what went wrong and what to do."""
    message = str(exc.orig) if exc.orig is not None else str(exc)
    path = sqlite_file(url)
    if path is not None and ("not a database" in message or "malformed" in message
                             or "disk image" in message):
        return StoreError(
            f"the database file {path} is damaged or is not a SQLite database ({message}). "
            f"Restore it from a backup, or move it aside so the studio creates a new one, or "
            f"set {DB_URL_ENV} to another database.")
    if path is not None and "full" in message:
        return StoreFullError(
            f"the disk holding the database file {path} is full ({_free_space(path)} free): "
            f"the last change was rolled back and nothing already saved was lost. Free space "
            f"there (or set {DB_URL_ENV} to a database on another disk), then resume "
            f"interrupted runs with `studio resume RUN_ID`.")
    if isinstance(exc, DBAPIError) and transient(exc):
        todo = ("close other tools writing to it" if path is not None
                else "check the URL and that the server is up")
        return StoreUnavailableError(
            f"database {safe_url(url)}: {message} (it is {_unavailable(path)}: {todo}. Nothing "
            f"was changed by the call that failed; once it is back, resume interrupted runs "
            f"with `studio resume RUN_ID`)")
    if "locked" in message:
        hint = ("another process holds a write lock on it for too long; close other tools "
                "writing to it and retry")
    elif "readonly" in message or "unable to open" in message:
        hint = f"it is not writable; fix its permissions or set {DB_URL_ENV}"
    elif isinstance(exc, OperationalError) and path is not None:
        hint = f"check that {path} is a readable, writable SQLite file"
    elif isinstance(exc, OperationalError):
        hint = "check the URL and that the database server is reachable"
    else:
        hint = "the change was rolled back; nothing already saved was lost"
    return StoreError(f"database {safe_url(url)}: {message} ({hint})")


def _free_space(path: Path) -> str:
    try:
        return f"{shutil.disk_usage(path.parent).free:,} bytes"
    except OSError:
        return "unknown"


def _unavailable(path: Path | None, message: str = "") -> str:
    if "full" in message:
        return f"on a full disk ({_free_space(path)} free)" if path else "on a full disk"
    return "locked by another process" if path is not None else "unreachable"


_TRANSIENT = ("database is locked", "database table is locked", "connection refused",
              "could not connect", "connection failed", "server closed the connection",
              "terminating connection", "the database system is starting up",
              "the database system is shutting down", "connection timeout", "timeout expired",
              "consuming input failed", "no route to host", "connection reset",
              "connection is closed", "the connection is lost", "ssl syscall error",
              "database or disk is full")
"""What a database says when it is restarting, unreachable for a moment, locked by another
writer, or out of disk (space may be freed): the statement did not take effect, so running it
again is safe."""


_PERMANENT = ("authentication failed", "does not exist", "no password supplied",
              "permission denied", "pg_hba.conf")
"""A server that answers but refuses: a wrong role, password or database is not waited for."""


def transient(exc: DBAPIError) -> bool:
    """Whether ``exc`` is a disconnect or lock that may pass, not a wrong statement or a full
    disk."""
    message = str(exc.orig if exc.orig is not None else exc).lower()
    if any(marker in message for marker in _PERMANENT):
        return False
    return exc.connection_invalidated or any(marker in message for marker in _TRANSIENT)


def retry_seconds() -> float:
    """:data:`RETRY_ENV` as a number of seconds from 0 to 3600 (0: no retry).

    Raises:
        StoreError: the value is not such a number.
    """
    text = os.environ.get(RETRY_ENV, "").strip()
    if not text:
        return DEFAULT_RETRY_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 3600):
        raise StoreError(f"{RETRY_ENV}={text!r} is not allowed: give a number of seconds from 0 "
                         f"to 3600 (default {DEFAULT_RETRY_SECONDS:g}), or unset it")
    return value


_call = threading.local()
"""Per thread: how deep in store calls this thread is, and whether the outermost one has sent a
COMMIT (then a failure may come after the change was stored, and repeating it is not safe)."""


def mark_commit(_connection) -> None:
    _call.committed = True


def with_retry(call: Callable[[], T], url: str,
               retryable: Callable[[DBAPIError], bool] = transient) -> T:
    """``call()``, repeated with backoff while the database is unreachable or locked (or
    whatever ``retryable`` says may pass), up to :func:`retry_seconds`, logging a warning while
    it waits.

    Only the outermost store call of a thread retries, and only when it sent no COMMIT: a
    failure before the commit rolled everything back, so nothing is stored twice; a failure
    during or after a commit is raised as it is.
    """
    if getattr(_call, "depth", 0):
        return call()
    _call.depth = 1
    try:
        return _retrying(call, url, retryable)
    finally:
        _call.depth = 0


def locked(exc: DBAPIError) -> bool:
    """Whether ``exc`` is another process holding the database's lock (longer than SQLite's
    busy timeout): a wait that ends, unlike an unreachable server, which on opening is more
    often a wrong URL and is said at once."""
    return "locked" in str(exc.orig if exc.orig is not None else exc).lower()


def _retrying(call: Callable[[], T], url: str, retryable: Callable[[DBAPIError], bool]) -> T:
    deadline, delay = None, 0.2
    while True:
        _call.committed = False
        try:
            return call()
        except DBAPIError as exc:
            if not retryable(exc) or getattr(_call, "committed", False):
                raise
            now = time.monotonic()
            deadline = deadline or now + retry_seconds()
            if now >= deadline:
                raise
            reason = str(exc.orig or exc).strip().splitlines()[0]
            logger.warning("database %s is %s (%s); trying again for up to %.0f s more",
                           safe_url(url), _unavailable(sqlite_file(url), reason), reason,
                           deadline - now)
            time.sleep(min(delay, deadline - now))
            delay = min(delay * 2, 5.0)


@contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction that also covers DDL: SQLite's driver commits ``ALTER TABLE`` and
    ``CREATE TABLE`` at once unless the transaction is opened explicitly, so a crash in the
    middle of a migration would leave a half-upgraded database."""
    with _explicit(engine, "BEGIN") as connection:
        yield connection


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the database's write lock from its first statement.

    On SQLite, ``BEGIN IMMEDIATE``: a read-then-write (claim the oldest queued run) cannot be
    interleaved with another process's, which a plain ``BEGIN`` would allow until the first
    write (and then fail one of them with "database is locked"). Elsewhere an ordinary
    transaction; row locks (``SELECT ... FOR UPDATE``) do the rest."""
    with _explicit(engine, "BEGIN IMMEDIATE") as connection:
        yield connection


def database_now(connection: Connection) -> datetime:
    """The database server's clock, in UTC: what leases and worker beats are written with and
    compared to, so that machines whose clocks disagree never take a live lease from each
    other (each machine's own clock would make a fast one see every lease as expired)."""
    if connection.dialect.name == "postgresql":
        value = connection.execute(text("SELECT now() AT TIME ZONE 'UTC'")).scalar_one()
    else:  # SQLite: its own 'now' (UTC, milliseconds), one clock for every process of the file
        value = connection.execute(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")
                                   ).scalar_one()
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


MIGRATION_LOCK_KEY = 0x5757_0001
"""PostgreSQL advisory lock held by a process creating or upgrading the schema."""


@contextmanager
def migration_transaction(engine: Engine) -> Iterator[Connection]:
    """:func:`write_transaction` that also serialises schema changes on PostgreSQL: an advisory
    lock, released at commit, so workers starting together on a new or older database wait for
    each other instead of racing ``CREATE TABLE`` (a deadlock or a table missing mid-create)."""
    with write_transaction(engine) as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                               {"key": MIGRATION_LOCK_KEY})
        yield connection


@contextmanager
def _explicit(engine: Engine, sqlite_begin: str) -> Iterator[Connection]:
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql(sqlite_begin)
        else:
            connection.begin()
        yield connection
        connection.commit()


def migrate(engine: Engine, url: str) -> int:
    """Create missing tables and upgrade the schema to :data:`schema.SCHEMA_VERSION`.

    Each step (creating the tables with their version, or one migration with its version bump)
    commits as a whole or not at all, so an interrupted upgrade reopens and continues. A store
    already up to date is only read. A step that writes holds the write lock from its start and
    reads the version again under it: processes opening a new file at once then wait for each
    other (SQLite refuses at once a reader that turns writer after another process wrote) and
    none repeats what another did. A step refused because another process held the lock past
    SQLite's busy timeout is tried again, as every store call is, for up to
    :func:`retry_seconds`.

    Raises:
        StoreError: the store is newer than this studio, its version is unreadable, or the
            database cannot be opened or written.
    """
    try:
        version = _step(engine, url, _current_version, transaction)
        if version is None or version < schema.SCHEMA_VERSION:  # migrations may need new tables
            version = _step(engine, url, _create_tables)
        while version < schema.SCHEMA_VERSION:
            version = _step(engine, url, _migrate_once)
        return version
    except DatabaseError as exc:
        raise explain_database_error(exc, url) from exc


def _step(engine: Engine, url: str, work: Callable[[Connection, str], T],
          begin: Callable[[Engine], AbstractContextManager[Connection]] = migration_transaction
          ) -> T:
    """One step of :func:`migrate` in its own transaction, tried again while another process
    holds the file locked."""
    def once() -> T:
        with begin(engine) as connection:
            return work(connection, url)
    return with_retry(once, url, retryable=locked)


def _migrate_once(connection: Connection, url: str) -> int:
    """The next migration, unless another process made it meanwhile; the version after it."""
    version = _current_version(connection, url)
    if version is None:  # the tables and the version were made in the step before this one
        raise StoreError(f"database {safe_url(url)}: its schema version went missing while it "
                         f"was being migrated. Restore it from a backup, or open another one.")
    if version < schema.SCHEMA_VERSION:
        schema.MIGRATIONS[version](connection)
        version += 1
        connection.execute(update(schema.meta).where(schema.meta.c.key == "schema_version")
                           .values(value=str(version)))
    return version


def _current_version(connection: Connection, url: str) -> int | None:
    """The stored schema version; None when the tables or the version are still to be made."""
    if not (connection.dialect.has_table(connection, "runs")
            and connection.dialect.has_table(connection, "meta")):
        return None
    return _read_version(connection, url)


def _create_tables(connection: Connection, url: str) -> int:
    """Missing tables created and the version recorded: the current one for a new store, 1 for
    a store from before versions were recorded."""
    fresh = not connection.dialect.has_table(connection, "runs")
    schema.metadata.create_all(connection)
    version = _read_version(connection, url)
    if version is None:
        version = schema.SCHEMA_VERSION if fresh else 1
        connection.execute(insert(schema.meta).values(key="schema_version", value=str(version)))
    return version


def _read_version(connection: Connection, url: str) -> int | None:
    row = connection.execute(
        select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")
    ).first()
    if row is None:
        return None
    try:
        version = int(row[0])
    except ValueError:
        raise StoreError(
            f"database {safe_url(url)}: its schema version {row[0]!r} (table meta, key "
            f"schema_version) is not a number, so the studio cannot tell how to read it. Open "
            f"another database (set {DB_URL_ENV}), or restore this one from a backup.") from None
    if version > schema.SCHEMA_VERSION:
        raise StoreError(
            f"database {safe_url(url)} has schema version {version}, newer than this studio's "
            f"{schema.SCHEMA_VERSION}: a newer Evolution Studio wrote it. Upgrade the studio "
            f"(pip install -U evolution-studio) to open it, or set {DB_URL_ENV} to another "
            f"database; this studio changed nothing in it.")
    return version
