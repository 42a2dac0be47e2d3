"""What the studio guarantees a person holds for a group run as for one agent: the review gate
(accept, edit, reject a ``writer.instruction`` proposal), corrections that change acceptance and
reach the next reflection, resume after SIGKILL with nothing judged twice, exports keyed by
agent with the pipeline's authors, and judge-human agreement. The world is ``scripted/pipeline``
(outliner -> writer -> polisher, real ADK SequentialAgent behind LiteLLM), where only the
writer's instruction changes the score."""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest
import yaml

from studio.critics.agreement import agreement_from_store
from studio.engine import decide, load_result, override
from studio.engine.policies.pool import load_view
from studio.engine.run.events import ProposalEvaluated
from studio.model.errors import ProposalError
from studio.model.records import (
    AgentSpec,
    CriticSpec,
    DecisionAction,
    ProposalStatus,
    ReflectionSpec,
    RunSpec,
    RunStatus,
    TrialPhase,
)
from studio.projects.export import export_run
from studio.runtime.providers.scripted import recorded_requests
from studio.store import open_store
from tests.helpers import ROOT, CliWorker, trainset, wait_until

PIPELINE = ("outliner", "writer", "polisher")
WRITER = "Write a haiku from this outline: {outline}"
REFLECTION_MARKER = "## Component Text to Improve"


def pipeline_spec(model: str = "scripted/pipeline") -> RunSpec:
    return RunSpec(
        agents=[AgentSpec(name="outliner", model=model, instruction="Outline the topic.",
                          output_key="outline"),
                AgentSpec(name="writer", model=model, instruction=WRITER, output_key="draft"),
                AgentSpec(name="polisher", model=model,
                          instruction="Polish the haiku. Draft:\n{draft}")],
        critic=CriticSpec(name="pipeline_critic", agent=AgentSpec(name="critic", model=model)),
        reflection=ReflectionSpec(model=model), components=["writer.instruction"])


def writer_reflections(marker: str) -> list[str]:
    """Reflection prompts (the writer's: only its instruction evolves) that contain ``marker``."""
    return [r.prompt_text for r in recorded_requests("pipeline")
            if REFLECTION_MARKER in r.prompt_text and marker in r.prompt_text]


# --------------------------------------------------------------------------- the review gate


@pytest.mark.slow
def test_review_gate_rejects_edits_and_accepts_a_writer_proposal(runner, store):
    run_id, handle = runner.start(pipeline_spec(), trainset(3), max_iterations=2,
                                  review="review")
    seen: set[int] = set()
    first = runner.wait_for_pending(run_id, seen)
    assert first.component == "writer.instruction" and first.text.startswith(WRITER)
    reason = "GROUP REASON: do not force three lines"  # the demo reflector honours it
    decide(first.id, "reject", reason=reason, author="ana", store=store)

    second = runner.wait_for_pending(run_id, seen)
    assert second.component == "writer.instruction" and second.iteration == 2
    assert writer_reflections(f"A reviewer rejected the proposed text: {reason}")
    assert "three lines" not in second.text.split("Rule:", 1)[-1]
    with pytest.raises(ProposalError, match=r"\{draft\}.*no agent before writer"):
        decide(second.id, "edit", edited_text=WRITER + " Improve {draft}.", store=store)
    edited_text = second.text + "\nRule: Write exactly three lines (three lines)."
    decide(second.id, "edit", edited_text=edited_text, author="bo", store=store)

    edited = runner.wait_for_pending(run_id, seen)
    assert (edited.edited_from, edited.component, edited.text) == (
        second.id, "writer.instruction", edited_text)
    decide(edited.id, "accept", author="bo", store=store)
    assert handle.wait(30) == "max_iterations"

    decided = {p.id: p.status for p in store.proposals(run_id)}
    assert decided == {first.id: ProposalStatus.REJECTED, second.id: ProposalStatus.EDITED,
                       edited.id: ProposalStatus.ACCEPTED}
    assert all(not d.automatic for d in store.decisions(run_id))
    child = store.get_candidate(store.get_proposal(edited.id).child_id)
    assert child.components == {"writer.instruction": edited_text} and child.pooled
    rules = edited_text.split("{outline}", 1)[1]  # ADK fills {outline} from state
    writer_prompts = [r.system for r in recorded_requests("pipeline")
                      if 'internal name is "writer"' in r.system and rules in r.system]
    assert writer_prompts, "the edited instruction ran as the writer's"


# --------------------------------------------------------------------------- corrections


def test_an_override_turns_an_accepted_writer_proposal_into_a_rejection(runner, store):
    corrected: list[int] = []

    def sink_child(event):
        if isinstance(event, ProposalEvaluated) and not corrected:
            for trial in store.trials(event.run_id, proposal_id=event.proposal_id,
                                      phase=TrialPhase.CHILD):
                override(trial.id, score=0.0, feedback="a human disliked it", author="ana",
                         store=store)
                corrected.append(trial.id)

    run_id, _ = runner.run(pipeline_spec(), trainset(3), listeners=[sink_child],
                           max_iterations=1)
    (proposal,) = store.proposals(run_id)
    decision = store.decisions(proposal_id=proposal.id)[0]
    assert corrected and proposal.status is ProposalStatus.REJECTED
    assert decision.automatic and decision.action is DecisionAction.REJECT
    judged = [store.get_trial(t) for t in corrected]
    assert sum(t.score for t in judged) > 0.0, "without the person the rule would accept"
    assert load_view(store, run_id).pooled_ids == [load_view(store, run_id).candidates[0].id]


def test_a_correction_on_a_group_trial_reaches_the_next_reflection(runner, store):
    run_id, handle = runner.start(pipeline_spec(), trainset(3), max_iterations=2,
                                  review="review")
    seen: set[int] = set()
    first = runner.wait_for_pending(run_id, seen)
    child_trial = store.trials(run_id, proposal_id=first.id, phase=TrialPhase.CHILD)[0]
    note = "GROUP NOTE: the writer ignores the outline's closing"
    override(child_trial.id, score=0.97, feedback=note, author="ana", store=store)
    decide(first.id, "accept", store=store)
    second = runner.wait_for_pending(run_id, seen)
    decide(second.id, "stop", store=store)
    assert handle.wait(30) == "user"
    prompts = writer_reflections(note)
    assert prompts and "corrected_by_human" in prompts[-1] and '"score": 0.97' in prompts[-1]
    assert "writer" in prompts[-1] and "outliner" in prompts[-1]  # the pipeline is shown


# --------------------------------------------------------------------------- resume


def group_project(folder) -> object:
    data = yaml.safe_load((ROOT / "examples" / "pipeline_scripted.yaml").read_text())
    data["run"].update(max_iterations=4)
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_killed_group_run_resumes_without_judging_anything_twice(tmp_path, database_url):
    store = open_store(database_url, cached=False)
    worker = CliWorker(database_url, group_project(tmp_path))
    try:
        run_id = worker.start()
        wait_until(lambda: len(store.decisions(run_id)) >= 1 and store.count_trials(run_id) >= 9,
                   timeout=90, message="the group run decides its first proposal")
        first = store.trials(run_id)[0]
        override(first.id, score=1.0, feedback="human: fine", author="ana", store=store)
        worker.kill()
        before = {t.id: (t.candidate_id, t.example_id, t.score) for t in store.trials(run_id)}
        assert store.get_run(run_id).status is RunStatus.RUNNING  # killed, not finished
        worker.resume()
        worker.wait_exit(120)
        run = store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.stop_reason == "max_iterations"
        after = store.trials(run_id)
        pairs = Counter((t.candidate_id, t.example_id) for t in after)
        assert max(pairs.values()) == 1, "a (candidate, example) was judged twice"
        assert {t.id: (t.candidate_id, t.example_id, t.score) for t in after
                if t.id in before} == before
        assert store.get_trial(first.id).effective_score == 1.0
        result = load_result(store, run_id)
        assert set(result.evolved_components) == {"writer.instruction"}
        assert {row["iteration"] for row in result.iteration_history} == {1, 2, 3, 4}
        assert all([e["author"] for e in t.trace["events"]] == list(PIPELINE) for t in after)
    finally:
        worker.kill()
        store.close()


# --------------------------------------------------------------------------- export, agreement


def test_a_group_run_exports_components_by_agent_and_who_said_what(runner, store, tmp_path):
    run_id, _ = runner.run(pipeline_spec(), trainset(3), max_iterations=2)
    corrected = store.trials(run_id)[0]
    override(corrected.id, score=0.5, feedback="human view", author="ana", store=store)

    (jsonl,) = export_run(store, run_id, "jsonl", tmp_path / "run.jsonl")
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    candidates = [line for line in lines if line["type"] == "candidate"]
    trials = [line for line in lines if line["type"] == "trial"]
    assert all("component.writer.instruction" in c for c in candidates)
    assert not any(k == "component.instruction" for c in candidates for k in c)
    assert any("Rule:" in c["component.writer.instruction"] for c in candidates)
    assert len(trials) == store.count_trials(run_id)
    for trial in trials:
        assert [s["author"] for s in trial["steps"]] == list(PIPELINE)
        assert trial["steps"][-1]["text"] == trial["output"]  # the primary's reply is scored
    (row,) = [t for t in trials if t["trial_id"] == corrected.id]
    assert (row["effective_score"], row["override_author"]) == (0.5, "ana")

    paths = export_run(store, run_id, "csv", tmp_path / "run")
    with open(paths[0], newline="") as handle:
        assert "component.writer.instruction" in next(csv.reader(handle))
    with open(paths[1], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [s["author"] for s in json.loads(rows[0]["steps"])] == list(PIPELINE)


def test_agreement_on_a_group_run_compares_the_judge_of_the_primary_output(runner, store):
    run_id, _ = runner.run(pipeline_spec(), trainset(3), max_iterations=1)
    trials = [t for t in store.trials(run_id) if t.score is not None][:3]
    humans = [1.0, 0.0, 0.6]
    for trial, human in zip(trials, humans, strict=True):
        override(trial.id, score=human, feedback="human view", author="ana", store=store)
    summary = agreement_from_store(store, run_id=run_id, threshold=0.5)
    report = summary.per_critic["pipeline_critic"]
    assert summary.overall.count == report.count == 3 and set(summary.per_run) == {run_id}
    expected_mae = sum(abs(t.score - h) for t, h in zip(trials, humans, strict=True)) / 3
    assert report.mae == pytest.approx(expected_mae)
    disagreement = {d.trial_id for d in report.disagreements}
    assert disagreement <= {t.id for t in trials}
    for trial in trials:
        assert trial.output == trial.trace["events"][-1]["text"]  # the polisher's reply
