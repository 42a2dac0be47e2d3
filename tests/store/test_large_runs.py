"""What large runs are read by: trial pages filtered in SQL, aggregates in SQL, batched reads,
the run marker, the version 4 indexes and streamed exports. Each gives the same answer as the
Python computation over every record it replaced, on SQLite and (with ``STUDIO_TEST_PG_URL``)
on PostgreSQL."""

from __future__ import annotations

import csv
import json
import os
import random
import sqlite3

import pandas as pd
import pytest
from sqlalchemy import event, inspect, text

from studio.engine import create_run
from studio.engine.hosting.api import load_result
from studio.engine.people.history import proposal_rows
from studio.engine.policies.evidence import evidence_trials
from studio.engine.policies.pool import load_view
from studio.model.records import (
    Candidate,
    Decision,
    DecisionAction,
    Proposal,
    Split,
    Trial,
    TrialPhase,
    content_hash,
)
from studio.model.redaction import redact
from studio.projects import export
from studio.store import open_store
from studio.store import schema as tables
from studio.views.tables import TrialFilters, trial_frame
from tests.helpers import demo_spec, empty_postgres_store, postgres_url, trainset
from tests.oracles import filter_trials, minibatch_means

PG_URL = os.environ.get("STUDIO_TEST_PG_URL")


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request, tmp_path):
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path}/large.db", cached=False)
    else:
        store = empty_postgres_store(postgres_url())
    yield store
    store.close()


def seeded_run(store, *, iterations: int = 12, seed: int = 3) -> str:
    """A run with a seed, parents and children on minibatches, accepted children scored on the
    validation set, a few unscored trials and errors, a formula-like output, and corrections of
    every kind: score only, feedback only, re-corrected, undone."""
    rng = random.Random(seed)
    run = create_run(store, spec=demo_spec(), trainset=trainset(8),
                     valset=[{"topic": f"v{i}"} for i in range(4)], name="seeded")
    examples = store.examples(run.id)
    train = [e for e in examples if e.split is Split.TRAIN]
    val = [e for e in examples if e.split is Split.VAL]

    def candidate(index, parents, iteration, text, proposal_id=None):
        components = {"instruction": text}
        return store.add_candidate(Candidate(
            run_id=run.id, index=index, parent_ids=parents, components=components,
            content_hash=content_hash(components), iteration=iteration,
            proposal_id=proposal_id))

    def trial(cand, example, iteration, phase, proposal_id=None):
        score = None if rng.random() < 0.1 else round(rng.random(), 2)
        output = "=HYPERLINK(\"x\")" if rng.random() < 0.1 else f"out {rng.random():.3f}"
        return store.add_trial(Trial(
            run_id=run.id, candidate_id=cand.id, example_id=example.id, split=example.split,
            example_index=example.index, iteration=iteration, phase=phase,
            proposal_id=proposal_id, input_text=f"topic {example.index}", output=output,
            score=score, feedback={"feedback": f"fb {rng.random():.2f}"} if score is not None
            else {}, error=None if score is not None else "critic reply is not JSON",
            trace={"events": [{"text": "x"}]}, latency_s=0.1))

    pool = [candidate(0, [], 0, "seed")]
    store.set_pooled(pool[0].id)
    made = [trial(pool[0], e, 0, TrialPhase.VALSET) for e in val]
    for iteration in range(1, iterations + 1):
        parent = rng.choice(pool)
        batch = rng.sample(train, 3)
        made += [trial(parent, e, iteration, TrialPhase.PARENT) for e in batch]
        proposal = store.add_proposal(Proposal(run_id=run.id, iteration=iteration,
                                               parent_id=parent.id, component="instruction",
                                               text=f"v{iteration}"))
        child = candidate(iteration, [parent.id], iteration, f"v{iteration}", proposal.id)
        made += [trial(child, e, iteration, TrialPhase.CHILD, proposal.id) for e in batch]
        store.add_decision(Decision(proposal_id=proposal.id, automatic=True, author="rule",
                                    action=DecisionAction.ACCEPT if iteration % 3 == 0
                                    else DecisionAction.REJECT))
        if iteration % 3 == 0:
            made += [trial(child, e, iteration, TrialPhase.VALSET, proposal.id) for e in val]
            store.set_pooled(child.id)
            pool.append(child)
    for n, chosen in enumerate(rng.sample(made, 24)):
        first = store.add_override(chosen.id, score=0.95 if n % 3 else None,
                                   feedback=None if n % 3 == 1 else f"human {n}", author="ana")
        if n % 4 == 0:
            store.add_override(chosen.id, score=0.05, feedback=None, author="bo")
        if n % 5 == 0:
            store.undo_override(first.id)
        if n % 7 == 0:
            store.add_override(chosen.id, score=None, feedback="only the words", author="cy")
    return run.id


FILTERS = [
    TrialFilters(),
    TrialFilters(iterations=(2, 5)),
    TrialFilters(candidates=[0, 3]),
    TrialFilters(phases=["child", "valset"]),
    TrialFilters(score_range=(0.3, 0.96)),
    TrialFilters(score_range=(0.0, 1.0), include_unscored=False),
    TrialFilters(score_range=(0.5, 1.0), include_unscored=True),
    TrialFilters(errors="only errors"),
    TrialFilters(errors="no errors", overridden="not overridden"),
    TrialFilters(overridden="overridden"),
    TrialFilters(phases=["parent"], score_range=(0.9, 1.0), overridden="overridden"),
]


@pytest.mark.slow
@pytest.mark.parametrize("filters", FILTERS, ids=repr)
def test_trial_pages_filtered_in_sql_equal_the_frame_filters(any_store, filters):
    run_id = seeded_run(any_store)
    index_of = any_store.candidate_indexes(run_id)
    everything = trial_frame(any_store.trials(run_id, with_trace=False), index_of)
    expected = filter_trials(everything, filters)
    pages, offset = [], 0
    while True:
        rows, matching = any_store.trial_page(run_id, offset=offset, limit=7,
                                              **filters.query())
        assert matching == len(expected)
        if not rows:
            break
        pages.append(trial_frame(rows, index_of))
        offset += 7
    got = pd.concat(pages, ignore_index=True) if pages else expected.iloc[:0]
    assert got["id"].tolist() == expected["id"].tolist()
    assert got.reset_index(drop=True).equals(expected.reset_index(drop=True))


@pytest.mark.slow
def test_sql_aggregates_equal_the_python_ones(any_store):
    run_id = seeded_run(any_store)
    trials = any_store.trials(run_id, with_trace=False)
    python = minibatch_means(trials)
    sql = any_store.child_means(run_id)
    assert set(sql) == set(python) and sql
    for proposal_id, mean in sql.items():
        assert mean == pytest.approx(python[proposal_id]["child"], abs=1e-9)

    # the pool's view reads only pooled x validation pairs, with the same result
    full = any_store.effective_scores(run_id)
    view = load_view(any_store, run_id)
    assert view.matrix == {c: {e: full.get((c, e)) for e in view.val_ids}
                           for c in view.pooled_ids}
    narrowed = any_store.effective_scores(run_id, example_ids=view.val_ids, pooled_only=True)
    assert narrowed == {k: v for k, v in full.items()
                        if k[0] in view.pooled_ids and k[1] in view.val_ids}


@pytest.mark.slow
def test_batched_reads_equal_one_read(any_store):
    run_id = seeded_run(any_store)
    assert list(any_store.iter_trials(run_id, batch_size=7)) == any_store.trials(run_id)
    assert list(any_store.iter_trials(run_id, batch_size=1000, with_trace=False)) == \
        any_store.trials(run_id, with_trace=False)
    assert list(any_store.iter_trials("no such run")) == []


@pytest.mark.slow
def test_batched_reads_filter_and_page_like_the_list(any_store):
    run_id = seeded_run(any_store)
    child = any_store.trials(run_id, phase="child", with_trace=False)
    assert list(any_store.iter_trials(run_id, phase="child", with_trace=False, batch_size=4,
                                      offset=5, limit=9)) == child[5:14]
    assert list(any_store.iter_trials(run_id, phase="child", with_trace=False, batch_size=4,
                                      offset=len(child) - 2)) == child[-2:]
    seed = any_store.candidates(run_id)[0].id
    assert list(any_store.iter_trials(run_id, candidate_id=seed, batch_size=3)) == \
        any_store.trials(run_id, candidate_id=seed)
    everything = any_store.trials(run_id)
    assert list(any_store.iter_trials(run_id, limit=7, batch_size=1000)) == everything[:7]
    assert list(any_store.iter_trials(run_id, offset=len(everything))) == []


def _with_minibatches(store, run_id: str) -> None:
    """The seeded run's proposals with their minibatches and children, as the engine records
    them; every third minibatch also names a validation example the child was scored on
    elsewhere (its valset trial), which the evidence reads from the child's first trial."""
    val = [e.id for e in store.examples(run_id, Split.VAL)]
    children = {c.proposal_id: c.id for c in store.candidates(run_id) if c.proposal_id}
    for proposal in store.proposals(run_id):
        batch = [t.example_id for t in store.trials(run_id, phase="parent",
                                                    iteration=proposal.iteration)]
        if proposal.iteration % 3 == 0:
            batch.append(val[0])
        store.update_proposal(proposal.id, child_id=children[proposal.id], minibatch=batch)


def _queries(store, call) -> tuple[object, int]:
    """What ``call()`` returns and how many SQL statements it sent."""
    sent = []
    listener = lambda *args: sent.append(args[2])  # noqa: E731  (statement text)
    event.listen(store.engine, "before_cursor_execute", listener)
    try:
        result = call()
    finally:
        event.remove(store.engine, "before_cursor_execute", listener)
    return result, len(sent)


@pytest.mark.slow
def test_proposal_listing_takes_the_same_queries_for_any_number_of_proposals(any_store):
    small, large = seeded_run(any_store, iterations=3), seeded_run(any_store, iterations=15,
                                                                   seed=5)
    for run_id in (small, large):
        _with_minibatches(any_store, run_id)
    proposal_rows(any_store, small)  # connections opened, dialect warmed up
    rows, few = _queries(any_store, lambda: proposal_rows(any_store, small))
    many_rows, many = _queries(any_store, lambda: proposal_rows(any_store, large))
    assert (len(rows), len(many_rows)) == (3, 15)
    assert few == many <= 6
    for row in many_rows:  # the batched evidence is the one read from the trials themselves
        detail = evidence_trials(any_store, any_store.get_proposal(row.id))
        assert row.now == detail.evidence
    assert any(row.now.parent_sum != row.now.child_sum for row in many_rows)
    assert any(row.now.corrected for row in many_rows)  # the seeded corrections count
    completed = [r for r in many_rows if r.iteration % 3 == 0]
    detail = evidence_trials(any_store, any_store.get_proposal(completed[0].id))
    assert len(detail.child) == 4  # 3 minibatch trials + the valset trial found elsewhere


def test_run_marker_changes_with_trials_overrides_and_decisions(any_store):
    run_id = seeded_run(any_store, iterations=3)
    marker = any_store.run_marker(run_id)
    assert marker[0] == any_store.count_trials(run_id)
    assert any_store.run_marker(run_id) == marker  # nothing changed
    trial = any_store.trials(run_id)[0]
    override = any_store.add_override(trial.id, score=0.5, feedback=None, author="x")
    after_override = any_store.run_marker(run_id)
    assert after_override != marker
    any_store.undo_override(override.id)
    after_undo = any_store.run_marker(run_id)
    assert after_undo != after_override
    proposal = any_store.add_proposal(Proposal(run_id=run_id, iteration=9, parent_id=1,
                                               component="instruction", text="z"))
    any_store.add_decision(Decision(proposal_id=proposal.id, author="p",
                                    action=DecisionAction.REJECT))
    assert any_store.run_marker(run_id) != after_undo


def test_version_4_indexes_migrate_idempotently(tmp_path):
    path = tmp_path / "v3.db"
    open_store(f"sqlite:///{path}", cached=False).close()
    db = sqlite3.connect(path)
    for name in ("ix_trials_run_phase_proposal", "ix_trials_run_iteration", "ix_decisions_run",
                 "ix_decisions_proposal"):
        db.execute(f"DROP INDEX {name}")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    for _ in range(2):  # the second open finds the current version and changes nothing
        store = open_store(f"sqlite:///{path}", cached=False)
        with store.engine.connect() as c:
            assert c.execute(text("SELECT value FROM meta")).scalar() == str(tables.SCHEMA_VERSION)
            trials = {i["name"] for i in inspect(c).get_indexes("trials")}
            decisions = {i["name"] for i in inspect(c).get_indexes("decisions")}
        assert {"ix_trials_run_phase_proposal", "ix_trials_run_iteration"} <= trials
        assert {"ix_decisions_run", "ix_decisions_proposal"} <= decisions
        store.close()
    with store.engine.begin() as c:  # a step that ran half-way (or twice) is harmless
        tables.MIGRATIONS[3](c)
        tables.MIGRATIONS[3](c)


# --------------------------------------------------------------------------- exports


def _export_before(store, run_id, fmt, base):
    """The export as it was written before it streamed (every record in a list)."""
    result = load_result(store, run_id)
    costs = store.candidate_costs(run_id)
    candidates = [{
        "candidate_id": c.id, "index": c.index, "parent_ids": c.parent_ids, "pooled": c.pooled,
        "mean_score": c.mean_score, "on_front": c.on_front,
        "best": c.id == result.best_candidate_id, "cost_usd": costs.get(c.id, 0.0),
        **{f"component.{k}": v for k, v in c.components.items()},
    } for c in result.candidates]
    numbers = export.RunNumbers.of_run(store, run_id)  # each trial's number in the run
    trials = [export.trial_record(t, numbers=numbers) for t in store.trials(run_id)]
    provenance = export.provenance_records(store, run_id)
    proposals = [row.flat() for row in proposal_rows(store, run_id)]
    if fmt == "jsonl":
        path = base.with_suffix(".jsonl")
        with path.open("w", encoding="utf-8") as handle:
            for kind, rows in (("candidate", candidates), ("provenance", provenance),
                               ("proposal", proposals), ("trial", trials)):
                for row in rows:
                    handle.write(redact(export.strict_json({"type": kind, **row})) + "\n")
        return [path]
    paths = [base.parent / f"{base.name}_{name}.csv"
             for name in ("candidates", "trials", "provenance", "proposals")]
    for path, rows in zip(paths, (candidates, trials, provenance, proposals), strict=True):
        columns: list[str] = []
        for row in rows:
            columns += [k for k in row if k not in columns]
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns or ["empty"])
            writer.writeheader()
            for row in rows:
                writer.writerow({k: export.csv_cell(v) for k, v in row.items()})
    return paths


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_streamed_export_writes_what_the_list_export_wrote(any_store, tmp_path, monkeypatch,
                                                           fmt):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123456")
    run_id = seeded_run(any_store)
    trial = any_store.trials(run_id)[0]
    any_store.add_override(trial.id, score=0.5, feedback="leaked sk-test-secret-value-123456",
                           author="x")
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    before = _export_before(any_store, run_id, fmt, tmp_path / "old" / "run")
    read_by_proposal = type(any_store).trials

    def trials(self, run_id, **filters):
        """One proposal's trials (the provenance's score changes) may be read, not the run's."""
        if filters.get("proposal_id") is None:
            pytest.fail("the export read every trial at once")
        return read_by_proposal(self, run_id, **filters)

    monkeypatch.setattr(type(any_store), "trials", trials)
    after = export.export_run(any_store, run_id, fmt, tmp_path / "new" / "run")
    assert [p.name for p in after] == [p.name for p in before]
    for old, new in zip(before, after, strict=True):
        assert new.read_text(encoding="utf-8") == old.read_text(encoding="utf-8")
    written = "".join(p.read_text(encoding="utf-8") for p in after)
    assert "sk-test-secret-value-123456" not in written
    if fmt == "csv":
        assert "'=HYPERLINK" in written
    else:
        kinds = [json.loads(line)["type"] for line in written.splitlines()]
        assert kinds.count("trial") == any_store.count_trials(run_id)


def test_streamed_csv_of_a_run_without_trials(store, tmp_path):
    run = create_run(store, spec=demo_spec(), trainset=trainset(2))
    paths = export.export_run(store, run.id, "csv", tmp_path / "empty")
    assert paths[1].read_bytes() == b"empty\r\n"
