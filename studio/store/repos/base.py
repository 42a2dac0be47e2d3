"""What every repository shares: the database it reads and writes, and the guard on each call."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy.engine import CursorResult, Engine, Row
from sqlalchemy.exc import DatabaseError, StatementError

from studio.model.errors import StoreError, StudioError
from studio.store.connection import explain_database_error, sqlite_file, with_retry

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
Repo = TypeVar("Repo", bound="Repository")


class Database:
    """One opened database: its engine, its URL and, for SQLite, the file it was opened on.

    Every repository of a store holds the same one, so they share the connection pool, the
    retry rule and the check that the SQLite file is still the one opened."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self.path = sqlite_file(url)
        self._identity = _file_identity(self.path) if self.path else None

    def file_intact(self) -> bool:
        """False when the SQLite file this store opened was deleted or replaced (another file,
        or none, at its path): writes would go to a file nobody can see any more."""
        return self.path is None or _file_identity(self.path) == self._identity

    def check_file(self) -> None:
        """Raise StoreError when :meth:`file_intact` is False, so a run stops with an error
        instead of reporting as done what is not stored."""
        if not self.file_intact():
            state = ("was deleted" if self.path is None or _file_identity(self.path) is None
                     else "was replaced")
            raise StoreError(
                f"the database file {self.path} {state} while the studio was using it; "
                "anything saved since then is lost with the old file. Restore the file from a "
                "backup (or keep the new one) and restart; resume interrupted runs with "
                "`studio resume`.")


class Repository:
    """The records of one aggregate (runs, trials, proposals ...) over a shared :class:`Database`.

    Each public method is one short transaction, thread-safe, wrapped in :func:`guard`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.engine = db.engine
        self.url = db.url

    def check_file(self) -> None:
        self.db.check_file()


def guard(method: Callable[Concatenate[Repo, P], R]) -> Callable[Concatenate[Repo, P], R]:
    """Turn database failures into a StoreError that says what to do, and refuse to read or
    write a SQLite file that was deleted or replaced since the store opened it. Typed so the
    method keeps its signature: the facade's callers and its seams are checked against it."""

    @functools.wraps(method)
    def wrapper(self: Repo, *args: P.args, **kwargs: P.kwargs) -> R:
        self.check_file()
        try:
            return with_retry(lambda: method(self, *args, **kwargs), self.url)
        except DatabaseError as exc:
            raise explain_database_error(exc, self.url) from exc
        except StatementError as exc:  # a value refused before it reached the database
            if isinstance(exc.orig, StudioError):
                raise exc.orig from None
            raise

    return wrapper


PARAMETERS_PER_QUERY = 10_000
"""Values bound to one query's ``IN`` list at most (PostgreSQL refuses a statement of more than
65,535 parameters; a 100,000-example batch asks about every example)."""


def in_chunks(values: Iterable[T], size: int = PARAMETERS_PER_QUERY) -> Iterator[list[T]]:
    """``values`` in lists of at most ``size`` (one query each), in order."""
    values = list(values)
    for start in range(0, len(values), size):
        yield values[start:start + size]


def to_model(cls, row: Row | None, **rename: str):
    """``row`` as a ``cls`` record (columns renamed ``source=target``); None for no row."""
    if row is None:
        return None
    data = dict(row._mapping)
    for source, target in rename.items():
        data[target] = data.pop(source)
    return cls.model_validate(data)


def inserted_id(result: CursorResult[Any]) -> int:
    """The id a one-row insert just made. SQLAlchemy types the key optional (it is absent only
    for statements that insert no row)."""
    key = result.inserted_primary_key
    if key is None:
        raise StoreError("the database returned no id for the row just inserted: the write is "
                         "not recorded; try again, and report it if it repeats")
    return int(key[0])


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino

