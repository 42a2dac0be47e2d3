"""One candidate per text in a run, whatever people do on parallel lanes (issue 32).

Three lanes wait at their gates at once (review mode). A person edits proposal 1 into T, then
proposal 3 into the same T: each edit was checked against the pool when it was made, and both
children entered the pool, identical, each judged on every validation example. Now the second
edit is refused naming what already makes T, the engine refuses a second child with the same
content (for decisions recorded past each other), and the store holds one candidate per content
hash (a unique index). An edit back to the seed's text is refused in the person's words, naming
candidate #0, never as "the reflection returned the parent's text unchanged".
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.engine import EvolutionConfig, build_engine, create_run, decide
from studio.engine.hosting.worker import get_manager
from studio.engine.people.gates import pending_in_order
from studio.model.errors import ProposalError, RunStateError
from studio.model.records import (
    Decision,
    DecisionAction,
    ProposalStatus,
    RunStatus,
    content_hash,
)
from studio.store import open_store
from tests.engine.invariants import nothing_stranded
from tests.engine.test_parallel_proposals import VALSET, flat_world
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset, wait_until

LANES = {"max_iterations": 3, "minibatch_size": 2, "max_concurrency": 4, "seed": 5,
         "parallel_proposals": 3, "review": "review"}
T = "Write a haiku about the topic, with a season word."


def lanes_world(script):
    writer, critic, reflector = flat_world(script, latency_ms=2)
    return demo_spec(writer).model_copy(update={
        "critic": demo_spec(critic).critic, "reflection": demo_spec(reflector).reflection})


def start(store, spec):
    run = create_run(store, spec=spec, trainset=trainset(4), valset=VALSET,
                     config=EvolutionConfig(**LANES))
    return run.id, get_manager(store).start(build_engine(store, run.id))


def three_waiting(store, run_id: str):
    return wait_until(lambda: len(pending_in_order(store.proposals(run_id))) == 3
                      and pending_in_order(store.proposals(run_id)), timeout=60,
                      message="the three lanes' proposals at their gates")


def accept_all(store, run_id: str, handle) -> None:
    """Accept whatever waits until the run ends (edited texts come back to their gates)."""
    while handle.running:
        for proposal in pending_in_order(store.proposals(run_id)):
            with contextlib.suppress(RunStateError, ProposalError):  # decided meanwhile
                decide(proposal.id, "accept", store=store)
        handle.join(0.05)
    assert handle.wait(1) == "max_iterations"


def one_per_text(store, run_id: str) -> None:
    """No two candidates of the run have the same components (pooled or not)."""
    texts = Counter(tuple(sorted(c.components.items())) for c in store.candidates(run_id))
    assert max(texts.values()) == 1, [t for t, n in texts.items() if n > 1]
    nothing_stranded(store, run_id)


def test_the_second_of_two_equal_edits_on_two_lanes_is_refused_naming_the_first(
        store, script):
    run_id, handle = start(store, lanes_world(script))
    first, _, third = three_waiting(store, run_id)
    decide(first.id, "edit", edited_text=T, author="ana", store=store)
    with pytest.raises(ProposalError, match="already has this text") as refused:
        decide(third.id, "edit", edited_text=T, author="bo", store=store)
    said = str(refused.value)  # named as far as the engine got with ana's edit meanwhile
    assert f"ana's edit of proposal {first.id}" in said or "candidate #" in said, said
    assert "reflection" not in said
    accept_all(store, run_id, handle)
    pooled = [c.components["instruction"] for c in store.candidates(run_id) if c.pooled]
    assert pooled.count(T) == 1
    one_per_text(store, run_id)


def test_an_edit_back_to_the_seeds_text_is_refused_in_the_persons_words(store, script):
    run_id, handle = start(store, lanes_world(script))
    first = three_waiting(store, run_id)[0]
    with pytest.raises(ProposalError) as refused:
        decide(first.id, "edit", edited_text=BASE_INSTRUCTION, author="ana", store=store)
    said = str(refused.value)
    assert said.startswith("candidate #0 (the seed, the parent proposal") and \
        "already has this text" in said
    assert "reflection" not in said
    get_manager(store).stop(run_id)
    handle.wait(30)


def test_two_equal_edits_recorded_past_each_other_make_one_candidate(store, script):
    """Two processes each checked their edit before the other's was stored (the decisions are
    written here as they would land): the engine makes T's candidate once and refuses the
    other edit, naming the candidate, in words about the edit."""
    run_id, handle = start(store, lanes_world(script))
    first, _, third = three_waiting(store, run_id)
    for proposal, author in ((first, "ana"), (third, "bo")):
        store.add_decision(Decision(proposal_id=proposal.id, action=DecisionAction.EDIT,
                                    edited_text=T, author=author))
    accept_all(store, run_id, handle)
    refused = [p for p in store.proposals(run_id)
               if p.edited_from is not None and p.status is ProposalStatus.INVALID]
    assert len(refused) == 1
    reason = refused[0].invalid_reason or ""
    assert reason.startswith("duplicate of candidate #") and "this edit" in reason
    assert "reflection" not in reason
    one_per_text(store, run_id)


def applied(store, run_id: str, edited: int) -> None:
    wait_until(lambda: any(p.edited_from == edited and p.status is not ProposalStatus.EVALUATING
                           for p in store.proposals(run_id)), timeout=30,
               message="the engine to apply the edit")


EDITS = st.lists(st.tuples(st.integers(0, 2),
                           st.sampled_from([T, T + " Be brief.", BASE_INSTRUCTION,
                                            f"{BASE_INSTRUCTION} (v1)"]),
                           st.booleans()),
                 min_size=2, max_size=4)
"""Edits on the three lanes: which lane, which text (two new ones, the seed's, lane 1's
proposal), and whether the engine applies it before the next edit is made."""


@pytest.mark.slow
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(edits=EDITS)
def test_no_interleaving_of_edits_on_lanes_pools_two_equal_texts(script, edits):
    spec = lanes_world(script)
    folder = Path(tempfile.mkdtemp(prefix="edit-race-"))
    store = open_store(f"sqlite:///{folder}/{uuid.uuid4().hex}.db", cached=False)
    try:
        run_id, handle = start(store, spec)
        lanes = [p.iteration for p in three_waiting(store, run_id)]
        for lane, text, settle in edits:
            waiting = [p for p in pending_in_order(store.proposals(run_id))
                       if p.iteration == lanes[lane]]
            if not waiting:
                continue
            try:
                decide(waiting[0].id, "edit", edited_text=text, author=f"p{lane}", store=store)
            except ProposalError as refused:
                assert "reflection" not in str(refused), str(refused)
                continue
            except RunStateError:  # decided meanwhile
                continue
            if settle:
                applied(store, run_id, waiting[0].id)
        accept_all(store, run_id, handle)
        assert store.get_run(run_id).status is RunStatus.COMPLETED
        one_per_text(store, run_id)
        hashes = Counter(c.content_hash for c in store.candidates(run_id))
        assert hashes[content_hash({"instruction": BASE_INSTRUCTION})] == 1
    finally:
        store.close()
