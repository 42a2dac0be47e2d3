"""A batch of more than 65,535 examples (a 100,000-example validation set) asks the store about
every one of them at once: PostgreSQL refuses a statement of more than 65,535 parameters, so
the store asks in chunks (on SQLite and, when ``STUDIO_TEST_PG_URL`` names a server, on
PostgreSQL)."""

from __future__ import annotations

import pytest

from studio.store import open_store
from tests.helpers import empty_postgres_store, postgres_url
from tests.store.test_sqlite import add_trial, seed_run

MANY = 70_000


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/large.db"
    empty_postgres_store(postgres_url()).close()
    return postgres_url()


def test_the_first_trials_and_scores_of_more_examples_than_a_statement_may_name(url):
    store = open_store(url, cached=False)
    run, examples, candidate = seed_run(store)
    trials = [add_trial(store, run, candidate, example, score=0.25 * n)
              for n, example in enumerate(examples, 1)]
    asked = [*range(10**6, 10**6 + MANY), *(e.id for e in examples)]  # the real ones last
    found = store.first_trials(candidate.id, asked)
    assert {e: t.id for e, t in found.items()} == {t.example_id: t.id for t in trials}
    pairs = {(candidate.id, t.example_id): t.score for t in trials}
    assert store.effective_scores(run.id, example_ids=asked) == pairs
    assert store.first_scores(run.id, example_ids=asked) == {
        pair: (score, score) for pair, score in pairs.items()}
    store.close()
