"""The evolution loop end to end, with scripted models through the real ADK runner + LiteLLM."""

from __future__ import annotations

import pytest

from studio.engine import decide, load_result, override
from studio.engine.hosting.worker import get_manager
from studio.engine.policies.pool import load_view
from studio.engine.run.events import ProposalEvaluated
from studio.model.errors import ConfigError, DatasetError
from studio.model.records import DecisionAction, ProposalStatus, RunStatus, TrialPhase
from studio.runtime.providers.demo import critique
from studio.runtime.providers.scripted import recorded_requests
from tests.helpers import BASE_INSTRUCTION, demo_spec, trainset, wait_until


def test_a_better_instruction_is_found_and_accepted(runner, store):
    run_id, reason = runner.run(demo_spec(), trainset(), max_iterations=4, seed=1)
    result = load_result(store, run_id)
    assert reason == "max_iterations" and result.status == "completed"
    assert result.original_score == 0.0 and result.final_score == 1.0
    assert "Rule:" in result.evolved_components["instruction"]
    accepted = [h for h in result.iteration_history if h["accepted"]]
    assert len(accepted) == 4 and all(h["child_sum"] > h["parent_sum"] for h in accepted)
    lineage = {c.id: c.parent_ids for c in result.candidates}
    assert all(len(parents) == 1 for cid, parents in lineage.items() if cid != min(lineage))
    assert result.to_dict()["candidates"][0]["val_scores"]


def test_the_agent_passed_in_is_never_mutated(store):
    import asyncio

    from studio import EvolutionConfig, evolve
    from tests.helpers import critic, writer

    agent = writer()
    result = asyncio.run(evolve(agent=agent, trainset=trainset(3), critic=critic(),
                                config=EvolutionConfig(max_iterations=2), store=store))
    assert agent.instruction == BASE_INSTRUCTION
    assert result.evolved_components["instruction"] != BASE_INSTRUCTION


def worse_world(script, name="worse"):
    """The reflector proposes a text that makes the writer worse."""
    def reply(request):
        if "## Component Text to Improve" in request.prompt_text:
            return "Write nothing useful."
        if request.json_schema:
            return critique(request.last_user, request.json_schema["properties"])
        return "ok" if "nothing useful" in request.system else \
            "autumn drifts\nglowing light\nthen still"
    return script(name, reply)


def test_a_worse_instruction_is_rejected(runner, store, script):
    run_id, _ = runner.run(demo_spec(worse_world(script)), trainset(3), max_iterations=1)
    proposal = store.proposals(run_id)[0]
    decision = store.decisions(proposal_id=proposal.id)[0]
    assert proposal.status is ProposalStatus.REJECTED
    assert decision.automatic and decision.action is DecisionAction.REJECT
    assert "not above" in decision.reason
    view = load_view(store, run_id)
    assert view.pooled_ids == [view.candidates[0].id]


def test_a_proposal_already_tried_is_invalid_and_costs_no_call(runner, store, script):
    run_id, _ = runner.run(demo_spec(worse_world(script, "same")), trainset(3), max_iterations=2)
    first, *repeats = store.proposals(run_id)
    assert first.status is ProposalStatus.REJECTED and len(repeats) == 3  # asked three times
    for second in repeats:
        assert second.text == first.text and second.status is ProposalStatus.INVALID
        assert second.invalid_reason.startswith("duplicate of candidate #1 (rejected by the "
                                                "acceptance rule")
        assert not store.trials(run_id, proposal_id=second.id)
    assert len(store.candidates(run_id)) == 2  # no child for the duplicate


def test_an_override_flips_an_acceptance_and_reorders_the_front(runner, store, script):
    overridden = []

    def lift_child(event):
        if isinstance(event, ProposalEvaluated) and not overridden:
            for trial in store.trials(event.run_id, proposal_id=event.proposal_id):
                override(trial.id, score=1.0, feedback="a human liked it", author="ana",
                         store=store)
                overridden.append(trial.id)

    run_id, _ = runner.run(demo_spec(worse_world(script, "worse2")), trainset(3),
                           valset=[{"topic": "harbor fog"}, {"topic": "paper lantern"}],
                           listeners=[lift_child], max_iterations=1)
    proposal = store.proposals(run_id)[0]
    assert proposal.status is ProposalStatus.ACCEPTED  # the rule alone would have rejected it
    assert store.decisions(proposal_id=proposal.id)[0].automatic
    view = load_view(store, run_id)
    seed, child = view.pooled_ids
    assert view.best_id == seed and list(view.front) == [seed]
    for trial in store.first_trials(child, list(view.val_ids)).values():
        override(trial.id, score=1.0, author="ana", store=store)
    reordered = load_view(store, run_id)
    assert reordered.best_id == child and list(reordered.front) == [child]
    assert load_result(store, run_id).final_score == 1.0


def test_overrides_reach_the_next_reflection(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=2, review="review")
    seen = set()
    first = runner.wait_for_pending(run_id, seen)
    child_trial = store.trials(run_id, proposal_id=first.id, phase=TrialPhase.CHILD)[0]
    override(child_trial.id, score=0.99, feedback="HUMAN NOTE: too plain", author="ana",
             store=store)
    decide(first.id, "accept", store=store)
    runner.wait_for_pending(run_id, seen)
    decide(seen and max(seen), "stop", store=store)
    handle.wait(20)
    prompts = [r.prompt_text for r in recorded_requests("demo")
               if "## Component Text to Improve" in r.prompt_text]
    assert any("HUMAN NOTE: too plain" in p and "corrected_by_human" in p for p in prompts)


def test_a_rejection_reason_reaches_the_next_reflection(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=3, review="review")
    seen = set()
    first = runner.wait_for_pending(run_id, seen)
    decide(first.id, "reject", reason="do not force three lines", author="ana", store=store)
    second = runner.wait_for_pending(run_id, seen)
    assert "three lines" not in second.text.lower().split("rule:")[-1]
    prompts = [r.prompt_text for r in recorded_requests("demo")
               if "## Component Text to Improve" in r.prompt_text]
    assert "A reviewer rejected the proposed text: do not force three lines" in prompts[-1]
    decide(second.id, "stop", store=store)
    assert handle.wait(20) == "user"
    assert store.get_run(run_id).status is RunStatus.STOPPED


def test_edit_is_rescored_on_the_same_minibatch_and_returns_to_the_gate(runner, store):
    run_id, handle = runner.start(demo_spec(), trainset(4), max_iterations=1, review="review")
    seen = set()
    first = runner.wait_for_pending(run_id, seen)
    edited_text = first.text + "\nAlso use a sensory image."
    decide(first.id, "edit", edited_text=edited_text, reason="add imagery", author="bo",
           store=store)
    edited = runner.wait_for_pending(run_id, seen)
    assert edited.edited_from == first.id and edited.text == edited_text
    assert store.get_proposal(first.id).status is ProposalStatus.EDITED
    first_examples = {t.example_id for t in store.trials(run_id, proposal_id=first.id)}
    edited_examples = {t.example_id for t in store.trials(run_id, proposal_id=edited.id)}
    assert edited_examples == first_examples
    decide(edited.id, "accept", author="bo", store=store)
    assert handle.wait(20) == "max_iterations"
    assert store.get_proposal(edited.id).status is ProposalStatus.ACCEPTED
    assert load_view(store, run_id).best_score > 0


def test_decide_refuses_what_is_not_pending(runner, store):
    from studio.model.errors import ProposalError, RunStateError

    run_id, handle = runner.start(demo_spec(), trainset(3), max_iterations=1, review="review")
    pending = runner.wait_for_pending(run_id, set())
    with pytest.raises(ConfigError, match="not one of"):
        decide(pending.id, "maybe", store=store)
    with pytest.raises(ProposalError, match="same as the proposal"):
        decide(pending.id, "edit", edited_text=pending.text, store=store)
    decide(pending.id, "reject", reason="no", store=store)
    handle.wait(20)
    with pytest.raises(RunStateError, match="already decided by anonymous at .* UTC \\(reject\\)"):
        decide(pending.id, "accept", store=store)


@pytest.mark.parametrize("config, reason", [
    ({"max_iterations": 2}, "max_iterations"),
    ({"max_iterations": 50, "max_metric_calls": 12}, "max_metric_calls"),
    ({"max_iterations": 50, "score_threshold": 0.5}, "score_threshold"),
    ({"max_iterations": 50, "timeout_seconds": 0.01}, "timeout"),
])
def test_stop_conditions(runner, store, config, reason):
    run_id, stopped = runner.run(demo_spec(), trainset(3), **config)
    assert stopped == reason
    run = store.get_run(run_id)
    assert run.stop_reason == reason and run.status is RunStatus.COMPLETED
    if reason == "max_metric_calls":
        assert store.count_trials(run_id) <= 12


def test_patience_stops_a_run_that_no_longer_improves(runner, store, script):
    run_id, reason = runner.run(demo_spec(worse_world(script, "stuck")), trainset(3),
                                max_iterations=20, patience=2)
    assert reason == "patience"  # the second iteration, skipped (it repeats), is not a gain
    assert [p.iteration for p in store.proposals(run_id)] == [1, 2, 2, 2]


def test_user_stop(runner, store):
    run_id, handle = runner.start(demo_spec("scripted/demo@30ms"), trainset(3),
                                  max_iterations=100)
    wait_until(lambda: store.count_trials(run_id) > 0, message="the run scores its first trial")
    get_manager(store).stop(run_id)
    assert handle.wait(20) == "user"
    assert store.get_run(run_id).status is RunStatus.STOPPED
    assert store.get_run(run_id).started_at is not None  # stopped mid-run, not before it began


@pytest.mark.slow
def test_a_seed_makes_runs_reproducible(runner, store):
    def summary(run_id):
        result = load_result(store, run_id)
        return ([c.components for c in result.candidates],
                [(h["parent_id"] - min(c.id for c in result.candidates), h["status"])
                 for h in result.iteration_history],
                sorted((t.example_index, t.score) for t in store.trials(run_id)))

    first, _ = runner.run(demo_spec(), trainset(), max_iterations=3, seed=5, minibatch_size=2)
    second, _ = runner.run(demo_spec(), trainset(), max_iterations=3, seed=5, minibatch_size=2)
    assert summary(first) == summary(second)


@pytest.mark.slow
def test_other_components_evolve(runner, store):
    spec = demo_spec(components=["instruction", "generate_content_config", "output_schema"])
    run_id, _ = runner.run(spec, trainset(3), max_iterations=3)
    proposals = store.proposals(run_id)
    assert [p.component for p in proposals] == ["instruction", "generate_content_config",
                                                "output_schema"]
    assert "temperature: 0.2" in proposals[1].text
    assert '"description": "A haiku and nothing else."' in proposals[2].text
    assert all(p.status is not ProposalStatus.INVALID for p in proposals)


@pytest.mark.parametrize("reflection, reason", [
    ("", "empty text"),
    (BASE_INSTRUCTION, "unchanged"),
    ('{"type": "object", "properties": {"a": {"type": "nope"}}}', "does not compile"),
    ("temperature: [", "not valid YAML"),
])
def test_bad_reflection_output_is_recorded_not_raised(runner, store, script, reflection, reason):
    component = {"does not compile": "output_schema",
                 "not valid YAML": "generate_content_config"}.get(reason, "instruction")

    def reply(request):
        if "## Component Text to Improve" in request.prompt_text:
            return reflection
        from studio.runtime.providers.demo import reply as demo
        return demo(request)

    spec = demo_spec(script("reflect_" + component + str(len(reflection)), reply),
                     components=[component])
    run_id, stopped = runner.run(spec, trainset(3), max_iterations=1)
    proposal = store.proposals(run_id)[0]
    assert stopped == "max_iterations" and proposal.status is ProposalStatus.INVALID
    assert reason in proposal.invalid_reason


def test_a_critic_that_fails_on_every_row_fails_the_run_clearly(runner, store, script):
    def reply(request):
        return "I refuse to give JSON" if request.json_schema else "a poem"

    with pytest.raises(Exception, match="could not evaluate any baseline example"):
        runner.run(demo_spec(script("nojson", reply)), trainset(3), max_iterations=2)
    run = store.list_runs()[0]
    assert run.status is RunStatus.FAILED and "not JSON" in run.error
    trials = store.trials(run.id)
    assert len(trials) == 3 and all(t.score is None and "not JSON" in t.error for t in trials)


def test_bad_datasets_and_components(runner):
    with pytest.raises(DatasetError, match="trainset is empty"):
        runner.create(demo_spec(), [])
    with pytest.raises(DatasetError, match=r"valset\[0\].*extra \['title'\].*lacks \['topic'\]"):
        runner.create(demo_spec(), trainset(2), valset=[{"title": "x"}])
    with pytest.raises(ConfigError, match="unknown component 'prompt'"):
        runner.create(demo_spec(components=["prompt"]), trainset(2))
    with pytest.raises(ConfigError, match="unknown scripted model"):
        runner.create(demo_spec("scripted/missing"), trainset(2))
