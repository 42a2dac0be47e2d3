"""The loop remembers what was tried (issue 18): the texts a person rejected or edited away, and
the invalid ones, reach the reflection fenced as data; an answer that still repeats one is
refused and the reflection asked again, a bounded number of times, then the iteration is
skipped, said so plainly. The person is heard over the judge; rejection reasons stay with their
agent and component; an edit back to a text the run has is refused."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from studio.engine import build_engine, decide, override
from studio.engine.policies.pool import load_view
from studio.engine.propose.reflection import TRIED_NOTE
from studio.engine.propose.rules import propose_rules
from studio.engine.run.events import ProposalInvalid, SkipCause, TrialCommitted
from studio.engine.run.tried import MAX_ATTEMPTS
from studio.model.errors import ProposalError
from studio.model.records import (
    Candidate,
    EventKind,
    Override,
    Proposal,
    ProposalStatus,
    RunStatus,
    TrialPhase,
    content_hash,
)
from studio.runtime.providers import demo
from studio.runtime.providers.demo import REFLECTION_MARKER
from tests.engine.test_rules import EXAMPLES, judged
from tests.helpers import BASE_INSTRUCTION, demo_spec, pipeline_spec, trainset

_FENCE = re.compile(r"<trials-([0-9a-f]+)>\n(.*?)\n</trials-\1>", re.S)
VALSET = [{"topic": "harbor fog"}, {"topic": "paper lantern"}]


def reflections(script, model: str) -> list[str]:
    return [r.prompt_text for r in script.requests(model) if REFLECTION_MARKER in r.prompt_text]


def fenced_records(prompt: str) -> list[dict]:
    """The records of a reflection prompt's fenced trials (what the reflection reads as data)."""
    return json.loads(_FENCE.search(prompt).group(2))


def tried_in(prompt: str) -> list[dict]:
    return [r["already_tried"] for r in fenced_records(prompt) if "already_tried" in r]


# --------------------------------------------------------------------------- after a "no"


def test_after_a_rejection_the_run_goes_on_to_a_different_proposal_and_improves(
        runner, store, script):
    """The demo reflector proposes the rule the feedback names most, again and again, unless
    its prompt lists the text as already tried: the bug of issue 18 in a scripted world."""
    model = script("memory_demo", demo.reply)
    run_id, handle = runner.start(demo_spec(model), trainset(3), valset=VALSET,
                                  max_iterations=2, review="review")
    seen: set[int] = set()
    first = runner.wait_for_pending(run_id, seen)
    decide(first.id, "reject", reason="not this one", author="alice", store=store)
    second = runner.wait_for_pending(run_id, seen)
    assert second.text != first.text and second.iteration == 2
    decide(second.id, "accept", author="alice", store=store)
    assert handle.wait(30) == "max_iterations"

    prompt = reflections(script, model)[-1]
    [tried] = tried_in(prompt)
    assert tried["text"] == first.text and tried["by"] == "alice"
    assert tried["why"] == "A reviewer rejected the proposed text: not this one"
    assert TRIED_NOTE.strip() in prompt  # outside the fence: it reaches a custom template too
    assert [p.status for p in store.proposals(run_id)] == [ProposalStatus.REJECTED,
                                                          ProposalStatus.ACCEPTED]
    view = load_view(store, run_id)
    assert view.best_id != view.pooled_ids[0] and view.best_score > view.means[view.pooled_ids[0]]


def repeating_world(script, name: str) -> str:
    """A reflection that proposes one text whatever it reads; a writer that text makes worse."""
    def reply(request):
        if REFLECTION_MARKER in request.prompt_text:
            return "Write nothing useful."
        if request.json_schema:
            return demo.critique(request.last_user, request.json_schema["properties"])
        return "ok" if "nothing useful" in request.system else \
            "autumn drifts\nglowing light\nthen still"
    return script(name, reply)


def test_a_reflection_that_always_repeats_skips_the_iteration_after_three_attempts(
        runner, store, script):
    model = repeating_world(script, "memory_repeats")
    run_id, reason = runner.run(demo_spec(model), trainset(3), valset=VALSET, max_iterations=3)
    assert reason == "max_iterations" and store.get_run(run_id).status is RunStatus.COMPLETED

    first, *attempts = store.proposals(run_id)
    assert first.status is ProposalStatus.REJECTED  # by the acceptance rule: worse
    assert [p.iteration for p in attempts] == [2] * MAX_ATTEMPTS + [3] * MAX_ATTEMPTS
    assert all(p.status is ProposalStatus.INVALID and p.invalid_reason.startswith(
        "duplicate of candidate #1 (rejected by the acceptance rule") for p in attempts)
    skipped = store.events(run_id, kind=EventKind.ITERATION_SKIPPED)
    assert [(e.iteration, e.payload["cause"], e.payload["proposal_id"]) for e in skipped] == [
        (2, SkipCause.REPEATED.value, attempts[2].id), (3, SkipCause.REPEATED.value,
                                                        attempts[5].id)]
    said = "the reflection repeated a rejected text 3 times; iteration skipped"
    assert all(e.payload["reason"] == said for e in skipped)
    assert attempts[2].invalid_reason.endswith(said)  # the Proposals page and CLI show it
    # no child, no child trial: a skipped iteration pays only for its parent's minibatch
    assert len(store.candidates(run_id)) == 2
    assert {t.iteration for t in store.trials(run_id, phase=TrialPhase.CHILD)} == {1}

    prompts = reflections(script, model)
    assert len(prompts) == 1 + 2 * MAX_ATTEMPTS
    retry = tried_in(prompts[2])  # iteration 2's second call: its first answer named
    assert retry[0]["outcome"] == "refused just now"
    assert "was refused: duplicate of candidate #1 (rejected by the acceptance rule" in \
        retry[0]["why"]
    assert any(t.get("candidate") == 1 and t.get("by") == "the acceptance rule" for t in retry)


class Killed(BaseException):
    """The process dies here (nothing in the engine catches it, as nothing survives a
    SIGKILL)."""


def test_a_run_killed_between_attempts_resumes_from_the_stored_attempts(runner, store, script):
    model = repeating_world(script, "memory_killed")
    run_id = runner.create(demo_spec(model), trainset(3), VALSET, max_iterations=2)

    def kill_after_the_second_refusal(event):
        refused = [p for p in store.proposals(run_id, iteration=2)
                   if p.status is ProposalStatus.INVALID]
        if isinstance(event, ProposalInvalid) and event.iteration == 2 and len(refused) == 2:
            raise Killed

    with pytest.raises(Killed):
        asyncio.run(build_engine(store, run_id,
                                 listeners=[kill_after_the_second_refusal]).run())
    assert len(reflections(script, model)) == 1 + 2
    assert asyncio.run(build_engine(store, run_id).run()) == "max_iterations"
    assert len(reflections(script, model)) == 1 + MAX_ATTEMPTS  # one more call, not three
    assert len(store.proposals(run_id, iteration=2)) == MAX_ATTEMPTS
    assert [e.iteration for e in store.events(run_id, kind=EventKind.ITERATION_SKIPPED)] == [2]


def test_the_cli_and_the_live_output_say_an_iteration_was_skipped(runner, store, script,
                                                                  capsys):
    from studio.cli import ProgressBar, main

    model = repeating_world(script, "memory_cli")
    lines: list[str] = []

    class Lines:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    run_id, _ = runner.run(demo_spec(model), trainset(3), valset=VALSET, max_iterations=2,
                           listeners=[ProgressBar(Lines())])
    said = "iteration 2 skipped: the reflection repeated a rejected text 3 times"
    assert any(said in line for line in lines)
    assert main(["--db", store.url, "proposals", run_id]) == 0
    assert said in capsys.readouterr().out


def test_the_run_and_proposals_pages_say_an_iteration_was_skipped(runner, store, script):
    from studio.views.skips import skipped_note

    model = repeating_world(script, "memory_pages")
    run_id, _ = runner.run(demo_spec(model), trainset(3), valset=VALSET, max_iterations=2)
    note = skipped_note(store.events(run_id, kind=EventKind.ITERATION_SKIPPED))
    assert note == ("1 iteration ended without a proposal to decide on (each counts as an "
                    "iteration): iteration 2: the reflection repeated a rejected text 3 times; "
                    "iteration skipped")
    assert skipped_note([]) is None


def test_the_rules_operator_does_not_propose_a_text_already_tried(runner, store, script):
    """Rules only: the operator writes one text per parent; once rejected it has nothing new."""
    model = script("memory_rules", demo.reply)
    spec = demo_spec(model)
    spec = spec.model_copy(update={"reflection": spec.reflection.model_copy(
        update={"strategy": "rules"})})
    run_id, handle = runner.start(spec, trainset(3), valset=VALSET, max_iterations=2,
                                  review="review")
    seen: set[int] = set()
    first = runner.wait_for_pending(run_id, seen)
    decide(first.id, "reject", reason="no rules", author="alice", store=store)
    assert handle.wait(30) == "max_iterations"
    second = store.proposals(run_id, iteration=2)
    assert [p.status for p in second] == [ProposalStatus.INVALID]
    assert "nothing new to add" in second[0].invalid_reason
    assert not store.events(run_id, kind=EventKind.ITERATION_SKIPPED)


# --------------------------------------------------------------------------- person over judge


def test_the_reflection_reads_the_persons_correction_not_the_judges_guidance(
        runner, store, script):
    """Audit 6: the judge's guidance and dimension scores leave the prompt on trials a person
    corrected; a score-only correction says the judge's feedback no longer applies."""
    model = script("memory_person", demo.reply)
    words = iter(["HUMAN: the single line is what I want", "HUMAN: keep it plain", None])

    def correct_the_parent(event):
        if isinstance(event, TrialCommitted) and event.iteration == 1:
            trial = store.get_trial(event.trial_id)
            if trial.phase is TrialPhase.PARENT:
                override(trial.id, score=1.0, feedback=next(words), author="ana", store=store)

    spec = demo_spec(model, critic=demo_spec(model).critic.model_copy(
        update={"schema_kind": "advanced"}))
    runner.run(spec, trainset(3), valset=VALSET, max_iterations=1, minibatch_size=3,
               skip_perfect_score=False,  # every parent trial is corrected to 1.0
               listeners=[correct_the_parent])
    prompt = reflections(script, model)[0]
    records = fenced_records(prompt)
    feedback = [r["feedback"] for r in records if "feedback" in r]
    assert len(feedback) == 3 and all(f["corrected_by_human"] for f in feedback)
    assert all(set(f) == {"score", "feedback_text", "corrected_by_human"} for f in feedback)
    texts = {f["feedback_text"] for f in feedback}
    assert texts == {"HUMAN: the single line is what I want", "HUMAN: keep it plain",
                     "A reviewer corrected the judge's score to 1.00; the judge's feedback no "
                     "longer applies."}
    assert "Write exactly three lines." not in prompt  # the judge's guidance, not the person's


def test_the_rules_operator_builds_no_rule_from_a_judge_verdict_corrected_to_a_pass():
    sentence = judged(0, "The capital of France is Paris.")
    assert propose_rules("Answer.", [sentence], EXAMPLES) is not None  # the judge's checks fail
    corrected = judged(0, "The capital of France is Paris.",
                       override=Override(trial_id=1, score=1.0, author="ana"))
    assert propose_rules("Answer.", [corrected], EXAMPLES) is None


# --------------------------------------------------------------------------- per agent


def test_a_writers_reflection_never_hears_the_outliners_rejections(runner, store, script):
    """Audit 7: in a workflow, a rejection reason reaches only its own agent and component."""
    model = script("memory_pipeline", demo.pipeline_reply)
    spec = pipeline_spec(model, components=["outliner.instruction", "writer.instruction"])
    run_id, handle = runner.start(spec, trainset(3), valset=VALSET, max_iterations=3,
                                  review="review")
    seen: set[int] = set()
    outline = runner.wait_for_pending(run_id, seen)
    assert outline.component == "outliner.instruction"
    decide(outline.id, "reject", reason="OUTLINER REASON", author="ana", store=store)
    writer = runner.wait_for_pending(run_id, seen)
    assert writer.component == "writer.instruction"
    decide(writer.id, "reject", reason="WRITER REASON", author="ana", store=store)
    third = runner.wait_for_pending(run_id, seen)
    decide(third.id, "stop", store=store)
    handle.wait(30)

    def of(agent_text: str) -> list[str]:
        return [p for p in reflections(script, model)
                if p.split(REFLECTION_MARKER, 1)[1].strip().startswith(agent_text)]

    writer_prompts = of("Write a haiku")
    assert writer_prompts and not any("OUTLINER REASON" in p or outline.text in p
                                      for p in writer_prompts)
    assert any("OUTLINER REASON" in p for p in of("Outline the topic."))


# --------------------------------------------------------------------------- edits


def test_an_edit_back_to_a_text_the_run_has_is_refused(store):
    """Audit 8: editing back to the seed's text would pool a second, identical candidate."""
    from studio.engine import EvolutionConfig, create_run

    run = create_run(store, spec=demo_spec(), trainset=trainset(2),
                     config=EvolutionConfig(review="review"))

    def candidate(index: int, text: str, parent_ids: list[int]) -> Candidate:
        components = {"instruction": text}
        return store.add_candidate(Candidate(run_id=run.id, index=index, parent_ids=parent_ids,
                                             components=components,
                                             content_hash=content_hash(components)))

    seed = candidate(0, BASE_INSTRUCTION, [])
    child = candidate(1, BASE_INSTRUCTION + "\nRule: Name the topic (name the topic).",
                      [seed.id])
    pending = store.add_proposal(Proposal(
        run_id=run.id, iteration=2, parent_id=child.id, component="instruction",
        text=child.components["instruction"] + "\nRule: three lines.",
        status=ProposalStatus.PENDING))
    with pytest.raises(ProposalError, match=r"candidate #0 \(the seed\) already has this text"):
        decide(pending.id, "edit", edited_text=BASE_INSTRUCTION, author="bo", store=store)
    assert not store.decisions(proposal_id=pending.id)  # refused: nothing recorded
    decision = decide(pending.id, "edit", edited_text=BASE_INSTRUCTION + " Be brief.",
                      author="bo", store=store)
    assert decision.edited_text == BASE_INSTRUCTION + " Be brief."


def test_the_tried_texts_are_bounded_in_count_and_size_and_newest_first(store):
    from studio.engine import EvolutionConfig, create_run
    from studio.engine.run.tried import TRIED_SHOWN, tried_texts
    from studio.model.limits import REFLECTION_FIELD_CHARS
    from studio.model.records import Decision, DecisionAction

    run = create_run(store, spec=demo_spec(), trainset=trainset(2),
                     config=EvolutionConfig(review="review"))
    components = {"instruction": BASE_INSTRUCTION}
    seed = store.add_candidate(Candidate(run_id=run.id, index=0, components=components,
                                         content_hash=content_hash(components)))
    texts = [f"Text {n}. " + "long " * 1000 for n in range(TRIED_SHOWN + 3)]
    for n, text in enumerate(texts, 1):
        proposal = store.add_proposal(Proposal(run_id=run.id, iteration=n, parent_id=seed.id,
                                               component="instruction", text=text))
        store.add_decision(Decision(proposal_id=proposal.id, action=DecisionAction.REJECT,
                                    reason=f"reason {n}", author="alice"))
        store.update_proposal(proposal.id, status=ProposalStatus.REJECTED)
    other = store.add_proposal(Proposal(run_id=run.id, iteration=99, parent_id=seed.id,
                                        component="few_shot", text="another component",
                                        status=ProposalStatus.INVALID, invalid_reason="bad"))
    tried = tried_texts(store, run.id, seed.id, "instruction")
    assert len(tried) == TRIED_SHOWN and other.id not in {t.proposal_id for t in tried}
    assert [t.why for t in tried[:2]] == [
        f"A reviewer rejected the proposed text: reason {len(texts)}",
        f"A reviewer rejected the proposed text: reason {len(texts) - 1}"]
    record = tried[0].record()["already_tried"]
    assert len(record["text"]) < REFLECTION_FIELD_CHARS + 60 and "characters cut" in record["text"]
    assert len(tried_texts(store, run.id, seed.id, "instruction", limit=None)) == len(texts)
