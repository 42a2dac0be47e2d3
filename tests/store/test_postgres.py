"""The same store and engine on a real PostgreSQL server (``STUDIO_TEST_PG_URL``).

CI starts a PostgreSQL server and sets the URL (and ``STUDIO_REQUIRE_POSTGRES=1`` so these tests
cannot be skipped there); elsewhere they are skipped when no server is configured.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from sqlalchemy import create_engine, text

from studio.engine import EvolutionConfig, build_engine, create_run, load_result, override
from studio.model.records import RunStatus
from studio.store import open_store
from studio.store import schema as tables
from studio.store.connection import resolve_url
from tests.helpers import demo_spec, trainset

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")

pytestmark = pytest.mark.skipif(
    not PG_URL and os.environ.get("STUDIO_REQUIRE_POSTGRES") != "1",
    reason="no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")


@pytest.fixture
def pg_store():
    if not PG_URL:
        pytest.fail("STUDIO_REQUIRE_POSTGRES=1 but STUDIO_TEST_PG_URL is not set")
    engine = create_engine(resolve_url(PG_URL))
    tables.metadata.drop_all(engine)
    engine.dispose()
    store = open_store(PG_URL, cached=False)
    yield store
    store.close()


def test_a_whole_run_on_postgres(pg_store):
    run = create_run(pg_store, spec=demo_spec(), trainset=trainset(4),
                     config=EvolutionConfig(max_iterations=3, seed=2))
    reason = asyncio.run(build_engine(pg_store, run.id).run())
    result = load_result(pg_store, run.id)
    assert reason == "max_iterations" and result.final_score > result.original_score
    trial = pg_store.trials(run.id)[0]
    override(trial.id, score=1.0, feedback="human", author="ana", store=pg_store)
    assert pg_store.get_trial(trial.id).effective_score == 1.0
    assert pg_store.effective_scores(run.id)[(trial.candidate_id, trial.example_id)] == 1.0
    assert pg_store.override_pairs(run.id)[0].human_score == 1.0
    assert pg_store.get_run(run.id).status is RunStatus.COMPLETED


def test_schema_version_and_migration_on_postgres():
    engine = create_engine(resolve_url(PG_URL))
    tables.metadata.drop_all(engine)
    with engine.begin() as c:
        c.execute(text("CREATE TABLE meta (key VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL)"))
        c.execute(text("INSERT INTO meta VALUES ('schema_version', '1')"))
        c.execute(text("""CREATE TABLE runs (id VARCHAR(40) PRIMARY KEY, project_id INTEGER,
            name VARCHAR(200), status VARCHAR(20) NOT NULL, config JSON NOT NULL,
            spec JSON NOT NULL, created_at TIMESTAMP NOT NULL, started_at TIMESTAMP,
            finished_at TIMESTAMP, heartbeat_at TIMESTAMP, worker VARCHAR(200),
            stop_reason TEXT, error TEXT)"""))
        c.execute(text("INSERT INTO runs VALUES ('old', NULL, 'v1', 'completed', '{}', '{}', "
                       "now(), NULL, NULL, NULL, NULL, NULL, NULL)"))
    engine.dispose()
    store = open_store(PG_URL, cached=False)
    assert store.get_run("old").name == "v1" and store.get_run("old").control is None
    with store.engine.connect() as c:
        assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
    store.close()


def test_password_never_appears_in_errors():
    from studio.model.errors import StoreError

    with pytest.raises(StoreError) as info:
        open_store("postgresql://studio:hunter2secret@127.0.0.1:1/none", cached=False)
    assert "hunter2secret" not in str(info.value)
