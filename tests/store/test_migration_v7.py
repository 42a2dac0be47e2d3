"""Version 7: ``overrides.corrected_output`` (what the answer should have been), on SQLite and,
when ``STUDIO_TEST_PG_URL`` names a server, on PostgreSQL. Older corrections read back with no
corrected output; a new one keeps it; the step is idempotent."""

from __future__ import annotations

import os
import sqlite3

import pytest
from sqlalchemy import text

from studio.engine import override
from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import empty_postgres_store
from tests.store.test_sqlite import add_trial, seed_run

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")


def test_migration_to_version_7_on_sqlite(tmp_path):
    path = tmp_path / "v6.db"
    store = open_store(f"sqlite:///{path}", cached=False)
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0])
    old = override(trial.id, score=0.2, author="ana", store=store)
    store.close()
    db = sqlite3.connect(path)
    db.executescript("""ALTER TABLE overrides DROP COLUMN corrected_output;
        UPDATE meta SET value = '6' WHERE key = 'schema_version';""")
    db.commit()
    db.close()
    for _ in range(2):  # the second open finds version 7 and changes nothing
        store = open_store(f"sqlite:///{path}", cached=False)
        assert [(o.id, o.score, o.corrected_output) for o in store.overrides(run.id)] == [
            (old.id, 0.2, None)]
        with store.engine.connect() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == \
                str(tables.SCHEMA_VERSION)
        store.close()
    store = open_store(f"sqlite:///{path}", cached=False)
    with store.engine.begin() as c:  # a step that ran half-way (or twice) is harmless
        tables.MIGRATIONS[6](c)
        tables.MIGRATIONS[6](c)
    override(trial.id, corrected_output="Fog rolls in.", author="bo", store=store)
    assert store.get_trial(trial.id).override.corrected_output == "Fog rolls in."
    assert store.get_trial(trial.id).effective_score == 0.2  # the earlier score still applies
    store.close()


@pytest.mark.skipif(not PG_URL and os.environ.get("STUDIO_REQUIRE_POSTGRES") != "1",
                    reason="no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")
def test_migration_to_version_7_on_postgres():
    if not PG_URL:
        pytest.fail("STUDIO_REQUIRE_POSTGRES=1 but STUDIO_TEST_PG_URL is not set")
    store = empty_postgres_store(PG_URL)
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0])
    old = override(trial.id, feedback="too short", author="ana", store=store)
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE overrides DROP COLUMN corrected_output"))
        c.execute(text("UPDATE meta SET value = '6' WHERE key = 'schema_version'"))
    store.close()
    for _ in range(2):  # migrated once, then found current
        store = open_store(PG_URL, cached=False)
        assert [(o.id, o.feedback, o.corrected_output) for o in store.overrides(run.id)] == [
            (old.id, "too short", None)]
        with store.engine.begin() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
            tables.MIGRATIONS[6](c)  # idempotent
        store.close()
    store = open_store(PG_URL, cached=False)
    override(trial.id, corrected_output="Harbor fog\nsoftens the cranes.", author="bo",
             store=store)
    assert store.get_trial(trial.id).override.corrected_output == \
        "Harbor fog\nsoftens the cranes."
    store.close()
