"""The store's SQL effective score (used by the front, acceptance's sums, the trial filters)
gives what merge_overrides gives (the trial records, reflection, exports, agreement) for any
mix of people's labels, adjudications and undos, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

import studio.store.schema as t
from studio.store import open_store
from studio.store.repos.scores import effective_score
from tests.helpers import empty_postgres_store, postgres_url
from tests.store.test_sqlite import add_trial, seed_run

LABEL = st.tuples(st.sampled_from([None, "ana", "bo", "cy"]),
                  st.sampled_from([None, 0.0, 1.0, 0.25, 0.5, 0.8]),
                  st.booleans(), st.booleans())
"""(reviewer, score, adjudicated, undone afterwards)"""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def seeded(request, tmp_path_factory):
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path_factory.mktemp('consensus')}/s.db",
                           cached=False)
    else:
        store = empty_postgres_store(postgres_url())
    run, examples, candidate = seed_run(store)
    yield store, run, examples[0], candidate
    store.close()


CASES = [
    [],
    [(None, 0.9, False, False), (None, 0.4, False, False)],  # one local person: the latest
    [("ana", 0.2, False, False), ("bo", 0.8, False, False)],  # the mean
    [("ana", 1.0, False, False), ("bo", 0.0, False, False), ("cy", 1.0, False, False)],
    [("ana", 1.0, False, False), ("bo", 0.0, False, False)],  # a tie: 0.5
    [("ana", 0.2, False, False), ("bo", 0.8, False, False), ("own", 0.7, True, False)],
    [("ana", 0.2, False, False), ("own", 0.7, True, True)],  # a withdrawn ruling
    [("ana", 0.2, False, False), ("ana", None, False, False), ("bo", 0.6, False, True)],
]


@pytest.mark.parametrize("labels", CASES)
def test_sql_and_python_agree_on_the_rule_s_cases(seeded, labels):
    if seeded[0].engine.dialect.name != "sqlite":
        pytest.skip("the PostgreSQL run is the property test's (marked slow)")
    _check(seeded, labels)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(labels=st.lists(LABEL, max_size=6))
def test_sql_and_python_read_the_same_effective_score(seeded, labels):
    _check(seeded, labels)


def _check(seeded, labels) -> None:
    store, run, example, candidate = seeded
    trial = add_trial(store, run, candidate, example, score=0.3)
    for reviewer, score, adjudicated, undone in labels:
        made = store.add_override(trial.id, score=score, feedback=None if score else "words",
                                  author=reviewer or "local", reviewer=reviewer,
                                  adjudicated=adjudicated)
        if undone:
            store.undo_override(made.id)
    with store.engine.connect() as c:
        in_sql = c.execute(select(effective_score()).where(t.trials.c.id == trial.id)).scalar()
    in_python = store.get_trial(trial.id).effective_score
    assert in_sql == pytest.approx(in_python, abs=1e-12)
