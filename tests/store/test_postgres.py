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
from studio.model.records import (
    Decision,
    DecisionAction,
    EventKind,
    MergeDetail,
    Proposal,
    ProposalKind,
    RunStatus,
)
from studio.store import open_store
from studio.store import schema as tables
from studio.store.connection import resolve_url
from tests.helpers import demo_spec, empty_postgres_store, trainset

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")

pytestmark = pytest.mark.skipif(
    not PG_URL and os.environ.get("STUDIO_REQUIRE_POSTGRES") != "1",
    reason="no PostgreSQL server configured (set STUDIO_TEST_PG_URL)")


@pytest.fixture
def pg_store():
    if not PG_URL:
        pytest.fail("STUDIO_REQUIRE_POSTGRES=1 but STUDIO_TEST_PG_URL is not set")
    store = empty_postgres_store(PG_URL)
    yield store
    store.close()


@pytest.mark.slow
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


def test_migration_to_version_5_on_postgres():
    store = _v4_store_with_one_proposal()
    old = store.get_proposal(1)
    assert old.kind is ProposalKind.REFLECTION and old.merge is None and old.text == "be brief"
    assert old.minibatch == []  # version 6: no event, no child trial to read it from
    long_key = "a_rather_long_agent_name_in_a_workflow.generate_content_config"
    merge = store.add_proposal(Proposal(
        run_id="old", iteration=2, parent_id=8, component=long_key, text="merged",
        kind=ProposalKind.MERGE, merge=MergeDetail(parents=[8, 9], ancestor=7,
                                                   sources={long_key: 9}, subsample=[1])))
    assert store.get_proposal(merge.id).merge.sources == {long_key: 9}  # over 40 characters
    with store.engine.begin() as c:
        assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
        tables.MIGRATIONS[4](c)  # idempotent
    store.close()


def test_migration_to_version_6_on_postgres(pg_store):
    """Version 5 rows get their minibatch from the latest "iteration started" event or the
    merge's subsample; decisions made then keep no evidence."""
    run = create_run(pg_store, spec=demo_spec(), trainset=trainset(2))
    a, b = (e.id for e in pg_store.examples(run.id))
    pg_store.add_event(run.id, EventKind.ITERATION_STARTED, 1, {"minibatch": [b, a]})
    reflection = pg_store.add_proposal(Proposal(run_id=run.id, iteration=1, parent_id=1,
                                                component="instruction", text="y"))
    merge = pg_store.add_proposal(Proposal(
        run_id=run.id, iteration=2, parent_id=1, component="", text="m",
        kind=ProposalKind.MERGE, merge=MergeDetail(parents=[1, 2], ancestor=1, sources={},
                                                   subsample=[a])))
    pg_store.add_decision(Decision(proposal_id=reflection.id, action=DecisionAction.REJECT))
    with pg_store.engine.begin() as c:
        c.execute(text("ALTER TABLE proposals DROP COLUMN minibatch"))
        c.execute(text("ALTER TABLE decisions DROP COLUMN evidence"))
        c.execute(text("UPDATE meta SET value = '5' WHERE key = 'schema_version'"))
    for _ in range(2):  # migrated once, then found current
        store = open_store(PG_URL, cached=False)
        assert store.get_proposal(reflection.id).minibatch == [b, a]
        assert store.get_proposal(merge.id).minibatch == [a]
        assert store.decisions(proposal_id=reflection.id)[0].evidence is None
        with store.engine.begin() as c:
            tables.MIGRATIONS[5](c)  # idempotent
        store.close()


def _v4_store_with_one_proposal():
    """A database as version 4 left it, with one proposal, reopened (and so migrated)."""
    engine = create_engine(resolve_url(PG_URL))
    tables.metadata.drop_all(engine)
    engine.dispose()
    open_store(PG_URL, cached=False).close()
    engine = create_engine(resolve_url(PG_URL))
    with engine.begin() as c:
        c.execute(text("ALTER TABLE proposals DROP COLUMN kind, DROP COLUMN merge, "
                       "ALTER COLUMN component TYPE VARCHAR(40)"))
        c.execute(text("INSERT INTO runs (id, name, status, config, spec, created_at) "
                       "VALUES ('old', '', 'completed', '{}', '{}', now())"))
        c.execute(text("INSERT INTO proposals (id, run_id, iteration, parent_id, component, "
                       "text, reasoning, status, created_at) VALUES (1, 'old', 1, 7, "
                       "'instruction', 'be brief', '', 'accepted', now())"))
        c.execute(text("SELECT setval('proposals_id_seq', 1)"))
        c.execute(text("UPDATE meta SET value = '4' WHERE key = 'schema_version'"))
    engine.dispose()
    return open_store(PG_URL, cached=False)


def test_password_never_appears_in_errors():
    from studio.model.errors import StoreError

    with pytest.raises(StoreError) as info:
        open_store("postgresql://studio:hunter2secret@127.0.0.1:1/none", cached=False)
    assert "hunter2secret" not in str(info.value)
