"""A child's validation started in the slots its minibatch leaves idle
(studio.engine.scoring.prefetch):
it changes when calls are made, never which trials are stored."""

from __future__ import annotations

from studio.engine.run.events import ProposalCreated, ProposalEvaluated
from studio.model.records import ProposalStatus, TrialPhase
from studio.runtime.providers.demo import REFLECTION_MARKER, critique
from studio.runtime.providers.scripted import recorded_requests, request_mark
from tests.helpers import demo_spec, trainset

VALSET = [{"topic": t} for t in ("harbor fog", "desert wind", "pine smoke", "tide pools",
                                 "night train", "paper lanterns")]
SETTINGS = {"minibatch_size": 2, "max_concurrency": 4, "max_iterations": 1, "seed": 1}


class ChildPhase:
    """Listener: the agent calls made between a proposal's creation and its evaluation (the
    child on its minibatch, plus whatever validation started with it)."""

    def __init__(self, model: str) -> None:
        self.model, self.since, self.agent_calls = model, None, []

    def __call__(self, event) -> None:
        if isinstance(event, ProposalCreated):
            self.since = request_mark()
        elif isinstance(event, ProposalEvaluated) and self.since is not None:
            self.agent_calls += [r for r in recorded_requests(self.model, since=self.since)
                                 if r.json_schema is None and REFLECTION_MARKER not in
                                 r.prompt_text]


def child_trials(store, run_id):
    proposal = store.proposals(run_id)[0]
    return proposal, store.trials(run_id, candidate_id=proposal.child_id)


def test_an_accepted_childs_validation_starts_with_its_minibatch_and_is_stored_once(runner,
                                                                                    store):
    seen = ChildPhase("demo")
    run_id, reason = runner.run(demo_spec(), trainset(3), valset=VALSET, listeners=[seen],
                                **SETTINGS)
    assert reason == "max_iterations"
    proposal, trials = child_trials(store, run_id)
    assert proposal.status is ProposalStatus.ACCEPTED
    # 2 minibatch chains + the 2 idle slots of 4 filled with validation examples
    assert len(seen.agent_calls) == 4
    validated = [t for t in trials if t.phase is TrialPhase.VALSET]
    assert sorted(t.example_index for t in validated) == list(range(len(VALSET)))
    assert len({t.example_id for t in trials}) == len(trials)  # no pair judged twice


def worse_world(script):
    """The reflector proposes a text that makes the writer worse: the rule rejects it."""
    def reply(request):
        if REFLECTION_MARKER in request.prompt_text:
            return "Write nothing useful."
        if request.json_schema:
            return critique(request.last_user, request.json_schema["properties"])
        return "ok" if "nothing useful" in request.system else \
            "autumn drifts\nglowing light\nthen still"
    return script("prefetch_worse", reply)


def test_a_rejected_childs_early_validation_is_never_stored(runner, store, script):
    seen = ChildPhase("prefetch_worse")
    run_id, _ = runner.run(demo_spec(worse_world(script)), trainset(3), valset=VALSET,
                           listeners=[seen], **SETTINGS)
    proposal, trials = child_trials(store, run_id)
    assert proposal.status is ProposalStatus.REJECTED
    assert {t.phase for t in trials} == {TrialPhase.CHILD} and len(trials) == 2
    child_calls = [r for r in recorded_requests("prefetch_worse")
                   if "nothing useful" in r.system and r.json_schema is None]
    assert 2 <= len(child_calls) <= 4  # the minibatch, and at most the 2 idle slots' chains


def test_under_a_metric_call_budget_nothing_is_started_early(runner, store):
    seen = ChildPhase("demo")
    runner.run(demo_spec(), trainset(3), valset=VALSET, listeners=[seen],
               **SETTINGS | {"max_metric_calls": 100})
    assert len(seen.agent_calls) == 2  # the minibatch's chains only: nothing the cap misses
