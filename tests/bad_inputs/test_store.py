"""The store never loses data: interrupted migrations, damaged files, a database deleted or
replaced mid-run, and critic values that are not numbers (SQLite and PostgreSQL)."""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import uuid

import pytest
from sqlalchemy import delete

from studio.engine import EvolutionConfig, build_engine, create_run
from studio.engine.hosting.worker import get_manager
from studio.model.errors import StoreError
from studio.model.feedback import Feedback
from studio.model.records import Candidate, RunStatus, Split, Trial, TrialPhase
from studio.store import open_store
from studio.store import schema as tables
from tests.helpers import demo_spec, trainset, wait_until

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")


def saved_run(store) -> str:
    """A completed-looking run with examples, so a test can check nothing of it was lost."""
    run = create_run(store, spec=demo_spec(), trainset=trainset(3),
                     config=EvolutionConfig(max_iterations=1), name="keep me")
    return run.id


def make_version_1(path) -> None:
    """Turn a fresh database into one written by version 1 (no ``runs.control``)."""
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE runs DROP COLUMN control")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")


def version_of(path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]


# ---------------------------------------------------------------------------- migrations


def test_a_migration_interrupted_before_its_version_bump_reopens_at_the_right_version(tmp_path):
    path = tmp_path / "old.db"
    run_id = saved_run(open_store(f"sqlite:///{path}", cached=False))
    make_version_1(path)
    with sqlite3.connect(path) as db:  # the disk fills up right after ALTER TABLE
        db.execute("CREATE TRIGGER full_disk BEFORE UPDATE ON meta "
                   "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")

    with pytest.raises(StoreError, match="is full") as failed:
        open_store(f"sqlite:///{path}", cached=False)
    assert "old.db" in str(failed.value) and "rolled back" in str(failed.value)
    assert version_of(path) == "1"  # the ALTER TABLE was rolled back with it

    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER full_disk")
    store = open_store(f"sqlite:///{path}", cached=False)
    assert version_of(path) == str(tables.SCHEMA_VERSION)
    assert store.get_run(run_id).name == "keep me" and store.get_run(run_id).control is None
    assert len(store.examples(run_id)) == 3


def test_a_database_half_upgraded_by_an_older_studio_still_opens(tmp_path):
    """The column exists but the version says 1 (what the non-transactional upgrade left)."""
    path = tmp_path / "half.db"
    run_id = saved_run(open_store(f"sqlite:///{path}", cached=False))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store = open_store(f"sqlite:///{path}", cached=False)
    assert version_of(path) == str(tables.SCHEMA_VERSION)
    assert store.get_run(run_id).name == "keep me"


# ---------------------------------------------------------------------------- damaged files


def _text(path):
    path.write_text("name,topic\nnot,a database\n")


def _random(path):
    path.write_bytes(os.urandom(8192))


def _truncated(path):
    store = open_store(f"sqlite:///{path}", cached=False)
    for _ in range(30):
        saved_run(store)
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _header(path):
    store = open_store(f"sqlite:///{path}", cached=False)
    saved_run(store)
    store.close()
    data = bytearray(path.read_bytes())
    data[:100] = b"\xff" * 100
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_text, _random, _truncated, _header],
                         ids=["csv-renamed-to-db", "random-bytes", "truncated", "header-wiped"])
def test_a_damaged_database_file_gives_a_store_error_naming_the_file(tmp_path, damage):
    path = tmp_path / "studio.db"
    damage(path)
    before = path.read_bytes()
    with pytest.raises(StoreError) as failed:
        store = open_store(f"sqlite:///{path}", cached=False)
        for run in store.list_runs():  # a truncated file may open and fail on its first read
            store.examples(run.id)
    message = str(failed.value)
    assert str(path) in message and "damaged" in message and "backup" in message
    assert path.read_bytes() == before  # the studio never wrote over the damaged file


# ---------------------------------------------------------------------------- deleted mid-run


def slow_world(script):
    from studio.runtime.providers.demo import critique

    def reply(request):
        if "## Component Text to Improve" in request.prompt_text:
            return "Write a haiku about the topic. Rule: three lines."
        if request.json_schema:
            return critique(request.last_user, request.json_schema["properties"])
        return "autumn drifts\nglowing light\nthen still"
    return script(f"slow_{uuid.uuid4().hex[:6]}", reply, latency_s=0.04)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_database_deleted_or_replaced_mid_run_stops_the_run_with_an_error(
        tmp_path, script, how):
    path = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{path}", cached=False)
    run = create_run(store, spec=demo_spec(slow_world(script)), trainset=trainset(5),
                     config=EvolutionConfig(max_iterations=50))
    handle = get_manager(store).start(build_engine(store, run.id))
    wait_until(lambda: store.count_trials(run.id) >= 2, message="the run stores trials")

    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / f"studio.db{suffix}").unlink(missing_ok=True)
    else:
        other = tmp_path / "other.db"
        open_store(f"sqlite:///{other}", cached=False).close()
        shutil.move(other, path)

    wait_until(lambda: not handle.running, message="the run stops")
    with pytest.raises(StoreError) as failed:
        handle.wait()
    message = str(failed.value)
    assert str(path) in message and f"was {how}" in message and "backup" in message
    with pytest.raises(StoreError, match=f"was {how}"):  # never reported as done
        store.get_run(run.id)
    reopened = open_store(f"sqlite:///{path}", cached=False)
    assert all(r.status is not RunStatus.COMPLETED for r in reopened.list_runs())


# ---------------------------------------------------------------------------- NaN and Infinity


def nan_trial(store) -> Trial:
    run = create_run(store, spec=demo_spec(), trainset=trainset(1),
                     config=EvolutionConfig(max_iterations=1), name=f"nan-{uuid.uuid4().hex}")
    example = store.examples(run.id)[0]
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0,
                                              components={"instruction": "x"}, content_hash="h"))
    feedback = Feedback(score=math.nan, text="fine", dimensions={"clarity": math.inf},
                        extra={"confidence": -math.inf})
    return store.add_trial(Trial(
        run_id=run.id, candidate_id=candidate.id, example_id=example.id, split=Split.TRAIN,
        example_index=0, phase=TrialPhase.VALSET, output="a haiku", score=math.nan,
        feedback=feedback, trace={"latency": math.nan}))


def assert_stored_as_could_not_evaluate(store, trial: Trial) -> None:
    stored = store.get_trial(trial.id)
    assert stored.score is None and stored.feedback.score is None
    reason = stored.feedback.extra["error"]
    assert "could not evaluate" in reason and "score = nan" in reason
    assert "feedback.dimensions.clarity = inf" in reason
    assert stored.output == "a haiku" and stored.feedback.text == "fine"
    assert stored.trace["latency"] is None


def test_nan_and_infinity_from_a_critic_are_stored_as_could_not_evaluate_on_sqlite(store):
    assert_stored_as_could_not_evaluate(store, nan_trial(store))


@pytest.mark.skipif(not PG_URL, reason="no PostgreSQL server configured (STUDIO_TEST_PG_URL)")
def test_nan_and_infinity_from_a_critic_are_stored_as_could_not_evaluate_on_postgres():
    store = open_store(PG_URL, cached=False)
    trial = nan_trial(store)
    try:
        assert_stored_as_could_not_evaluate(store, trial)
    finally:
        with store.engine.begin() as c:
            c.execute(delete(tables.runs).where(tables.runs.c.id == trial.run_id))
        store.close()
