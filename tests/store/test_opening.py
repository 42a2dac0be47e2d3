"""Opening a store: one written by a newer studio is refused, and processes creating one new
SQLite file at once all succeed."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from studio.model.errors import StoreError
from studio.store import open_store
from studio.store.schema import SCHEMA_VERSION
from tests.helpers import wait_until

REPO = Path(__file__).parents[2]


def stored_version(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]


def set_version(path: Path, value: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))


def test_a_store_from_a_newer_studio_is_refused_naming_both_versions(tmp_path):
    path = tmp_path / "newer.db"
    open_store(f"sqlite:///{path}", cached=False).close()
    set_version(path, str(SCHEMA_VERSION + 3))
    with pytest.raises(StoreError) as refused:
        open_store(f"sqlite:///{path}", cached=False)
    message = str(refused.value)
    assert f"schema version {SCHEMA_VERSION + 3}, newer than this studio's {SCHEMA_VERSION}" \
        in message and "Upgrade the studio" in message
    assert stored_version(path) == str(SCHEMA_VERSION + 3)  # nothing was changed


def test_a_store_whose_version_is_not_a_number_is_refused_clearly(tmp_path):
    path = tmp_path / "garbled.db"
    open_store(f"sqlite:///{path}", cached=False).close()
    set_version(path, "5-beta")
    with pytest.raises(StoreError, match=r"schema version '5-beta' .* is not a number"):
        open_store(f"sqlite:///{path}", cached=False)


OPENER = """
import sys
import time
from pathlib import Path
from studio.store import open_store
db, ready, go = sys.argv[1:]
Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.0005)  # the four must reach open_store within a millisecond of each other
try:
    open_store("sqlite:///" + db, cached=False).close()
    print("opened")
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


@pytest.mark.slow
def test_four_processes_creating_one_new_store_at_once_all_succeed(tmp_path):
    """Each reads (no tables yet), then creates: a reader that turns writer after another
    process wrote is refused by SQLite at once, which read as "holds a write lock"."""
    db, go = tmp_path / "new.db", tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(4)]
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(db), str(flag), str(go)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True) for flag in ready]
    try:
        wait_until(lambda: all(flag.exists() for flag in ready), timeout=120,
                   message="the four processes have imported the studio")
        go.touch()
        outputs = [opener.communicate(timeout=120)[0].strip() for opener in openers]
    finally:
        for opener in openers:
            opener.kill()
            opener.wait()
    assert outputs == ["opened"] * 4
    assert stored_version(db) == str(SCHEMA_VERSION)


def test_opening_waits_for_a_writer_that_holds_the_lock_past_the_busy_timeout(
        tmp_path, monkeypatch, caplog):
    """Another process creating the file's tables holds its write lock longer than SQLite's
    busy timeout (a slow disk): the opening is tried again, as every store call is, instead
    of failing with "database is locked"."""
    import studio.store.connection as connection

    monkeypatch.setattr(connection, "SQLITE_BUSY_SECONDS", 0.05)
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE unrelated (id INTEGER)")
    released = threading.Event()

    def release_when_refused_once() -> None:  # the lock outlives at least one refusal
        wait_until(lambda: "is locked" in caplog.text, timeout=30,
                   message="the opening is refused once and waits")
        holder.execute("COMMIT")
        holder.close()
        released.set()

    releaser = threading.Thread(target=release_when_refused_once)
    with caplog.at_level(logging.WARNING, logger="studio.store.connection"):
        releaser.start()
        store = open_store(f"sqlite:///{path}", cached=False)
    releaser.join()
    assert released.is_set()
    store.close()
    assert stored_version(path) == str(SCHEMA_VERSION)
