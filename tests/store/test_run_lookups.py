"""Runs found by what they show, however many newer runs the store holds: a run's forks
(Compare) and its critic's align runs (Agreement) are found by an indexed query, not by
scanning the newest runs; version 12 copies the sources of older runs into the columns that
find them, on SQLite and, when ``STUDIO_TEST_PG_URL`` names a server, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import bindparam, text

from studio.engine import create_run, fork
from studio.engine.people.labels import relabel_align_runs
from studio.model.records import AlignOrigin, Candidate, CriticSpec, Run, content_hash
from studio.projects.aligning import align_runs
from studio.projects.forking import forks_of
from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import BASE_INSTRUCTION, demo_spec, empty_postgres_store, postgres_url, trainset
from tests.store.test_sqlite import add_trial

NEWER = 5_001
"""More runs than any scan looked through (the newest 500 for forks, 5,000 for align runs)."""


def source_run(store, **fields) -> Run:
    run = create_run(store, spec=demo_spec(), trainset=trainset(1), **fields)
    components = {"instruction": BASE_INSTRUCTION}
    store.add_candidate(Candidate(run_id=run.id, index=0, components=components,
                                  content_hash=content_hash(components), pooled=True))
    return run


def align_run(store, source: Run, labels: tuple[int, ...] = (1,)) -> Run:
    origin = AlignOrigin(run_id=source.id, critic=CriticSpec(), target="instruction",
                         label_trial_ids=list(labels), held_out_trial_ids=[])
    spec = source.spec.model_copy(update={"aligns": origin})
    return store.create_run(Run(id=f"align-{source.id}", project_id=source.project_id,
                                config=source.config, spec=spec))


def newer_runs(store, like: Run, count: int = NEWER) -> None:
    """``count`` copies of ``like`` made an hour after it, without its fork or align source,
    in one statement (written in SQL: thousands of rows in a test's time)."""
    columns = "project_id, name, status, config, spec, build_tries"
    statement = text(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count) "
        f"INSERT INTO runs (id, created_at, {columns}) "
        f"SELECT 'newer-' || i, :later, {columns} FROM n, runs WHERE runs.id = :like"
    ).bindparams(bindparam("later", type_=tables.runs.c.created_at.type))
    with store.engine.begin() as c:
        c.execute(statement, {"count": count, "like": like.id,
                              "later": like.created_at + timedelta(hours=1)})


def test_the_forks_of_a_run_are_all_found_however_many_runs_came_after(store):
    source = source_run(store)
    first, second = fork(store, source.id, 0), fork(store, source.id, 0)
    newer_runs(store, source)
    assert [r.id for r in forks_of(store, source.id)] == [first.id, second.id]  # oldest first
    assert forks_of(store, first.id) == []


def test_the_align_runs_of_a_critic_are_all_found_however_many_runs_came_after(store):
    project = store.save_project("judged", "name: judged\n")
    source = source_run(store, project_id=project.id)
    aligned = align_run(store, source)
    newer_runs(store, source)
    assert [r.id for r in align_runs(store, source.id)] == [aligned.id]
    assert align_runs(store, aligned.id) == []


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/v9.db"
    empty_postgres_store(postgres_url()).close()
    return postgres_url()


DROPPED = ("DROP INDEX ix_runs_created_at", "DROP INDEX ix_runs_project_created",
           "DROP INDEX ix_runs_status", "DROP INDEX ix_proposals_status",
           "DROP INDEX ix_runs_forked_from", "DROP INDEX ix_runs_aligns",
           "ALTER TABLE runs DROP COLUMN forked_from_run",
           "ALTER TABLE runs DROP COLUMN aligns_run",
           "UPDATE meta SET value = '11' WHERE key = 'schema_version'")


def test_migration_to_version_12_finds_the_forks_and_align_runs_made_before_it(url):
    store = open_store(url, cached=False)
    source = source_run(store)
    child, aligned = fork(store, source.id, 0), align_run(store, source)
    with store.engine.begin() as c:  # the store as version 11 left it
        for statement in DROPPED:
            c.execute(text(statement))
    store.close()
    for _ in range(2):  # migrated once, then found current
        store = open_store(url, cached=False)
        assert [r.id for r in forks_of(store, source.id)] == [child.id]
        assert [r.id for r in align_runs(store, source.id)] == [aligned.id]
        with store.engine.begin() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
            tables.MIGRATIONS[11](c)  # idempotent
        store.close()


def test_a_correction_relabels_the_align_runs_that_learn_from_it_however_old(store):
    """:func:`relabel_align_runs` (called by every correction) finds them by query too: it
    scanned the newest 200 runs of the source's project."""
    project = store.save_project("judged", "name: judged\n")
    source = source_run(store, project_id=project.id)
    [example] = store.examples(source.id)
    [seed] = store.candidates(source.id)
    trial = add_trial(store, source, seed, example)
    aligned = align_run(store, source, labels=[trial.id])
    newer_runs(store, source, 201)
    assert relabel_align_runs(store, trial.id) == [aligned.id]
