"""Durable store: SQLite (WAL) by default, PostgreSQL or any SQLAlchemy URL via ``STUDIO_DB_URL``.

Default location: ``~/.evolution-studio/studio.db`` (``STUDIO_HOME`` moves the folder).
"""

from __future__ import annotations

import threading

from studio.store.connection import (
    create_db_engine,
    default_db_path,
    migrate,
    resolve_url,
    safe_url,
)
from studio.store.repository import EvalRun, OverridePair, Store

__all__ = ["EvalRun", "OverridePair", "Store", "default_db_path", "open_store", "safe_url"]

_cache: dict[str, Store] = {}
_lock = threading.Lock()


def open_store(url: str | None = None, *, cached: bool = True) -> Store:
    """Open (and create or migrate) the database at ``url``.

    Raises:
        StoreError: the database cannot be opened or written; the message says how to fix it.
    """
    resolved = resolve_url(url)
    with _lock:
        if cached and resolved in _cache and _cache[resolved].file_intact():
            return _cache[resolved]
        engine = create_db_engine(resolved)
        migrate(engine, resolved)
        store = Store(engine, resolved)
        if cached:
            _cache[resolved] = store
        return store
