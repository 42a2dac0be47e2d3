"""Version 9: ``proposals.cost_usd`` (the reflection's price), on SQLite and, when
``STUDIO_TEST_PG_URL`` names a server, on PostgreSQL. Older proposals read back as costing 0;
a priced proposal counts in the run's cost beside its trials; the step is idempotent."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from studio.model.records import Proposal
from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import empty_postgres_store, postgres_url
from tests.store.test_sqlite import add_trial, seed_run

DROPPED = ("ALTER TABLE proposals DROP COLUMN cost_usd",
           "UPDATE meta SET value = '8' WHERE key = 'schema_version'")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/v8.db"
    empty_postgres_store(postgres_url()).close()
    return postgres_url()


def proposal(run, candidate, cost_usd: float = 0.0) -> Proposal:
    return Proposal(run_id=run.id, iteration=1, parent_id=candidate.id,
                    component="instruction", text="y", cost_usd=cost_usd)


def test_migration_to_version_9(url):
    store = open_store(url, cached=False)
    run, examples, candidate = seed_run(store)
    add_trial(store, run, candidate, examples[0], cost_usd=0.5)
    old = store.add_proposal(proposal(run, candidate))
    with store.engine.begin() as c:  # the store as version 8 left it
        for statement in DROPPED:
            c.execute(text(statement))
    store.close()
    for _ in range(2):  # migrated once, then found current
        store = open_store(url, cached=False)
        assert store.get_proposal(old.id).cost_usd == 0.0
        assert store.run_costs([run.id]) == {run.id: 0.5}
        with store.engine.begin() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
            tables.MIGRATIONS[8](c)  # idempotent
        store.close()
    store = open_store(url, cached=False)
    priced = store.add_proposal(proposal(run, candidate, cost_usd=0.25))
    assert store.get_proposal(priced.id).cost_usd == 0.25
    assert store.run_costs([run.id, "no-such-run"]) == {run.id: 0.75, "no-such-run": 0.0}
    store.close()
