"""GEPA's merge: which pairs qualify, how the child is built and judged, and the seeded scenario
end to end (scripted models through ADK + LiteLLM) in auto and review mode, and after SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from studio.cli import main
from studio.engine import decide, load_result
from studio.engine.hosting import worker
from studio.engine.hosting.worker import get_manager
from studio.engine.policies.evidence import proposal_evidence
from studio.engine.policies.pool import load_view
from studio.engine.propose.merge import (
    find_merge,
    merge_due,
    merge_subsample,
    merged_components,
)
from studio.model.config import EvolutionConfig
from studio.model.errors import ConfigError
from studio.model.records import (
    Candidate,
    EventKind,
    MergeDetail,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Run,
    content_hash,
)
from studio.views.tables import merge_source_frame, proposal_label
from tests import zygote
from tests.engine import merge_world as world
from tests.helpers import HEARTBEAT_SECONDS, wait_until

ROOT = Path(__file__).resolve().parents[2]
WRITER, EDITOR, STYLE = "writer.instruction", "editor.instruction", "writer.{odd} key: 1"
"""Opaque keys (multi-agent runs name them ``agent.component``): never parsed."""


def candidate(cid: int, parents: list[int], **components: str) -> Candidate:
    texts = {WRITER: "w0", EDITOR: "e0", STYLE: "s0"} | {
        {"writer": WRITER, "editor": EDITOR, "style": STYLE}[k]: v for k, v in components.items()}
    return Candidate(id=cid, run_id="r", index=cid, parent_ids=parents, components=texts,
                     content_hash=content_hash(texts), pooled=True)


def lineage(**second: str) -> list[Candidate]:
    """#0 the seed; #1 improved the writer; #2 improved ``second`` (the editor by default)."""
    return [candidate(0, []), candidate(1, [0], writer="w1"),
            candidate(2, [0], **(second or {"editor": "e1"}))]


MEANS = {0: 0.3, 1: 0.5, 2: 0.6}


# --------------------------------------------------------------------------- pair finding


def test_two_branches_that_improved_different_components_are_merged():
    pool = lineage()
    choice = find_merge(pool, [1, 2], MEANS, set(), random.Random(0))
    assert choice.parents == (1, 2) and choice.ancestor == 0
    assert choice.sources == {WRITER: 1, EDITOR: 2, STYLE: 0}
    by_id = {c.id: c for c in pool}
    assert merged_components(choice.sources, by_id) == {WRITER: "w1", EDITOR: "e1", STYLE: "s0"}


def test_no_merge_when_both_improved_the_same_component():
    pool = lineage(writer="w2")
    assert find_merge(pool, [1, 2], MEANS, set(), random.Random(0)) is None


def test_a_component_both_changed_comes_from_the_better_parent():
    pool = [candidate(0, []), candidate(1, [0], writer="w1", style="s1"),
            candidate(2, [0], editor="e1", style="s2")]
    choice = find_merge(pool, [1, 2], MEANS, set(), random.Random(0))
    assert choice.sources == {WRITER: 1, EDITOR: 2, STYLE: 2}  # #2 has the higher mean


def test_no_pair_is_merged_twice():
    pool = lineage()
    assert find_merge(pool, [1, 2], MEANS, {frozenset((1, 2))}, random.Random(0)) is None


def test_no_merge_when_the_child_exists_already():
    pool = lineage()
    pool.append(candidate(3, [1, 2], writer="w1", editor="e1"))
    assert find_merge(pool, [1, 2], MEANS, set(), random.Random(0)) is None


def test_no_merge_of_a_candidate_with_its_own_ancestor():
    pool = [candidate(0, []), candidate(1, [0], writer="w1"),
            candidate(2, [1], writer="w1", editor="e1")]
    assert find_merge(pool, [1, 2], MEANS, set(), random.Random(0)) is None


def test_no_merge_against_an_ancestor_better_than_a_branch():
    assert find_merge(lineage(), [1, 2], {0: 0.55, 1: 0.5, 2: 0.6}, set(),
                      random.Random(0)) is None


def test_only_front_candidates_are_merged():
    assert find_merge(lineage(), [2], MEANS, set(), random.Random(0)) is None


def test_the_subsample_takes_examples_where_each_parent_is_better_and_where_they_tie():
    a = {1: 1.0, 2: 1.0, 3: 0.0, 4: 0.0, 5: 0.5, 6: 0.5, 7: None, 8: 0.2}
    b = {1: 0.0, 2: 0.0, 3: 1.0, 4: 1.0, 5: 0.5, 6: 0.5, 7: 1.0}
    chosen = merge_subsample(a, b, list(range(1, 10)), random.Random(4))
    assert len(chosen) == 5 and chosen == sorted(chosen)
    assert {1, 2} & set(chosen) and {3, 4} & set(chosen) and {5, 6} & set(chosen)
    assert 7 not in chosen and 8 not in chosen  # not scored for both parents


def test_merges_are_due_after_an_accepted_reflection_and_up_to_the_limit(store):
    store.create_run(Run(id="m"))
    ctx = SimpleNamespace(config=EvolutionConfig(use_merge=True, max_merge_invocations=1),
                          store=store, run_id="m", val_ids=[1, 2], metric_calls=lambda: 0)
    accepted = store.add_proposal(Proposal(run_id="m", iteration=1, parent_id=1,
                                           component=WRITER, text="w1",
                                           status=ProposalStatus.ACCEPTED))
    assert merge_due(ctx, 2) and not merge_due(ctx, 3)
    store.add_proposal(Proposal(
        run_id="m", iteration=2, parent_id=1, component="", text="merge", kind="merge",
        merge=MergeDetail(parents=[1, 2], ancestor=0, sources={WRITER: 1}, subsample=[1])))
    assert not merge_due(ctx, 2)  # max_merge_invocations=1 reached
    ctx.config = EvolutionConfig(use_merge=True, max_merge_invocations=2)
    assert merge_due(ctx, 2)
    ctx.config = EvolutionConfig()  # off by default, as in GEPA
    assert not merge_due(ctx, 2)
    assert store.get_proposal(accepted.id).kind is ProposalKind.REFLECTION


def test_the_page_says_which_component_comes_from_which_candidate_and_why():
    pool = [candidate(0, []), candidate(1, [0], writer="w1", style="s1"),
            candidate(2, [0], editor="e1", style="s1")]
    proposal = Proposal(run_id="r", iteration=3, parent_id=1, component="", text="", kind="merge",
                        merge=MergeDetail(parents=[1, 2], ancestor=0, subsample=[1],
                                          sources={WRITER: 1, EDITOR: 2, STYLE: 1}))
    by_id = {c.id: c for c in pool}
    frame = merge_source_frame(proposal, by_id)
    assert list(frame["component"]) == [WRITER, EDITOR, STYLE]
    assert list(frame["from"]) == [1, 2, 1]
    assert list(frame["why"]) == ["improved by #1 only", "improved by #2 only",
                                  "changed the same way by both parents"]
    assert proposal_label(proposal, {c.id: c.index for c in pool}) == "merge of #1 and #2"


@pytest.mark.parametrize("settings, message", [
    ({"use_merge": True, "max_merge_invocations": 0}, "no merge could ever be proposed"),
    ({"max_merge_invocations": -1}, "greater than or equal to 0"),
])
def test_merge_settings_are_validated(settings, message):
    """A direct ``EvolutionConfig(...)`` refuses with the studio's ConfigError (gepa-adk's
    documented error), pydantic's message kept."""
    with pytest.raises(ConfigError, match=message):
        EvolutionConfig(**settings)


# --------------------------------------------------------------------------- end to end


@pytest.fixture
def merge_world(script):
    return script(world.WORLD, world.reply)


def assert_branched(store, run_id):
    """The scenario's premise: iterations 1 and 2 both grew from the seed."""
    first, second = (store.proposals(run_id, iteration=i)[0] for i in (1, 2))
    seed = store.candidates(run_id)[0]
    assert first.parent_id == second.parent_id == seed.id, "the seed no longer branches"
    assert (first.component, second.component) == tuple(world.COMPONENTS)


def the_merge(store, run_id) -> Proposal:
    merges = store.proposals(run_id, kind=ProposalKind.MERGE)
    assert len(merges) == 1
    return merges[0]


def assert_no_pair_judged_twice(store, run_id):
    pairs = [(t.candidate_id, t.example_id) for t in store.trials(run_id)]
    assert len(pairs) == len(set(pairs))


def test_a_merge_is_proposed_and_accepted_by_the_rule(runner, store, merge_world, capsys):
    run_id, reason = runner.run(world.spec(), world.TRAINSET, **world.config())
    assert reason == "max_iterations"
    assert_branched(store, run_id)
    merge = the_merge(store, run_id)
    first, second = (store.proposals(run_id, iteration=i)[0].child_id for i in (1, 2))
    seed = store.candidates(run_id)[0]
    assert merge.iteration == 3 and merge.status is ProposalStatus.ACCEPTED
    assert merge.merge.parents == [first, second] and merge.merge.ancestor == seed.id
    assert merge.merge.sources == {"instruction": first, "generate_content_config": second}
    child = store.get_candidate(merge.child_id)
    assert child.parent_ids == [first, second] and child.pooled
    assert child.components == {"instruction": world.SEED_INSTRUCTION + world.RULE,
                                "generate_content_config": world.CALM_CONFIG.strip()}
    decision = store.decisions(proposal_id=merge.id)[0]
    assert decision.automatic and "is at least the better parent's" in decision.reason
    evidence = proposal_evidence(store, merge)
    assert evidence.rule_accepts and evidence.child_sum >= max(evidence.parent_sums.values())
    assert_no_pair_judged_twice(store, run_id)
    result = load_result(store, run_id)
    assert result.final_score == 1.0 and result.best_candidate_id == child.id
    assert [h["kind"] for h in result.iteration_history] == ["reflection", "reflection", "merge"]
    assert result.iteration_history[-1]["parent_ids"] == [first, second]
    created = [e.payload for e in store.events(run_id, kind=EventKind.PROPOSAL_CREATED)]
    assert created[-1]["proposal_kind"] == "merge" and created[-1]["parent_ids"] == [first,
                                                                                        second]
    assert main(["--db", store.url, "proposals", run_id]) == 0
    listing = capsys.readouterr().out
    assert "merge #1 + #2" in listing
    assert "instruction from #1, generate_content_config from #2" in listing


def test_a_merge_waits_at_the_gate_and_a_person_accepts_it(runner, store, merge_world):
    run_id, handle = runner.start(world.spec(), world.TRAINSET, **world.config(review="review"))
    seen: set[int] = set()
    for _ in range(2):
        decide(runner.wait_for_pending(run_id, seen).id, "accept", author="ana", store=store)
    pending = runner.wait_for_pending(run_id, seen)
    assert_branched(store, run_id)
    assert pending.is_merge and pending.merge.sources["generate_content_config"] in \
        pending.merge.parents
    with pytest.raises(ConfigError, match="is a merge.*accept or reject it"):
        decide(pending.id, "edit", edited_text="anything", store=store)
    decide(pending.id, "accept", author="ana", store=store)
    assert handle.wait(30) == "max_iterations"
    merge = store.get_proposal(pending.id)
    decision = store.decisions(proposal_id=merge.id)[0]
    assert merge.status is ProposalStatus.ACCEPTED and decision.author == "ana"
    assert not decision.automatic
    assert store.get_candidate(merge.child_id).parent_ids == merge.merge.parents
    assert load_view(store, run_id).best_id == merge.child_id


def test_a_rejected_merge_reason_does_not_reach_the_next_reflection(runner, store, script):
    model = script(world.WORLD, world.reply)

    def reflections() -> list[str]:
        return [r.prompt_text for r in script.requests(model)
                if "## Component Text to Improve" in r.prompt_text]

    run_id, handle = runner.start(world.spec(), world.TRAINSET,
                                  **world.config(review="review", max_iterations=4))
    seen: set[int] = set()
    for _ in range(2):
        decide(runner.wait_for_pending(run_id, seen).id, "accept", store=store)
    merge = runner.wait_for_pending(run_id, seen)
    before = len(reflections())
    decide(merge.id, "reject", reason="MERGE REASON keep them apart", store=store)
    wait_until(lambda: len(reflections()) > before, message="the next reflection")

    def settled():  # its proposal waits at the gate, or was invalid and the run ended
        waiting = [p for p in store.proposals(run_id, status=ProposalStatus.PENDING)
                   if p.id not in seen]
        return waiting or not store.get_run(run_id).status.is_active

    outcome = wait_until(settled, message="the fourth iteration to settle")
    if isinstance(outcome, list):
        decide(outcome[0].id, "stop", store=store)
    assert handle.wait(30) in {"user", "max_iterations"}
    assert store.get_proposal(merge.id).status is ProposalStatus.REJECTED
    assert not any("MERGE REASON" in prompt for prompt in reflections())


# --------------------------------------------------------------------------- resume


@pytest.fixture
def fast_heartbeats(monkeypatch):
    monkeypatch.setattr(worker, "STALE_AFTER_SECONDS", 1.5)


@pytest.mark.slow  # real processes: seconds, not the fast tier's 1 s
def test_a_merge_pending_at_the_gate_survives_sigkill(store, merge_world, fast_heartbeats):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STUDIO_STALE_AFTER_SECONDS": "1.5",
           "STUDIO_HEARTBEAT_SECONDS": HEARTBEAT_SECONDS}
    process = zygote.popen([sys.executable, "-m", "tests.engine.merge_resume_worker",
                                store.url], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        run_id = process.stdout.readline().strip()
        seen: set[int] = set()
        pending = None
        while pending is None or not pending.is_merge:
            if pending is not None:
                decide(pending.id, "accept", store=store)
            pending = _next_pending(store, run_id, seen)
        before = (store.count_trials(run_id), [p.id for p in store.proposals(run_id)],
                  len(store.candidates(run_id)))
        evaluated = len(_evaluations(store, run_id, pending.id))
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    manager = get_manager(store)
    wait_until(lambda: run_id in manager.recover_orphans(), timeout=30,
               message="the killed worker's run is found orphaned")
    handle = manager.resume(run_id)
    wait_until(lambda: len(_evaluations(store, run_id, pending.id)) > evaluated, timeout=30,
               message="the resumed engine reaches the merge's gate again")
    assert store.get_proposal(pending.id).status is ProposalStatus.PENDING
    assert (store.count_trials(run_id), [p.id for p in store.proposals(run_id)],
            len(store.candidates(run_id))) == before  # replayed, not proposed again
    decide(pending.id, "accept", store=store)
    assert handle.wait(30) == "max_iterations"
    assert store.get_proposal(pending.id).status is ProposalStatus.ACCEPTED
    assert_no_pair_judged_twice(store, run_id)
    assert load_result(store, run_id).final_score == 1.0


def _next_pending(store, run_id: str, seen: set[int]) -> Proposal:
    found = wait_until(lambda: [p for p in store.proposals(run_id, status=ProposalStatus.PENDING)
                                if p.id not in seen], timeout=60, message="a pending proposal")
    seen.add(found[0].id)
    return found[0]


def _evaluations(store, run_id: str, proposal_id: int) -> list:
    return [e for e in store.events(run_id, kind=EventKind.PROPOSAL_EVALUATED)
            if e.payload.get("proposal_id") == proposal_id]


def test_two_branches_improving_different_agents_are_merged(runner, store, script):
    script(world.GROUP_WORLD, world.group_reply)
    run_id, reason = runner.run(world.group_spec(), world.TRAINSET, **world.config())
    assert reason == "max_iterations"
    first, second = (store.proposals(run_id, iteration=i)[0] for i in (1, 2))
    seed = store.candidates(run_id)[0]
    assert first.parent_id == second.parent_id == seed.id, "the seed no longer branches"
    assert (first.component, second.component) == tuple(world.GROUP_COMPONENTS)
    merge = the_merge(store, run_id)
    assert merge.status is ProposalStatus.ACCEPTED
    assert merge.merge.sources == {"drafter.instruction": first.child_id,
                                   "finisher.generate_content_config": second.child_id}
    child = store.get_candidate(merge.child_id)
    assert child.parent_ids == [first.child_id, second.child_id]
    assert child.components == {"drafter.instruction": world.SEED_INSTRUCTION + world.RULE,
                                "finisher.generate_content_config": world.CALM_CONFIG.strip()}
    result = load_result(store, run_id)
    assert result.final_score == 1.0 and result.best_candidate_id == child.id
    assert_no_pair_judged_twice(store, run_id)
