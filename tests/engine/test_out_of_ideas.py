"""A person who rejects every proposal ends the run clearly (issue 32): once the reflection has
had no new idea for ``out_of_ideas_after`` iterations in a row (it only repeats the texts
already rejected, each iteration paying its retries), the run ends ``out_of_ideas``, says what
to do instead, and counts the reflection calls it saved. Before, it went on skipping iterations
at three reflection calls each and ended "reached its iteration limit"."""

from __future__ import annotations

import contextlib

import pytest

from studio.engine import EvolutionConfig, decide
from studio.engine.people.gates import pending_in_order
from studio.engine.run.events import OutOfIdeas
from studio.model.errors import RunStateError
from studio.model.records import EventKind, RunStatus, StopReason
from studio.views.run_notes import run_notes
from tests.helpers import demo_spec, trainset

VALSET = [{"topic": "harbor fog"}, {"topic": "desert wind"}]


def reject_everything(store, run_id: str, handle) -> None:
    while handle.running:
        for proposal in pending_in_order(store.proposals(run_id)):
            with contextlib.suppress(RunStateError):  # decided meanwhile
                decide(proposal.id, "reject", reason="not this", author="ana", store=store)
        handle.join(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("lanes", [1, 3])
def test_rejecting_every_proposal_ends_the_run_out_of_ideas(runner, store, lanes):
    run_id, handle = runner.start(demo_spec(), trainset(5), VALSET, max_iterations=12,
                                  review="review", parallel_proposals=lanes)
    reject_everything(store, run_id, handle)
    assert handle.wait(10) is StopReason.OUT_OF_IDEAS
    run = store.get_run(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.COMPLETED, StopReason.OUT_OF_IDEAS)
    assert run.stop_reason.words == ("the reflection has no new idea after your rejections: "
                                     "try editing, or a different reflection model")
    [stored] = store.events(run_id, kind=EventKind.OUT_OF_IDEAS)
    ended = OutOfIdeas.from_stored(stored)
    assert ended.iterations == EvolutionConfig().out_of_ideas_after == 3
    assert ended.reflection_calls >= ended.iterations  # each skipped iteration asked again
    assert ended.iteration < 12 and ended.reflection_calls_saved > 0
    skipped = store.events(run_id, kind=EventKind.ITERATION_SKIPPED)
    assert len(skipped) >= 3
    [note] = run_notes(store.events(run_id))  # the Run page's note (the CLI prints the same)
    assert note.startswith("the reflection had no new idea in 3 iterations in a row") and \
        f"saving about {ended.reflection_calls_saved} more" in note and "try editing" in note


@pytest.mark.slow
def test_out_of_ideas_after_is_a_setting_and_none_turns_it_off(runner, store):
    assert EvolutionConfig(out_of_ideas_after=None).out_of_ideas_after is None
    with pytest.raises(Exception, match="out_of_ideas_after"):
        EvolutionConfig(out_of_ideas_after=0)
    run_id, handle = runner.start(demo_spec(), trainset(5), VALSET, max_iterations=8,
                                  review="review", out_of_ideas_after=None)
    reject_everything(store, run_id, handle)
    assert handle.wait(10) is StopReason.MAX_ITERATIONS
