"""Trials of chains that finish together are committed in one transaction (issue 22: CPU per
model call), and none is returned or announced before it is committed."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event

from studio import evolve_sync
from studio.engine import EvolutionConfig
from studio.engine.run.events import Progress, TrialCommitted
from studio.engine.scoring.batch import GroupCommit
from studio.model.errors import LeaseLostError
from studio.model.records import Candidate, Run, Split, Trial, TrialPhase
from studio.store import open_store
from tests.helpers import critic, trainset, writer


@pytest.fixture
def store(tmp_path):
    return open_store(f"sqlite:///{tmp_path}/group.db", cached=False)


def seeded(store) -> tuple[Run, list, Candidate]:
    run = store.create_run(Run(id="r1", name="group", spec={"critic": {"name": "c"}}))
    store.add_examples(run.id, Split.TRAIN, [{"topic": t} for t in "abcd"])
    examples = store.examples(run.id)
    candidate = store.add_candidate(Candidate(run_id=run.id, index=0,
                                              components={"instruction": "x"}, content_hash="h"))
    return run, examples, candidate


def trial_of(run, candidate, example, worker=None) -> Trial:
    return Trial(run_id=run.id, candidate_id=candidate.id, example_id=example.id,
                 split=Split.TRAIN, example_index=example.index, phase=TrialPhase.VALSET,
                 score=0.5, feedback={"feedback": f"on {example.index}"}, worker=worker)


def transactions_of_trials(store) -> list[int]:
    """Per committed transaction of ``store``'s engine, how many trials it inserted."""
    counts: list[int] = []
    current = [0]

    @event.listens_for(store.engine, "before_cursor_execute")
    def count(_conn, _cursor, statement, *_):
        if statement.lstrip().upper().startswith("INSERT INTO TRIALS"):
            current[0] += 1

    @event.listens_for(store.engine, "commit")
    def committed(_conn):
        if current[0]:
            counts.append(current[0])
        current[0] = 0

    return counts


def test_results_added_in_one_turn_are_committed_together_and_returned_stored(store, tmp_path):
    run, examples, candidate = seeded(store)
    transactions = transactions_of_trials(store)
    other = open_store(f"sqlite:///{tmp_path}/group.db", cached=False)

    def commit(finished):
        stored = store.add_trials([trial for trial, _ in finished])
        # durable before anyone is given them: another connection reads every one
        assert [other.get_trial(t.id).example_id for t in stored] == [t.example_id
                                                                       for t in stored]
        return stored

    async def scenario():
        group = GroupCommit(commit)
        tasks = [asyncio.create_task(group.add(trial_of(run, candidate, e), None))
                 for e in examples]
        await asyncio.sleep(0)  # every chain is waiting for the next turn
        tasks[-1].cancel()  # a chain cancelled meanwhile (a sibling failed) is left out
        done = await asyncio.gather(*tasks, return_exceptions=True)
        later = await group.add(trial_of(run, candidate, examples[0]), None)  # a later turn
        return done, later

    done, later = asyncio.run(scenario())
    assert isinstance(done[-1], asyncio.CancelledError)
    assert [t.example_id for t in done[:-1]] == [e.id for e in examples[:-1]]
    assert all(t.id is not None for t in done[:-1]) and later.id is not None
    assert transactions == [3, 1]  # one transaction for the turn, one for the later trial
    assert sorted(t.example_id for t in store.trials(run.id)) == sorted(
        [e.id for e in examples[:-1]] + [examples[0].id])


def test_a_lost_lease_fails_every_waiting_chain_and_stores_none_of_the_group(store):
    run, examples, candidate = seeded(store)
    assert store.claim_run(run.id, "worker-a", stale_after_s=60)

    async def scenario():
        group = GroupCommit(lambda finished: store.add_trials([t for t, _ in finished]))
        tasks = [asyncio.create_task(group.add(trial_of(run, candidate, e, worker="worker-b"),
                                               None)) for e in examples]
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert all(isinstance(o, LeaseLostError) for o in outcomes), outcomes
    assert "worker worker-b lost run r1: it is now held by worker-a" in str(outcomes[0])
    assert store.trials(run.id) == []  # all or none: the group rolled back


def test_every_announced_trial_of_a_run_is_already_committed(tmp_path):
    """The UI follows TrialCommitted (and polls the store): each trial it is told about must
    be readable from another connection at that moment, and each is stored once."""
    url = f"sqlite:///{tmp_path}/run.db"
    store = open_store(url, cached=False)
    reader = open_store(url, cached=False)
    announced: list[int] = []
    unreadable: list[int] = []
    counted: list[tuple[int, int]] = []  # (the engine's metric calls, trials announced)

    def on_event(ev):
        if isinstance(ev, Progress):
            counted.append((ev.metric_calls, len(announced)))
        if isinstance(ev, TrialCommitted):
            announced.append(ev.trial_id)
            try:
                reader.get_trial(ev.trial_id)
            except Exception:  # NotFoundError: announced before its commit
                unreadable.append(ev.trial_id)

    result = evolve_sync(writer(), trainset(6), critic=critic(), store=store, on_event=on_event,
                         config=EvolutionConfig(max_iterations=2, max_concurrency=5, seed=0))
    stored = store.trials(result.run_id)
    assert announced and unreadable == []
    assert sorted(announced) == sorted(t.id for t in stored)
    # a group of trials counts each once against the budget (max_metric_calls)
    assert counted and all(calls == seen for calls, seen in counted), counted
    pairs = [(t.candidate_id, t.example_id) for t in stored]
    assert len(pairs) == len(set(pairs))  # no pair judged twice
