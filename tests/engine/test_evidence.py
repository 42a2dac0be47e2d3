"""One evidence: a proposal's sums are computed by one function, from the minibatch the proposal
records, judged and effective; a decision keeps what it was made on; and every history (the
CLI, the library's ``iteration_history``, the Proposals page, exports) shows the same sums now
and at decision."""

from __future__ import annotations

import json
import math

import pytest

from studio.cli import main
from studio.engine import decide, load_result, override
from studio.engine.people.history import proposal_rows
from studio.engine.policies.evidence import (
    compare,
    evidence_for,
    evidence_trials,
    proposal_evidence,
)
from studio.model.evidence import Sums
from studio.model.records import (
    Candidate,
    MergeDetail,
    Proposal,
    ProposalKind,
    ProposalStatus,
    Run,
    Split,
    Trial,
    TrialPhase,
    content_hash,
)
from studio.projects.export import export_run
from studio.views.tables import proposal_history
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset, wait_until

# --------------------------------------------------------------------------- the rule (pure)


def test_judged_and_effective_sums_leave_out_what_could_not_be_evaluated():
    # example -> (judge's score, effective score)
    parent = {1: (0.5, 0.5), 2: (0.5, 0.5), 3: (None, None), 4: (0.2, 0.9)}
    child = {1: (0.5, 0.5), 2: (0.4, 0.9), 3: (1.0, 1.0), 4: (None, 0.3), 7: (1.0, 1.0)}
    evidence = compare([parent], child, [1, 2, 3, 4, 6])  # 6: never scored; 7: not in it
    # judged: examples 1 and 2 (3: the parent could not be evaluated; 4: the judge could not
    # evaluate the child, a person scored it)
    assert evidence.judged == Sums(parent_sum=1.0, child_sum=0.9, compared=2)
    # effective: 1, 2 and 4 (corrected parent 0.9, the person's 0.3 for the child)
    assert evidence.effective == Sums(parent_sum=1.9, child_sum=1.7, compared=3)
    assert not evidence.rule_accepts and evidence.corrected
    assert (evidence.parent_sum, evidence.child_sum, evidence.compared) == (1.9, 1.7, 3)


def test_a_reflection_must_beat_its_parent_and_nothing_compared_never_accepts():
    same = {1: (0.5, 0.5)}
    assert not compare([same], same, [1]).rule_accepts  # equal is not strictly better
    assert compare([same], {1: (0.5, 0.6)}, [1]).rule_accepts
    assert not compare([{}], {}, [1, 2]).rule_accepts


def test_a_merge_is_judged_against_the_better_parent_and_a_tie_accepts():
    a = {1: (1.0, 1.0), 2: (0.0, 0.0), 3: (0.2, 0.2)}
    b = {1: (0.0, 0.0), 2: (1.0, 1.0), 3: (0.4, 0.4)}
    child = {1: (1.0, 1.0), 2: (0.4, 0.4), 3: (None, None)}
    evidence = compare([a, b], child, [1, 2, 3], merge=True, parent_ids=[10, 20])
    assert evidence.compared == 2 and evidence.parent_sums == {10: 1.0, 20: 1.0}
    assert evidence.better_parent == 10  # ties: the first parent
    assert evidence.child_sum == 1.4 and evidence.rule_accepts  # example 3: not evaluable
    tie = {1: (0.5, 0.5), 2: (0.5, 0.5)}
    assert compare([a, b], tie, [1, 2], merge=True, parent_ids=[10, 20]).rule_accepts
    assert not compare([a, b], {1: (0.5, 0.5), 2: (0.4, 0.4)}, [1, 2], merge=True,
                       parent_ids=[10, 20]).rule_accepts


# --------------------------------------------------------------------------- from the store


def _scored_run(store) -> tuple[Proposal, Proposal]:
    """A reflection (parent #0 -> child #1) and a merge (#1 + #2 -> #3), with hand-set judge
    scores, one that could not be evaluated and a person's corrections."""
    run = store.create_run(Run(id="ev", name="evidence"))
    store.add_examples(run.id, Split.TRAIN, [{"t": i} for i in range(4)])
    ex = store.example_ids(run.id)[Split.TRAIN]
    cands = [store.add_candidate(Candidate(run_id=run.id, index=i, parent_ids=parents,
                                           components={"instruction": f"v{i}"},
                                           content_hash=content_hash({"instruction": f"v{i}"})))
             for i, parents in enumerate([[], [], [], []])]
    ids = [c.id for c in cands]

    def score(candidate, example, judge, phase=TrialPhase.PARENT, proposal_id=None):
        return store.add_trial(Trial(run_id=run.id, candidate_id=candidate, example_id=example,
                                     split=Split.TRAIN, example_index=example, phase=phase,
                                     proposal_id=proposal_id, score=judge))

    reflection = store.add_proposal(Proposal(run_id=run.id, iteration=1, parent_id=ids[0],
                                             component="instruction", text="v1",
                                             child_id=ids[1], minibatch=ex[:3]))
    for example, judge in zip(ex[:3], (0.0, 0.0, None), strict=True):
        score(ids[0], example, judge)
    corrected = score(ids[1], ex[0], 0.25, TrialPhase.CHILD, reflection.id)
    score(ids[1], ex[1], 0.5, TrialPhase.CHILD, reflection.id)
    score(ids[1], ex[2], 1.0, TrialPhase.CHILD, reflection.id)
    score(ids[1], ex[0], 0.9, TrialPhase.CHILD, reflection.id)  # not the first: never read
    store.add_override(corrected.id, score=0.75, feedback=None, author="ana")
    merge = store.add_proposal(Proposal(
        run_id=run.id, iteration=2, parent_id=ids[1], component="", text="merge",
        kind=ProposalKind.MERGE, child_id=ids[3], minibatch=[ex[1], ex[3]],
        merge=MergeDetail(parents=[ids[1], ids[2]], ancestor=ids[0],
                          sources={"instruction": ids[1]}, subsample=[ex[1], ex[3]])))
    # #1's first trial on the second example is its child trial above (0.5): this one is not
    for candidate, scores in ((ids[1], (None, 0.25)), (ids[2], (None, 0.75)),
                              (ids[3], (0.75, 0.5))):
        for example, judge in zip((ex[1], ex[3]), scores, strict=True):
            score(candidate, example, judge, TrialPhase.VALSET)
    return reflection, merge


def test_one_proposal_many_proposals_and_the_trials_behind_them_agree(store):
    reflection, merge = _scored_run(store)
    evidence = proposal_evidence(store, reflection)
    # parent 0.0 + 0.0 (the third could not be evaluated), child 0.25 + 0.5 judged,
    # 0.75 + 0.5 after the correction
    assert evidence.judged == Sums(parent_sum=0.0, child_sum=0.75, compared=2)
    assert evidence.effective == Sums(parent_sum=0.0, child_sum=1.25, compared=2)
    assert evidence.rule_accepts
    merged = proposal_evidence(store, merge)
    # the second example: #2 could not be evaluated; the fourth: #1 0.25, #2 0.75, child 0.5
    assert merged.effective == Sums(parent_sum=0.75, child_sum=0.5, compared=1)
    assert merged.parent_sums == {merge.merge.parents[0]: 0.25, merge.merge.parents[1]: 0.75}
    assert merged.better_parent == merge.merge.parents[1] and not merged.rule_accepts
    assert evidence_for(store, "ev", [reflection, merge]) == {reflection.id: evidence,
                                                             merge.id: merged}
    detail = evidence_trials(store, merge)
    assert detail.evidence == merged
    assert [t.candidate_id for t in detail.parent] == [merge.merge.parents[1]] * 2
    assert len(evidence_trials(store, reflection).child) == 3


# --------------------------------------------------------------------------- in runs


def _sums(trials) -> float:
    return math.fsum(t.effective_score for t in trials)


def test_after_a_correction_every_history_shows_the_sums_now_and_at_decision(
        runner, store, tmp_path, capsys):
    run_id, _ = runner.run(demo_spec(), trainset(3), valset=[{"topic": "harbor fog"}],
                           max_iterations=1, minibatch_size=3)
    [proposal] = store.proposals(run_id)
    parent = store.trials(run_id, phase=TrialPhase.PARENT, iteration=1)
    child = store.trials(run_id, proposal_id=proposal.id, phase=TrialPhase.CHILD)
    # recorded with the proposal; the trials are stored as they finish, in any order
    assert sorted(proposal.minibatch) == sorted(t.example_id for t in parent)
    seen = store.decisions(proposal_id=proposal.id)[0].evidence
    assert seen.effective == Sums(parent_sum=_sums(parent), child_sum=_sums(child), compared=3)
    assert seen == seen.model_copy(update={"judged": seen.effective})  # nothing corrected yet

    override(parent[0].id, score=0.8, author="ana", store=store)
    now = _sums(parent) - parent[0].score + 0.8
    label = (f"at decision {seen.parent_sum:.3f} → {seen.child_sum:.3f} · now {now:.3f} → "
             f"{seen.child_sum:.3f} (corrected since)")

    assert main(["--db", store.url, "proposals", run_id, "--json"]) == 0
    [cli] = json.loads(capsys.readouterr().out)
    assert main(["--db", store.url, "proposals", run_id]) == 0
    assert label in capsys.readouterr().out
    [history] = load_result(store, run_id).iteration_history
    [page] = proposal_history(proposal_rows(store, run_id)).to_dict("records")
    [path] = export_run(store, run_id, "jsonl", tmp_path / "run.jsonl")
    [exported] = [line for line in map(json.loads, path.read_text().splitlines())
                  if line["type"] == "proposal"]
    for row in (cli, history):
        assert row["parent_sum"] == pytest.approx(now) and row["evidence"] == label
        assert row["now"]["judged"] == seen.judged.model_dump()  # the judge's sums stay
        assert row["at_decision"]["effective"] == seen.effective.model_dump()
        assert row["corrected_since"] and row["accepted"] == (proposal.status.value == "accepted")
    assert page["parent_sum"] == pytest.approx(now) and page["evidence"] == label
    assert exported["now_parent_sum"] == pytest.approx(now)
    assert exported["at_decision_parent_sum"] == seen.parent_sum
    assert exported["now_judged_parent_sum"] == seen.judged.parent_sum
    assert exported["evidence"] == label and exported["corrected_since"]


def test_a_person_s_decision_keeps_the_evidence_they_saw(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), valset=[{"topic": "harbor fog"}],
                                  max_iterations=1, minibatch_size=3, review="review")
    try:
        pending = runner.wait_for_pending(run_id, set())
        trials = store.trials(run_id, proposal_id=pending.id, phase=TrialPhase.CHILD)
        override(trials[0].id, score=0.0, author="ana", store=store)  # before deciding
        shown = proposal_evidence(store, pending)
        decision = decide(pending.id, "reject", reason="too plain", author="ana", store=store)
        assert decision.evidence == shown
        assert store.decisions(proposal_id=pending.id)[0].evidence == shown
        wait_until(lambda: store.get_proposal(pending.id).status is ProposalStatus.REJECTED)
    finally:
        handle.wait(30)
    override(trials[1].id, score=0.0, author="bo", store=store)  # after deciding
    [row] = proposal_rows(store, run_id)
    assert row.at_decision == shown and row.now != shown
    assert row.now.child_sum == pytest.approx(shown.child_sum - trials[1].score)
    assert (row.decided_by, row.reason, row.changed_since_decision) == ("ana", "too plain",
                                                                        True)


def test_an_invalid_attempt_reads_plainly_with_no_evidence(runner, store, script, capsys):
    from studio.runtime.providers import demo

    def repeats_the_parent(request):
        if demo.REFLECTION_MARKER in request.prompt_text:
            return BASE_INSTRUCTION
        return demo.reply(request)

    spec = demo_spec()
    spec.reflection.model = script(repeats_the_parent)
    run_id, _ = runner.run(spec, trainset(3), max_iterations=1, minibatch_size=3)
    rows = proposal_rows(store, run_id)  # each attempt of the iteration is a proposal
    for row in rows:
        assert row.status is ProposalStatus.INVALID and row.now is None and row.decision is None
        assert row.invalid_reason and row.reason == row.invalid_reason
        assert row.minibatch and row.as_dict()["parent_sum"] is None
    assert main(["--db", store.url, "proposals", run_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    for row, line in zip(rows, lines, strict=False):
        assert "invalid" in line and f"({row.invalid_reason})" in line
