"""Version 11: one candidate per content hash in a run (a unique index) and ``runs.control_seq``,
on SQLite and, when ``STUDIO_TEST_PG_URL`` names a server, on PostgreSQL. Duplicates an older
studio stored keep their rows (the later copy's hash is renamed, so a lookup finds the first);
a new duplicate is refused naming the candidate it repeats; the step is idempotent."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from studio.model.errors import DuplicateCandidateError
from studio.model.records import Candidate, RunRequest
from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import empty_postgres_store, postgres_url
from tests.store.test_sqlite import seed_run

AS_VERSION_10 = ("DROP INDEX ux_candidates_run_content_hash",
                "ALTER TABLE runs DROP COLUMN control_seq",
                "UPDATE meta SET value = '10' WHERE key = 'schema_version'")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/v10.db"
    empty_postgres_store(postgres_url()).close()
    return postgres_url()


def copy_of(candidate: Candidate, index: int) -> Candidate:
    return candidate.model_copy(update={"id": None, "index": index})


def test_migration_to_version_11(url):
    store = open_store(url, cached=False)
    run, _, seed = seed_run(store)
    with store.engine.begin() as c:  # the store as version 10 left it: no unique index
        for statement in AS_VERSION_10:
            c.execute(text(statement))
    store.close()
    engine = create_engine(url)
    with engine.begin() as c:  # two equal edits that both entered the pool, as issue 32 saw
        for index in (1, 2):
            c.execute(tables.candidates.insert().values(
                run_id=run.id, idx=index, parent_ids=[seed.id], components=seed.components,
                content_hash="twin", iteration=index, pooled=True, created_at=seed.created_at))
    engine.dispose()
    for _ in range(2):  # migrated once, then found current
        store = open_store(url, cached=False)
        first = store.find_candidate(run.id, "twin")
        assert first.index == 1
        hashes = {c.index: c.content_hash for c in store.candidates(run.id)}
        assert hashes[2] == f"duplicate {store.candidates(run.id)[2].id} of {first.id}"
        assert store.get_run(run.id).control_seq == 0
        with store.engine.begin() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == \
                str(tables.SCHEMA_VERSION)
            tables.MIGRATIONS[10](c)  # idempotent
        store.close()
    store = open_store(url, cached=False)
    with pytest.raises(DuplicateCandidateError) as refused:
        store.add_candidate(copy_of(seed, 3))
    assert (refused.value.index, refused.value.candidate_id) == (0, seed.id)
    assert "already has these components as candidate #0" in str(refused.value)
    assert [c.index for c in store.candidates(run.id)] == [0, 1, 2]
    store.request_control(run.id, RunRequest.STOP)
    assert (store.get_run(run.id).control, store.get_run(run.id).control_seq) == \
        (RunRequest.STOP, 1)
    assert not store.clear_control(run.id, 0)  # read before that Stop: it is kept
    assert store.clear_control(run.id, 1) and store.get_run(run.id).control is None
    store.close()
