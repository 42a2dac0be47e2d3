"""The durable store: records, overrides, schema version and migration, failure messages."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest
from sqlalchemy import text

from studio.model.errors import ConfigError, NotFoundError, StoreError
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    EventKind,
    MergeDetail,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Run,
    RunStatus,
    Split,
    Trial,
    TrialPhase,
)
from studio.store import open_store
from studio.store import schema as tables
from studio.store.connection import resolve_url
from studio.store.schema import SCHEMA_VERSION


def seed_run(store, run_id="r1", spec=None):
    run = store.create_run(Run(id=run_id, name="test", spec=spec or {"critic": {"name": "c"}}))
    assert store.add_examples(run.id, Split.TRAIN, [{"topic": "a"}, {"topic": "b"}]) == 2
    examples = store.examples(run.id)
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0,
                                              components={"instruction": "x"}, content_hash="h"))
    return run, examples, candidate


def add_trial(store, run, candidate, example, score=0.5, **extra):
    return store.add_trial(Trial(run_id=run.id, candidate_id=candidate.id, example_id=example.id,
                                 split=Split.TRAIN, example_index=example.index,
                                 phase=TrialPhase.VALSET, score=score,
                                 feedback={"feedback": "judge says"}, **extra))


def test_sqlite_uses_wal_and_records_the_schema_version(store):
    with store.engine.connect() as c:
        assert c.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        version = c.execute(text("SELECT value FROM meta WHERE key='schema_version'")).scalar()
    assert int(version) == SCHEMA_VERSION


def test_trials_are_committed_and_visible_to_another_connection(store, tmp_path):
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0])
    other = sqlite3.connect(tmp_path / "studio.db")
    assert other.execute("SELECT score FROM trials WHERE id=?", (trial.id,)).fetchone() == (0.5,)


def test_override_keeps_the_judge_values_and_undo_restores_them(store):
    run, examples, candidate = seed_run(store)
    trial = add_trial(store, run, candidate, examples[0], score=0.2)
    first = store.add_override(trial.id, score=0.9, feedback="actually good", author="ana")
    assert (first.judge_score, first.judge_feedback, first.author) == (0.2, "judge says", "ana")
    second = store.add_override(trial.id, score=0.7, feedback=None, author="bo")
    read = store.get_trial(trial.id)
    # each field keeps its latest active value: bo's score, ana's feedback
    assert read.effective_score == 0.7 and read.effective_feedback == "actually good"
    store.undo_override(second.id)
    assert store.get_trial(trial.id).effective_score == 0.9
    store.undo_override(first.id)
    assert store.get_trial(trial.id).effective_score == 0.2
    assert len(store.overrides(run.id)) == 2  # history is kept


def test_trials_after_id_and_without_trace(store):
    run, examples, candidate = seed_run(store)
    ids = [add_trial(store, run, candidate, examples[i % 2], trace={"big": "x"}).id
           for i in range(4)]
    newer = store.trials(run.id, after_id=ids[1], with_trace=False)
    assert [t.id for t in newer] == ids[2:] and newer[0].trace == {}


def test_proposals_decisions_events_and_checkpoints(store):
    run, examples, candidate = seed_run(store)
    proposal = store.add_proposal(Proposal(run_id=run.id, iteration=1, parent_id=candidate.id,
                                           component="instruction", text="y"))
    store.update_proposal(proposal.id, status=ProposalStatus.PENDING)
    assert store.proposals(run.id, status="pending")[0].id == proposal.id
    store.add_decision(Decision(proposal_id=proposal.id, action=DecisionAction.REJECT,
                                reason="too long"))
    assert store.decisions(run.id)[0].reason == "too long"
    store.add_event(run.id, "progress", 1, {"best_score": 0.5})
    assert store.latest_event(run.id, "progress").payload == {"best_score": 0.5}
    store.save_checkpoint(run.id, 1, {"iteration": 1})
    store.save_checkpoint(run.id, 2, {"iteration": 2})
    assert store.load_checkpoint(run.id) == (2, {"iteration": 2})


def test_waiting_proposals_are_the_latest_undecided_pending_one_per_run(store):
    run, _, candidate = seed_run(store)
    other, _, other_candidate = seed_run(store, run_id="r2")
    quiet, _, quiet_candidate = seed_run(store, run_id="r3")

    def proposal(run_id, parent_id, status):
        added = store.add_proposal(Proposal(run_id=run_id, iteration=1, parent_id=parent_id,
                                            component="instruction", text="y"))
        return store.update_proposal(added.id, status=status)

    proposal(run.id, candidate.id, ProposalStatus.PENDING)
    latest = proposal(run.id, candidate.id, ProposalStatus.PENDING)
    decided = proposal(other.id, other_candidate.id, ProposalStatus.PENDING)
    store.add_decision(Decision(proposal_id=decided.id, action=DecisionAction.ACCEPT))
    proposal(quiet.id, quiet_candidate.id, ProposalStatus.EVALUATING)
    waiting = store.waiting_proposals()
    assert {run_id: p.id for run_id, p in waiting.items()} == {run.id: latest.id}


def test_override_pairs_name_the_critic(store):
    run, examples, candidate = seed_run(store, spec={"critic": {"name": "haiku_critic"}})
    trial = add_trial(store, run, candidate, examples[0], score=0.3)
    store.add_override(trial.id, score=0.8, feedback=None, author="ana")
    pair = store.override_pairs()[0]
    assert (pair.critic, pair.judge_score, pair.human_score) == ("haiku_critic", 0.3, 0.8)


def test_api_keys_are_never_stored(store, monkeypatch):
    secret = "sk-proj-0123456789abcdefghijkl"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    store.create_run(Run(id="k1", spec={"agent": {"instruction": f"call with {secret}"}}))
    run, examples, candidate = seed_run(store, run_id="k2")
    add_trial(store, run, candidate, examples[0], error=f"auth failed for {secret}")
    store.update_run("k2", error=f"failed with {secret}")
    with store.engine.connect() as c:
        dump = "".join(str(row) for table in ("runs", "trials")
                       for row in c.execute(text(f"SELECT * FROM {table}")))
    assert secret not in dump


def test_projects_and_duplicate_names(store):
    project = store.save_project("haiku", "name: haiku")
    assert store.find_project("haiku").id == project.id
    with pytest.raises(ConfigError, match="already exists"):
        store.save_project("haiku", "name: haiku")
    with pytest.raises(NotFoundError, match="project 999 does not exist"):
        store.get_project(999)


def test_orphans_are_detected_by_heartbeat(store):
    from datetime import timedelta

    from studio.model.records import utcnow

    store.create_run(Run(id="o1", status=RunStatus.RUNNING,
                         created_at=utcnow() - timedelta(minutes=5)))
    store.update_run("o1", heartbeat_at=utcnow() - timedelta(minutes=1), worker="dead:1:x")
    assert store.mark_orphans(stale_after_s=10) == ["o1"]
    assert store.get_run("o1").status is RunStatus.ORPHANED
    assert store.claim_run("o1", "me:2:y", stale_after_s=10)


def test_migration_from_version_1_keeps_data(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta (key VARCHAR(64) PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE runs (id VARCHAR(40) PRIMARY KEY, project_id INTEGER, name VARCHAR(200),
            status VARCHAR(20) NOT NULL, config JSON NOT NULL, spec JSON NOT NULL,
            created_at DATETIME NOT NULL, started_at DATETIME, finished_at DATETIME,
            heartbeat_at DATETIME, worker VARCHAR(200), stop_reason TEXT, error TEXT);
        INSERT INTO runs VALUES ('old', NULL, 'from v1', 'completed', '{}', '{}',
            '2026-01-01 00:00:00', NULL, NULL, NULL, NULL, NULL, NULL);
    """)
    db.commit()
    db.close()
    store = open_store(f"sqlite:///{path}", cached=False)
    run = store.get_run("old")
    assert run.name == "from v1" and run.control is None
    with store.engine.connect() as c:
        assert c.execute(text("SELECT value FROM meta")).scalar() == str(SCHEMA_VERSION)


V4_PROPOSALS = """CREATE TABLE proposals (id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id VARCHAR(40) NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    iteration INTEGER NOT NULL, parent_id INTEGER NOT NULL, component VARCHAR(40) NOT NULL,
    text TEXT NOT NULL, reasoning TEXT NOT NULL, status VARCHAR(12) NOT NULL, child_id INTEGER,
    edited_from INTEGER, invalid_reason TEXT, created_at DATETIME NOT NULL,
    decided_at DATETIME)"""


def test_migration_to_version_5_keeps_old_proposals_readable_as_reflections(tmp_path):
    path = tmp_path / "v4.db"
    store = open_store(f"sqlite:///{path}", cached=False)
    store.create_run(Run(id="old"))
    store.close()
    db = sqlite3.connect(path)
    db.executescript(f"""DROP TABLE proposals; {V4_PROPOSALS};
        INSERT INTO proposals VALUES (1, 'old', 1, 7, 'instruction', 'be brief', '',
            'accepted', 8, NULL, NULL, '2026-01-01 00:00:00', NULL);
        UPDATE meta SET value = '4' WHERE key = 'schema_version';""")
    db.commit()
    db.close()
    for _ in range(2):  # the second open finds version 5 and changes nothing
        store = open_store(f"sqlite:///{path}", cached=False)
        old = store.get_proposal(1)
        assert old.kind is ProposalKind.REFLECTION and old.merge is None
        assert old.text == "be brief" and old.status is ProposalStatus.ACCEPTED
        with store.engine.connect() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(SCHEMA_VERSION)
        store.close()
    store = open_store(f"sqlite:///{path}", cached=False)
    merge = store.add_proposal(Proposal(
        run_id="old", iteration=2, parent_id=8, component="", text="merge of #1 and #2",
        kind=ProposalKind.MERGE, merge=MergeDetail(parents=[8, 9], ancestor=7,
                                                   sources={"writer.instruction": 8},
                                                   subsample=[3])))
    assert store.get_proposal(merge.id).merge.sources == {"writer.instruction": 8}
    assert [p.id for p in store.proposals("old", kind=ProposalKind.MERGE)] == [merge.id]
    with store.engine.begin() as c:  # a step that ran half-way (or twice) is harmless
        tables.MIGRATIONS[4](c)
    store.close()


def test_migration_to_version_6_gives_older_proposals_their_minibatch(tmp_path):
    """A version 5 database: no ``proposals.minibatch``, no ``decisions.evidence``. Its
    proposals get their minibatch once: a merge's subsample, the iteration's "iteration
    started" event (the latest), or else the examples the child was scored on."""
    path = tmp_path / "v5.db"
    store = open_store(f"sqlite:///{path}", cached=False)
    run, examples, candidate = seed_run(store)
    a, b = (e.id for e in examples)
    store.add_event(run.id, EventKind.ITERATION_STARTED, 1, {"minibatch": [b]})
    store.add_event(run.id, EventKind.ITERATION_STARTED, 1, {"minibatch": [a, b]})  # resumed
    started = store.add_proposal(Proposal(run_id=run.id, iteration=1, parent_id=candidate.id,
                                          component="instruction", text="y"))
    scored = store.add_proposal(Proposal(run_id=run.id, iteration=2, parent_id=candidate.id,
                                         component="instruction", text="z"))
    store.add_trial(Trial(run_id=run.id, candidate_id=candidate.id, example_id=b,
                          split=Split.TRAIN, example_index=1, phase=TrialPhase.CHILD,
                          proposal_id=scored.id, score=0.5))
    merge = store.add_proposal(Proposal(
        run_id=run.id, iteration=3, parent_id=candidate.id, component="", text="m",
        kind=ProposalKind.MERGE, merge=MergeDetail(parents=[1, 2], ancestor=candidate.id,
                                                   sources={}, subsample=[b, a])))
    decision = store.add_decision(Decision(proposal_id=scored.id, author="ana",
                                           action=DecisionAction.REJECT))
    store.close()
    db = sqlite3.connect(path)
    db.executescript("""ALTER TABLE proposals DROP COLUMN minibatch;
        ALTER TABLE decisions DROP COLUMN evidence;
        UPDATE meta SET value = '5' WHERE key = 'schema_version';""")
    db.commit()
    db.close()
    for _ in range(2):  # the second open finds version 6 and changes nothing
        store = open_store(f"sqlite:///{path}", cached=False)
        assert [store.get_proposal(p.id).minibatch for p in (started, scored, merge)] == [
            [a, b], [b], [b, a]]
        assert store.decisions(proposal_id=scored.id)[0].evidence is None
        assert store.decisions(proposal_id=scored.id)[0].id == decision.id
        with store.engine.connect() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(SCHEMA_VERSION)
        store.close()
    store = open_store(f"sqlite:///{path}", cached=False)
    with store.engine.begin() as c:  # a step that ran half-way (or twice) is harmless
        tables.MIGRATIONS[5](c)
        tables.MIGRATIONS[5](c)
    assert store.get_proposal(started.id).minibatch == [a, b]
    store.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_database_file_gives_a_clear_error(tmp_path):
    path = tmp_path / "ro.db"
    open_store(f"sqlite:///{path}", cached=False).close()
    path.chmod(stat.S_IRUSR)
    with pytest.raises(StoreError, match="not writable"):
        open_store(f"sqlite:///{path}", cached=False)


def test_database_that_cannot_be_created_even_by_root():
    with pytest.raises(StoreError, match=r"/proc.*(not writable|unable to open)"):
        open_store("sqlite:////proc/studio-test.db", cached=False)


def test_unwritable_folder_gives_a_clear_error(tmp_path, monkeypatch):
    import studio.store.connection as connection

    monkeypatch.setattr(connection.os, "access", lambda path, mode: False)
    with pytest.raises(StoreError, match="not writable"):
        open_store(f"sqlite:///{tmp_path}/sub/x.db", cached=False)


def test_folder_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create the folder"):
        open_store(f"sqlite:///{blocker}/studio.db", cached=False)


def test_locked_database_gives_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "locked.db"
    store = open_store(f"sqlite:///{path}", cached=False)
    import studio.store.connection as connection

    monkeypatch.setenv("STUDIO_DB_RETRY_SECONDS", "0.5")
    monkeypatch.setattr(connection, "_sqlite_pragmas", connection._sqlite_pragmas)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        fast = open_store(f"sqlite:///{path}", cached=False)
        fast.engine.dispose()
        from sqlalchemy import event

        event.listen(fast.engine, "connect",
                     lambda conn, _: conn.execute("PRAGMA busy_timeout=100"))
        with pytest.raises(StoreError, match="locked"):
            fast.create_run(Run(id="blocked"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()


def test_urls(monkeypatch, tmp_path):
    monkeypatch.delenv("STUDIO_DB_URL", raising=False)
    monkeypatch.setenv("STUDIO_HOME", str(tmp_path))
    assert resolve_url() == f"sqlite:///{tmp_path}/studio.db"
    monkeypatch.setenv("STUDIO_DB_URL", "postgres://u:p@db/studio")
    assert resolve_url() == "postgresql+psycopg://u:p@db/studio"


def test_postgres_url_without_driver_or_server_is_a_store_error():
    with pytest.raises(StoreError, match="postgres"):
        open_store("postgresql://u:secretpw@127.0.0.1:1/studio", cached=False)


def test_newest_trials_with_filters(store):
    run, examples, candidate = seed_run(store)
    ids = [add_trial(store, run, candidate, examples[i % 2]).id for i in range(5)]
    newest = store.trials(run.id, newest_first=True, limit=2, with_trace=False)
    assert [t.id for t in newest] == [ids[4], ids[3]]
    assert store.trials(run.id, phases=["child"]) == []
    assert len(store.trials(run.id, phases=["valset"], iteration=0)) == 5
