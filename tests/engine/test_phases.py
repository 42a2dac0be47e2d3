"""Progress that says what is happening: each phase of a run is stored as it starts, with its
model and an estimate learned from the phases of this run that ended (per proposal, per
example); the Run page and the CLI add the time so far."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from studio.cli.common import ProgressBar
from studio.engine.run.events import Phase, PhaseStarted
from studio.model.config import EvolutionConfig
from studio.model.records import EventKind, Run, RunEvent, RunStatus
from studio.views.tables import current_phase, phase_line, progress_summary
from tests.helpers import demo_spec, trainset


def test_each_phase_is_said_with_its_model_and_a_pace_learned_from_the_run(runner, store):
    run_id, _ = runner.run(demo_spec("scripted/demo@20ms"), trainset(3), max_iterations=3,
                           seed=1)
    phases = [PhaseStarted.from_stored(e) for e in store.events(run_id)
              if e.kind is EventKind.PHASE_STARTED]
    seed = phases[0]
    assert (seed.phase, seed.items, seed.model) == (Phase.SCORING_SEED, 3, "scripted/demo@20ms")
    reflections = [p for p in phases if p.phase is Phase.REFLECTING]
    assert len(reflections) == 3 and reflections[0].seconds_per_item is None
    assert [p.learned_from for p in reflections] == [0, 1, 2]
    assert all(p.seconds_per_item > 0.0 for p in reflections[1:])  # a scripted call's 20 ms
    checkpoint = store.load_checkpoint(run_id)[1]
    assert len(checkpoint["phase_seconds"][Phase.REFLECTING.value]) == 3  # a resume keeps it


def reflecting(seconds_per_item: float | None, learned_from: int = 0) -> PhaseStarted:
    return PhaseStarted(run_id="r", iteration=1, phase=Phase.REFLECTING, model="local/smollm2",
                        seconds_per_item=seconds_per_item, learned_from=learned_from)


def test_a_phase_says_what_with_which_model_for_how_long_and_its_pace():
    assert phase_line(reflecting(540.0, 1), 240.0) == (
        "reflecting with local/smollm2: 4 min 00 s so far, about 9 min 00 s per proposal on "
        "this machine")
    assert phase_line(reflecting(None), 65.0) == (
        "reflecting with local/smollm2: 1 min 05 s so far, no estimate yet (this run's first "
        "proposal)")
    scoring = PhaseStarted(run_id="r", iteration=0, phase=Phase.SCORING_SEED, model="m",
                           items=4, seconds_per_item=2.5)
    assert phase_line(scoring) == ("scoring the seed on the validation set (4 examples) with m: "
                                   "about 10 s on this machine (2 s per example)")
    waiting = PhaseStarted(run_id="r", iteration=2, phase=Phase.AWAITING_DECISION,
                           proposal_id=7)
    assert phase_line(waiting, 30.0) == "waiting for your decision on proposal 7: 30 s so far"


def test_the_run_page_counts_the_time_so_far_from_when_the_phase_was_stored():
    now = datetime(2030, 1, 1, tzinfo=UTC)
    event = RunEvent(run_id="r", kind=EventKind.PHASE_STARTED, iteration=1,
                     payload=reflecting(540.0, 1).payload(), created_at=now - timedelta(minutes=4))
    running = Run(id="r", status=RunStatus.RUNNING)
    assert current_phase(running, event, now).startswith(
        "reflecting with local/smollm2: 4 min 00 s so far, about 9 min 00 s per proposal")
    assert current_phase(Run(id="r", status=RunStatus.COMPLETED), event, now) is None


def test_the_eta_is_unknown_until_an_iteration_ends_not_the_review_time_alone():
    run = Run(id="r", status=RunStatus.RUNNING, config=EvolutionConfig(review="review"))
    summary = progress_summary(run, None, 3, review_seconds=180.0)
    assert summary.total_eta_seconds is None and "ETA" not in summary.text()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_cli_says_a_long_phase_again_while_it_runs():
    stream, clock = io.StringIO(), Clock()
    bar = ProgressBar(stream, clock=clock)
    bar(reflecting(540.0, 1))
    assert stream.getvalue() == ("reflecting with local/smollm2: about 9 min 00 s per proposal "
                                 "on this machine\n")
    clock.now += 30
    bar.tick()  # not a terminal: said again once a minute
    assert stream.getvalue().count("\n") == 1
    clock.now += 210
    bar.tick()
    assert stream.getvalue().splitlines()[-1] == (
        "reflecting with local/smollm2: 4 min 00 s so far, about 9 min 00 s per proposal on "
        "this machine")
