"""Version 8: ``trials.cost_usd`` and the runs' build tries, on SQLite and, when
``STUDIO_TEST_PG_URL`` names a server, on PostgreSQL. Older trials read back as costing 0 and
older runs as never given back; the step is idempotent."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import empty_postgres_store, postgres_url
from tests.store.test_sqlite import add_trial, seed_run

DROPPED = ("ALTER TABLE trials DROP COLUMN cost_usd", "ALTER TABLE runs DROP COLUMN build_tries",
           "ALTER TABLE runs DROP COLUMN build_error",
           "ALTER TABLE runs DROP COLUMN build_tries_max",
           "UPDATE meta SET value = '7' WHERE key = 'schema_version'")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/v7.db"
    empty_postgres_store(postgres_url()).close()
    return postgres_url()


def test_migration_to_version_8(url):
    store = open_store(url, cached=False)
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0])
    with store.engine.begin() as c:  # the store as version 7 left it
        for statement in DROPPED:
            c.execute(text(statement))
    store.close()
    for _ in range(2):  # migrated once, then found current
        store = open_store(url, cached=False)
        assert store.get_trial(trial.id).cost_usd == 0.0
        assert store.candidate_costs(run.id) == {candidate.id: 0.0}
        old = store.get_run(run.id)
        assert (old.build_tries, old.build_error, old.waiting_note) == (0, None, "")
        with store.engine.begin() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
            tables.MIGRATIONS[7](c)  # idempotent
        store.close()
    store = open_store(url, cached=False)
    priced = add_trial(store, run, candidate, examples[1], cost_usd=0.25)
    assert store.get_trial(priced.id).cost_usd == 0.25
    assert store.run_costs([run.id]) == {run.id: 0.25}
    store.close()
