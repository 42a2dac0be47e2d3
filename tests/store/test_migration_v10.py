"""Version 10: users, review settings, and on overrides the reviewer, the adjudication flag and
dimension scores, on SQLite and, when ``STUDIO_TEST_PG_URL`` names a server, on PostgreSQL.
Older corrections read back as the local studio's one person (no reviewer, not adjudicated),
so their effective score is what it was; the step is idempotent."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from studio.model.team import ReviewSettings, Role
from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import empty_postgres_store, postgres_url
from tests.store.test_sqlite import add_trial, seed_run

DROPPED = ("DROP TABLE users", "DROP TABLE review_settings",
           "ALTER TABLE overrides DROP COLUMN reviewer",
           "ALTER TABLE overrides DROP COLUMN adjudicated",
           "ALTER TABLE overrides DROP COLUMN dimensions",
           "UPDATE meta SET value = '9' WHERE key = 'schema_version'")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/v9.db"
    empty_postgres_store(postgres_url()).close()
    return postgres_url()


def test_migration_to_version_10(url):
    store = open_store(url, cached=False)
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0], score=0.2)
    store.add_override(trial.id, score=0.9, feedback=None, author="ana")
    store.add_override(trial.id, score=0.4, feedback=None, author="bo")
    with store.engine.begin() as c:  # the store as version 9 left it
        for statement in DROPPED:
            c.execute(text(statement))
    store.close()
    for _ in range(2):  # migrated once, then found current
        store = open_store(url, cached=False)
        old = store.overrides(run.id)
        assert [(o.reviewer, o.adjudicated, o.dimensions) for o in old] == [(None, False, None)] * 2
        assert store.get_trial(trial.id).effective_score == 0.4  # as before: one person
        assert store.effective_scores(run.id)[(candidate.id, examples[0].id)] == 0.4
        with store.engine.begin() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
            tables.MIGRATIONS[9](c)  # idempotent
        store.close()
    store = open_store(url, cached=False)
    assert store.user_count() == 0
    store.save_user("olga@example.com", Role.OWNER)
    store.save_review_settings(ReviewSettings(project="test", reviewers_per_trial=2, blind=True))
    store.add_override(trial.id, score=1.0, feedback=None, author="cy", reviewer="cy",
                       dimensions={"structure": 0.5})
    store.add_override(trial.id, score=0.6, feedback=None, author="olga", adjudicated=True)
    assert store.get_user("olga@example.com").role is Role.OWNER
    assert store.review_settings("test").blind
    assert store.get_trial(trial.id).effective_score == 0.6
    assert store.overrides(run.id)[-2].dimensions == {"structure": 0.5}
    store.close()
