"""Parallel proposals (issue 22, :mod:`studio.engine.loop.window`): a window of k iterations in
flight, one slot budget, and a seeded run that reproduces whatever finishes first: twice, with
1 and 2 worker processes, and after SIGKILL + resume."""

from __future__ import annotations

import asyncio
import json
import signal
from collections import Counter
from pathlib import Path

import pytest

from studio.cli import main as cli_main
from studio.engine import EvolutionConfig, build_engine
from studio.engine.hosting import worker
from studio.engine.hosting.worker import get_manager
from studio.engine.loop.window import Window, auto_lanes, lane_count
from studio.engine.people.gates import decide, pending_in_order
from studio.engine.people.history import proposal_rows
from studio.model.records import EventKind, ProposalStatus, RunStatus, TrialPhase
from studio.runtime.providers.scripted import recorded_requests, request_mark
from studio.store import Store, open_store
from studio.views.waiting import waiting_note
from tests.engine.invariants import nothing_stranded
from tests.helpers import HEARTBEAT_SECONDS, StudioProcess, demo_spec, trainset, wait_until

VALSET = [{"topic": "harbor fog"}, {"topic": "desert wind"}]
LANES = {"max_iterations": 6, "minibatch_size": 2, "max_concurrency": 4, "seed": 5,
         "parallel_proposals": 2}


def signature(store: Store, run_id: str) -> dict[str, list]:
    """What a run did, by content (not by row ids, which other runs in the store shift): its
    trials, proposals, decisions and pool."""
    content = {c.id: c.content_hash for c in store.candidates(run_id)}
    proposals = {p.id: p for p in store.proposals(run_id)}
    return {
        "trials": sorted((t.iteration, t.phase.value, content[t.candidate_id], t.example_index,
                          t.split.value, t.feedback.score) for t in store.trials(run_id)),
        "proposals": sorted((p.iteration, p.text, p.status.value, p.invalid_reason or "",
                             content.get(p.parent_id)) for p in proposals.values()),
        "decisions": sorted((proposals[d.proposal_id].iteration, proposals[d.proposal_id].text,
                             d.action.value) for d in store.decisions(run_id)),
        "pool": sorted(c.content_hash for c in store.candidates(run_id) if c.pooled),
    }


def lanes_overlapped(store: Store, run_id: str) -> bool:
    """Whether the second iteration started before the first proposed anything."""
    kinds = [(e.kind, e.iteration) for e in store.events(run_id)]
    return kinds.index((EventKind.ITERATION_STARTED, 2)) < \
        kinds.index((EventKind.PROPOSAL_CREATED, 1))


def pairs_judged_once(store: Store, run_id: str) -> None:
    pairs = Counter((t.candidate_id, t.example_id) for t in store.trials(run_id))
    assert max(pairs.values()) == 1, [pair for pair, n in pairs.items() if n > 1]


# ---------------------------------------------------------------------- how many lanes


def test_the_automatic_lane_count_fills_the_slots_nearest():
    assert auto_lanes(5, 3) == 2  # the harness's world: 1 lane leaves 2 of 5 slots idle
    assert auto_lanes(4, 3) == 1  # the defaults: a second lane would queue 2 chains for 1 slot
    assert auto_lanes(4, 2) == 2 and auto_lanes(8, 2) == 4 and auto_lanes(1, 3) == 1
    assert auto_lanes(6, 4) == 1  # a tie: the fewer lanes


def test_one_lane_with_merge_a_budget_and_on_the_embedded_model(runner, store):
    def lanes(spec=None, **config):
        run_id = runner.create(spec or demo_spec(), trainset(), VALSET,
                               **{**LANES, **config})
        return lane_count(build_engine(store, run_id).ctx)

    assert lanes() == 2
    assert lanes(parallel_proposals=None, max_concurrency=5, minibatch_size=3) == 2
    assert lanes(review="review") == 2  # each lane's proposal waits for the person
    assert lanes(use_merge=True) == 1
    assert lanes(max_metric_calls=500) == 1  # what a lane may spend would depend on timing
    local = demo_spec().model_copy(update={"reflection": demo_spec().reflection.model_copy(
        update={"model": "local/smollm2"})})
    assert lanes(local) == 1


def test_parallel_proposals_is_a_setting_with_bounds():
    assert EvolutionConfig(parallel_proposals=3).parallel_proposals == 3
    with pytest.raises(Exception, match="parallel_proposals"):
        EvolutionConfig(parallel_proposals=0)


def test_an_iteration_takes_its_turn_only_after_the_one_before_it():
    async def scenario() -> list[int]:
        window, passed = Window(), []
        for iteration in (1, 2, 3):
            window.open(iteration)

        async def lane(n: int) -> None:
            await window.propose_turn(n)
            passed.append(n)
            window.proposed(n)

        await asyncio.gather(lane(3), lane(2), lane(1))
        return passed

    assert asyncio.run(scenario()) == [1, 2, 3]


def test_the_seed_holds_only_the_first_pooling_turn():
    async def scenario() -> list[str]:
        window, done = Window(), []
        window.open(0, proposes=False)
        window.open(1)
        await window.propose_turn(1)  # the first lane proposes while the seed is scored
        done.append("proposed")
        pooling = asyncio.ensure_future(window.pool_turn(1))
        await asyncio.sleep(0)
        done.append("waits" if not pooling.done() else "pooled early")
        window.ended(0)
        await pooling
        done.append("pooled")
        return done

    assert asyncio.run(scenario()) == ["proposed", "waits", "pooled"]


# ---------------------------------------------------------------------- reproducible


@pytest.mark.slow
def test_a_seeded_run_with_two_lanes_reproduces_its_trials_and_decisions(runner, store):
    first, reason = runner.run(demo_spec("scripted/demo@20ms"), trainset(), VALSET, **LANES)
    second, _ = runner.run(demo_spec("scripted/demo@5ms"), trainset(), VALSET, **LANES)
    assert reason == "max_iterations"
    assert lanes_overlapped(store, first) and lanes_overlapped(store, second)
    assert signature(store, first) == signature(store, second)
    pairs_judged_once(store, first)
    checkpoint = store.load_checkpoint(first)
    assert checkpoint[0] == 6 and checkpoint[1]["round"] is None
    # the first lanes started while the seed was being scored
    kinds = [(e.kind, e.iteration) for e in store.events(first)]
    assert kinds.index((EventKind.ITERATION_STARTED, 2)) < \
        kinds.index((EventKind.BASELINE_SCORED, 0))


def test_lanes_on_one_parent_share_its_trials_and_no_pair_is_judged_twice(runner, store):
    """The first two iterations have one parent (the seed); with a minibatch as large as the
    trainset both lanes need every seed pair: each is judged once, by the first lane."""
    run_id, _ = runner.run(demo_spec("scripted/demo@20ms"), trainset(3), VALSET,
                           **{**LANES, "minibatch_size": 3, "max_concurrency": 6,
                              "max_iterations": 2})
    pairs_judged_once(store, run_id)
    seed_train = [t for t in store.trials(run_id, phase=TrialPhase.PARENT)]
    assert len(seed_train) == 3 and {t.iteration for t in seed_train} == {1}
    proposals = store.proposals(run_id)
    assert {p.iteration for p in proposals} == {1, 2}
    # the later lane's identical text is the duplicate, and it was asked again
    duplicates = [p for p in proposals if (p.invalid_reason or "").startswith("duplicate of")]
    assert all(p.iteration == 2 for p in duplicates)


# ---------------------------------------------------------------------- what lanes read

REJECTED = '"outcome": "rejected"'


def flat_world(script, latency_ms: int = 20) -> tuple[str, str, str]:
    """No text ever helps (every child is rejected, so every round's lanes share the seed as
    their parent); the reflector proposes the parent's text numbered by how many texts its
    prompt lists as tried, so what a prompt lists is what it proposes."""
    def reflector(request):
        prompt = request.prompt_text
        parent = prompt.split("## Component Text to Improve\n", 1)[1]
        parent = parent.split("\n\n## Trials", 1)[0].strip()
        tried = prompt.count(REJECTED) + prompt.count('"outcome": "refused just now"')
        return f"{parent} (v{tried + 1})"

    delay = latency_ms / 1000
    return (script("the same reply", latency_s=delay),
            script({"score": 0.5, "feedback": "fine"}, latency_s=delay),
            script(reflector, latency_s=delay))


def test_a_rejection_reaches_the_reflection_k_iterations_later_not_a_sibling_in_flight(
        runner, store, script):
    """With two lanes, iteration i reads the history of iterations up to i - 2: iteration 3
    reads iteration 1's rejection (not iteration 2's, in flight beside it), iteration 4 both."""
    writer, critic, reflector = flat_world(script)
    spec = demo_spec(writer).model_copy(update={
        "critic": demo_spec(critic).critic, "reflection": demo_spec(reflector).reflection})
    run_id, reason = runner.run(spec, trainset(4), VALSET, **{**LANES, "max_iterations": 4})
    assert reason == "max_iterations"
    proposals = sorted(store.proposals(run_id), key=lambda p: (p.iteration, p.id))
    texts = [(p.iteration, p.text.rsplit(" ", 1)[-1], p.status.value) for p in proposals]
    assert {p.parent_id for p in proposals} == {store.candidates(run_id)[0].id}
    # the second lane's identical text is the duplicate, asked again; both rejected
    assert texts[:3] == [(1, "(v1)", "rejected"), (2, "(v1)", "invalid"), (2, "(v2)", "rejected")]
    # iteration 3 knows only v1 was rejected: its v2 repeats iteration 2's and is refused;
    # iteration 4 knows v1 and v2: its v3 repeats iteration 3's retry
    assert texts[3:] == [(3, "(v2)", "invalid"), (3, "(v3)", "rejected"),
                         (4, "(v3)", "invalid"), (4, "(v4)", "rejected")]
    prompts = [r.prompt_text for r in script.requests(reflector)]
    # rejections each prompt read: none in the first three (iterations 1, 2, 2's retry), one
    # in iteration 3's two, two in iteration 4's two
    assert sorted(prompt.count(REJECTED) for prompt in prompts) == [0, 0, 0, 1, 1, 2, 2]
    pairs_judged_once(store, run_id)


def test_a_gate_and_a_reflection_go_before_a_validation_queued_earlier(runner, store, script):
    """One call slot, two lanes: the seed's validation is queued first, yet the first lanes'
    minibatches, their reflections and their children's minibatches are served before it ends
    (:mod:`studio.runtime.slots`); first come, first served made them wait for all of it."""
    writer, critic, reflector = flat_world(script, latency_ms=5)
    spec = demo_spec(writer).model_copy(update={
        "critic": demo_spec(critic).critic, "reflection": demo_spec(reflector).reflection})
    valset = [{"topic": f"validation topic {i}"} for i in range(6)]
    mark = request_mark()
    run_id, reason = runner.run(spec, trainset(4), valset,
                                **{**LANES, "max_iterations": 2, "max_concurrency": 1})
    assert reason == "max_iterations"
    calls = recorded_requests(since=mark)

    def served(model: str, text: str = "") -> list[int]:
        return [i for i, r in enumerate(calls)
                if r.model == model and text in r.prompt_text]

    last_seed_validation = max(i for i in served(writer, "validation topic")
                               if "(v1)" not in calls[i].prompt_text)
    reflections = served(reflector)
    children = served(writer, "(v1)")
    assert len(reflections) >= 2 and children
    assert reflections[0] < reflections[1] < last_seed_validation
    minibatch = [i for i in children if "validation topic" not in calls[i].prompt_text]
    assert minibatch and minibatch[0] < last_seed_validation
    pairs_judged_once(store, run_id)


@pytest.mark.slow
def test_limits_are_checked_as_the_iteration_k_before_left_them(runner, store, script):
    """Patience 3 with two lanes, every child rejected: iteration 5 would be drawn as
    iteration 3 left the run (3 stale iterations), so it is not; iteration 4, drawn as
    iteration 2 left it, runs whole. The same stop whatever finishes first."""
    ends = []
    for latency_ms in (20, 2):
        writer, critic, reflector = flat_world(script, latency_ms=latency_ms)
        spec = demo_spec(writer).model_copy(update={
            "critic": demo_spec(critic).critic, "reflection": demo_spec(reflector).reflection})
        run_id, reason = runner.run(spec, trainset(4), VALSET,
                                    **{**LANES, "max_iterations": 10, "patience": 3})
        assert reason == "patience"
        ends.append(sorted({p.iteration for p in store.proposals(run_id)}))
        assert store.load_checkpoint(run_id)[0] == 4
    assert ends == [[1, 2, 3, 4], [1, 2, 3, 4]]


def test_with_a_score_threshold_the_seed_is_scored_before_the_first_lane(runner, store):
    run_id, reason = runner.run(demo_spec("scripted/demo@5ms"), trainset(), VALSET,
                                **{**LANES, "max_iterations": 2, "score_threshold": 0.999})
    assert reason == "max_iterations"
    kinds = [(e.kind, e.iteration) for e in store.events(run_id)]
    assert kinds.index((EventKind.BASELINE_SCORED, 0)) < \
        kinds.index((EventKind.ITERATION_STARTED, 1))


@pytest.mark.slow
def test_a_timeout_lets_every_lane_in_flight_finish_whole(runner, store):
    """Stop conditions are checked when an iteration is drawn: the lanes already in flight
    when the time is up end whole (nothing open, every plan settled), then the run ends on its
    timeout."""
    run_id, reason = runner.run(demo_spec("scripted/demo@40ms"), trainset(), VALSET,
                                **{**LANES, "max_iterations": 40, "timeout_seconds": 1.5})
    assert reason == "timeout"
    iteration, state = store.load_checkpoint(run_id)
    assert state["round"] is None and 1 <= iteration < 40
    started = [e.iteration for e in store.events(run_id, kind=EventKind.ITERATION_STARTED)]
    assert max(started) == iteration  # (an iteration may end without a proposal: a skip)
    nothing_stranded(store, run_id, "(timeout with lanes in flight)")


# ---------------------------------------------------------------------- processes, SIGKILL


@pytest.mark.slow
def test_the_same_run_with_one_and_two_processes(runner, store):
    one, _ = runner.run(demo_spec("scripted/demo@10ms"), trainset(), VALSET, **LANES)
    two, reason = runner.run(demo_spec("scripted/demo@10ms"), trainset(), VALSET,
                             **{**LANES, "processes": 2})
    assert reason == "max_iterations"
    assert signature(store, one) == signature(store, two)
    pairs_judged_once(store, two)


def project(tmp_path: Path, latency_ms: int) -> Path:
    model = f"scripted/demo@{latency_ms}ms"
    text = json.dumps({
        "name": "lanes", "agent": {"name": "writer", "model": model,
                                   "instruction": "Write a haiku about the given topic."},
        "critic": {"type": "agent", "name": "rule_critic", "schema": "advanced", "model": model},
        "reflection": {"model": model}, "components": ["instruction"],
        "dataset": {"train": trainset(), "val": VALSET},
        "run": {k: v for k, v in LANES.items()}})
    path = tmp_path / "lanes.yaml"
    path.write_text(text)  # JSON is YAML
    return path


@pytest.mark.slow
def test_sigkill_mid_round_then_resume_gives_the_same_run(tmp_path, monkeypatch):
    monkeypatch.setattr(worker, "STALE_AFTER_SECONDS", 1.5)
    url = f"sqlite:///{tmp_path}/studio.db"
    killed = StudioProcess(url, "run", str(project(tmp_path, 150)),
                           STUDIO_STALE_AFTER_SECONDS="1.5",
                           STUDIO_HEARTBEAT_SECONDS=HEARTBEAT_SECONDS)
    store = open_store(url, cached=False)
    try:
        def mid_round() -> str | None:
            runs = store.list_runs()
            if not runs:
                return None
            saved = store.load_checkpoint(runs[0].id)
            child = store.trials(runs[0].id, phase=TrialPhase.CHILD)
            return runs[0].id if saved and saved[1].get("round") and saved[0] >= 2 \
                and child else None
        run_id = wait_until(mid_round, timeout=180, message="a second round in flight")
    finally:
        killed.process.send_signal(signal.SIGKILL)
        killed.process.wait(10)
    assert store.get_run(run_id).status is RunStatus.RUNNING  # killed: no end was written
    manager = get_manager(store)
    wait_until(lambda: run_id in manager.recover_orphans(), timeout=30,
               message="the killed run is found orphaned")
    assert manager.resume(run_id).wait(180) == "max_iterations"
    assert store.get_run(run_id).status is RunStatus.COMPLETED
    whole = StudioProcess(url, "run", str(project(tmp_path, 5)))
    assert whole.process.wait(180) == 0, whole.text
    other = next(r.id for r in store.list_runs() if r.id != run_id)
    assert signature(store, run_id) == signature(store, other)
    pairs_judged_once(store, run_id)
    store.close()


# ---------------------------------------------------------------------- a person at the gates


def test_in_review_mode_two_proposals_wait_at_once_and_each_decision_applies_to_its_own(
        runner, store, script, capsys):
    writer, critic, reflector = flat_world(script, latency_ms=5)
    spec = demo_spec(writer).model_copy(update={
        "critic": demo_spec(critic).critic, "reflection": demo_spec(reflector).reflection})
    run_id, handle = runner.start(spec, trainset(4), VALSET,
                                  **{**LANES, "max_iterations": 2, "review": "review"})
    rows = wait_until(lambda: len(proposal_rows(store, run_id, pending_only=True)) == 2
                      and proposal_rows(store, run_id, pending_only=True), timeout=60,
                      message="both lanes' proposals wait")
    assert [row.iteration for row in rows] == [1, 2] and all(r.waiting_for_you for r in rows)
    first, second = (store.get_proposal(row.id) for row in rows)
    note = waiting_note(pending_in_order(store.proposals(run_id)))
    assert note and note.index(f"#{first.id}") < note.index(f"#{second.id}")
    capsys.readouterr()
    assert cli_main(["--db", store.url, "proposals", run_id, "--pending"]) == 0
    waiting = [line for line in capsys.readouterr().out.splitlines() if "WAITING" in line]
    assert [line.split()[0] for line in waiting] == [str(first.id), str(second.id)]

    # a stop is no decision: both wait again when the run resumes
    assert decide(first.id, "stop", store=store) is None
    assert handle.wait(60) == "user"
    assert store.decisions(run_id) == []
    assert [p.id for p in pending_in_order(store.proposals(run_id))] == [first.id, second.id]
    handle = get_manager(store).resume(run_id)
    decide(second.id, "accept", author="ana", store=store)
    decide(first.id, "reject", reason="too vague", author="ana", store=store)
    assert handle.wait(60) == "max_iterations"

    first, second = store.get_proposal(first.id), store.get_proposal(second.id)
    assert first.status is ProposalStatus.REJECTED and second.status is ProposalStatus.ACCEPTED
    assert [d.reason for d in store.decisions(proposal_id=first.id)] == ["too vague"]
    assert [d.action.value for d in store.decisions(proposal_id=second.id)] == ["accept"]
    assert store.get_candidate(second.child_id).pooled
    assert not store.get_candidate(first.child_id).pooled
    pairs_judged_once(store, run_id)


def test_evolve_takes_parallel_proposals_and_refuses_zero(store):
    from studio import evolve_sync
    from studio.model.errors import ConfigError
    from tests.helpers import critic, writer

    result = evolve_sync(writer("scripted/demo@5ms"), trainset(), critic=critic(), store=store,
                         valset=VALSET, reflection_model="scripted/demo", parallel_proposals=2,
                         config=EvolutionConfig(max_iterations=2, minibatch_size=2, seed=5))
    assert store.get_run(result.run_id).config.parallel_proposals == 2
    assert lanes_overlapped(store, result.run_id)
    with pytest.raises(ConfigError, match="parallel_proposals"):
        evolve_sync(writer(), trainset(), critic=critic(), store=store, parallel_proposals=0)
