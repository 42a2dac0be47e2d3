"""The rules the review pages rely on, in one place: merging corrections, the pending proposal."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig, create_run, decide
from studio.engine.people.gates import latest_pending, merge_correction
from studio.model.errors import PageChangedError, ProposalError
from studio.model.records import (
    AgentSpec,
    Candidate,
    CriticSpec,
    Override,
    Proposal,
    ProposalStatus,
    ReflectionSpec,
    RunSpec,
    content_hash,
)
from tests.helpers import PIPELINE_INSTRUCTIONS


def _override(score, feedback):
    return Override(id=1, trial_id=7, score=score, feedback=feedback,
                    judge_score=0.2, author="ana")


def test_a_new_correction_keeps_what_it_leaves_empty_from_the_active_one():
    active = _override(0.9, "misses the rhyme")
    assert merge_correction(active, None, "too long") == (0.9, "too long")
    assert merge_correction(active, 0.4, "") == (0.4, "misses the rhyme")
    assert merge_correction(active, 0.4, "new") == (0.4, "new")


def test_a_first_correction_is_taken_as_given():
    assert merge_correction(None, 0.5, "") == (0.5, None)
    assert merge_correction(None, None, "note") == (None, "note")


def test_the_pending_proposal_is_the_latest_one_waiting_at_the_gate():
    def proposal(pid, status):
        return Proposal(id=pid, run_id="r", iteration=pid, parent_id=1, component="instruction",
                        text=f"text {pid}", status=status)

    proposals = [proposal(1, ProposalStatus.REJECTED), proposal(2, ProposalStatus.PENDING),
                 proposal(3, ProposalStatus.EVALUATING), proposal(4, ProposalStatus.PENDING)]
    assert latest_pending(proposals).id == 4
    assert latest_pending(proposals[:2]).id == 2
    assert latest_pending([proposals[0], proposals[2]]) is None


REF = "tests.engine.ref_pipeline:pipeline"


def pending_edit_of(store, component: str) -> Proposal:
    """A review run of the pipeline loaded by reference, with a proposal for ``component``
    waiting at the gate (stored as the engine stores one)."""
    spec = RunSpec(agent_ref=REF, critic=CriticSpec(name="rule_critic", agent=AgentSpec(
        name="critic", model="scripted/pipeline")), reflection=ReflectionSpec(
        model="scripted/pipeline"), components=["instruction"])
    run = create_run(store, spec=spec, trainset=[{"topic": "city rain"}, {"topic": "snow owl"}],
                     config=EvolutionConfig(review="review"))
    components = {f"{name}.instruction": text for name, text in PIPELINE_INSTRUCTIONS.items()}
    seed = store.add_candidate(Candidate(run_id=run.id, index=0, components=components,
                                         content_hash=content_hash(components)))
    return store.add_proposal(Proposal(run_id=run.id, iteration=1, parent_id=seed.id,
                                       component=component, text="Polish it.",
                                       status=ProposalStatus.PENDING))


def test_a_gate_edit_of_a_workflow_loaded_by_reference_may_read_earlier_agents_state(store):
    proposal = pending_edit_of(store, "polisher.instruction")
    decision = decide(proposal.id, "edit", edited_text="Polish the haiku. Keep the outline "
                      "{outline} in mind. Draft:\n{draft}", author="ana", store=store)
    assert "{outline}" in decision.edited_text  # written by the outliner, which runs before
    refused = pending_edit_of(store, "outliner.instruction")
    with pytest.raises(ProposalError, match=r"\{draft\}"):  # the writer writes it, later
        decide(refused.id, "edit", edited_text="Outline the topic and its {draft}.",
               author="ana", store=store)


def test_a_gate_edit_where_the_referenced_workflow_cannot_be_imported_reads_the_parents_keys(
        store, monkeypatch):
    """The run executes on a worker that can import the module; the studio's server cannot.
    The edit is still checked (against what the parent's text reads), never lost to an error."""
    from studio.engine.people import gates
    from studio.model.errors import ConfigError

    proposal = pending_edit_of(store, "polisher.instruction")
    spec = store.get_run(proposal.run_id).spec
    assert spec.agent_ref and not spec.agents  # the branch that imports the module

    def unavailable(reference, folder=None):
        raise ConfigError(f"cannot import module for {reference}", where="agent.ref")

    monkeypatch.setattr(gates, "load_agent", unavailable)
    parent_reads = PIPELINE_INSTRUCTIONS["polisher"]
    assert "{draft}" in parent_reads
    decision = decide(proposal.id, "edit", edited_text="Polish it well. Draft:\n{draft}",
                      author="ana", store=store)
    assert decision.edited_text.endswith("{draft}")
    refused = pending_edit_of(store, "polisher.instruction")
    with pytest.raises(ProposalError, match=r"\{mood\}"):
        decide(refused.id, "edit", edited_text="Polish it in a {mood} way.", author="ana",
               store=store)


def test_a_decision_whose_page_showed_another_proposal_is_refused_naming_both(store):
    """A page passes the proposal it showed: a click that lands on a proposal the page swapped
    in (another decider took the one shown) decides nothing and says what happened."""
    seen = pending_edit_of(store, "polisher.instruction")
    swapped_in = store.add_proposal(seen.model_copy(update={"id": None, "iteration": 2,
                                                            "text": "Polish it twice."}))
    decide(seen.id, "accept", author="cli", store=store)
    with pytest.raises(PageChangedError) as refused:
        decide(swapped_in.id, "accept", author="ana", store=store, shown_id=seen.id)
    assert (refused.value.shown_id, refused.value.proposal_id) == (seen.id, swapped_in.id)
    assert str(refused.value).startswith(
        f"the page changed: proposal {swapped_in.id} is now shown, and proposal {seen.id}, "
        "which it showed before, was already decided by cli at ")
    assert "UTC (accept). Nothing was decided" in str(refused.value)
    assert store.decisions(proposal_id=swapped_in.id) == []
    taken = decide(swapped_in.id, "accept", author="ana", store=store, shown_id=swapped_in.id)
    assert (taken.proposal_id, taken.author) == (swapped_in.id, "ana")
