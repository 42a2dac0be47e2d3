"""A person's Stop and Pause reach a run within seconds wherever it is, also in the middle of a
2,000-example validation batch (issue 32: the check ran only when a batch started, so a Stop
2 s into the seed's validation let the run judge every remaining example, minutes of calls).

``studio stop|pause|unpause RUN`` are the Run page's buttons from another shell: the run here
is a ``studio run`` in a process of its own, reached through the store and its heartbeat. What
was judged before the Stop is kept, and ``studio resume`` judges only the pairs still missing.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from studio import cli
from studio.engine.hosting.worker import get_manager
from studio.model.records import EventKind, ReflectionSpec, RunStatus, StopReason
from studio.store import open_store
from tests.helpers import ROOT, CliWorker, demo_spec, trainset, wait_until

VALIDATION = 2_000
LATENCY = "50ms"
INTO_THE_BATCH_SECONDS = 2.0
"""How far into the seed's validation the person acts."""
IN_FLIGHT = 2 * 4
"""Chains a validation may have begun when the request reaches the run (two per call slot,
four slots): the most trials that may still be committed after the run said it stopped or
paused. Until then (up to a heartbeat after the command returns) the validation goes on."""


def big_validation_project(folder: Path, examples: int = VALIDATION,
                           latency: str = LATENCY) -> Path:
    """The haiku world with 2,000 validation examples, every call 50 ms (also
    ``bench/bench_steer.py``'s, at any size and latency)."""
    data = yaml.safe_load((ROOT / "examples" / "haiku_scripted.yaml").read_text())
    for part in ("agent", "critic", "reflection"):
        data[part]["model"] = f"scripted/demo@{latency}"
    data["dataset"]["val"] = [{"topic": f"topic number {n}"} for n in range(examples)]
    data["run"].update(max_iterations=3, max_concurrency=4)
    path = folder / "big.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def studio(url: str, *args: str) -> int:
    return cli.main(["--db", url, *args])


def into_the_validation(store, run_id: str) -> None:
    """Wait until the seed's validation has run for :data:`INTO_THE_BATCH_SECONDS`."""
    wait_until(lambda: store.count_trials(run_id) > 0, timeout=120,
               message="the seed's validation to commit its first trial")
    started = time.monotonic()
    wait_until(lambda: time.monotonic() - started >= INTO_THE_BATCH_SECONDS, timeout=10,
               message="two seconds of the validation")


def judged(store, run_id: str) -> Counter:
    return Counter((t.candidate_id, t.example_id) for t in store.trials(run_id, with_trace=False))


@pytest.mark.slow
def test_studio_stop_ends_a_big_validation_within_two_seconds_and_resume_judges_the_rest(
        tmp_path):
    url = f"sqlite:///{tmp_path}/studio.db"
    store = open_store(url, cached=False)
    worker = CliWorker(url, big_validation_project(tmp_path))
    try:
        run_id = worker.start()
        into_the_validation(store, run_id)
        assert studio(url, "stop", run_id) == 0
        asked = store.count_trials(run_id)
        wait_until(lambda: store.get_run(run_id).status is RunStatus.STOPPED, timeout=60,
                   step=0.02, message="the run to stop")
        stopped = store.count_trials(run_id)
        worker.wait_exit(30)
        run = store.get_run(run_id)
        assert run.stop_reason is StopReason.USER
        before = judged(store, run_id)
        assert asked <= stopped <= sum(before.values()) <= stopped + IN_FLIGHT < VALIDATION

        worker.resume()  # `studio resume` in a process of its own
        wait_until(lambda: store.count_trials(run_id) >= sum(before.values()) + 40,
                   timeout=120, message="the resumed validation to judge more examples")
        assert studio(url, "stop", run_id) == 0
        wait_until(lambda: store.get_run(run_id).status is RunStatus.STOPPED, timeout=60,
                   message="the resumed run to stop")
        after = judged(store, run_id)
        assert max(after.values()) == 1  # no (candidate, example) pair judged twice
        assert sum(after.values()) > sum(before.values())
    finally:
        worker.kill()
        store.close()


@pytest.mark.slow
def test_studio_pause_holds_a_big_validation_within_two_seconds_until_unpause(tmp_path):
    url = f"sqlite:///{tmp_path}/studio.db"
    store = open_store(url, cached=False)
    worker = CliWorker(url, big_validation_project(tmp_path))
    try:
        run_id = worker.start()
        into_the_validation(store, run_id)
        assert studio(url, "pause", run_id) == 0
        asked = store.count_trials(run_id)
        wait_until(lambda: store.get_run(run_id).status is RunStatus.PAUSED, timeout=60,
                   step=0.02, message="the run to pause")
        at_pause = store.count_trials(run_id)
        paused = wait_until(lambda: store.events(run_id, kind=EventKind.RUN_PAUSED),
                            timeout=10, message="the pause announced")
        assert [e.iteration for e in paused] == [0]  # in the seed's validation, not after it
        time.sleep(1.0)  # held: only the chains already begun may still commit
        held = store.count_trials(run_id)
        assert asked <= at_pause <= held <= at_pause + IN_FLIGHT < VALIDATION
        assert studio(url, "unpause", run_id) == 0
        wait_until(lambda: store.count_trials(run_id) > held + 20, timeout=60,
                   message="the unpaused validation to go on")
        assert store.get_run(run_id).status is RunStatus.RUNNING
        assert studio(url, "stop", run_id) == 0
        wait_until(lambda: store.get_run(run_id).status is RunStatus.STOPPED, timeout=60,
                   message="the run to stop")
        assert max(judged(store, run_id).values()) == 1
    finally:
        worker.kill()
        store.close()


def test_pause_and_stop_reach_the_middle_of_a_batch_in_this_process(runner, store):
    """The same through the CLI with the run in this process (its engine's control is reached
    at once): held mid-validation, let go, then stopped mid-validation with its trials kept."""
    run_id, handle = runner.start(demo_spec("scripted/demo@20ms"), trainset(3),
                                  valset=[{"topic": f"t{n}"} for n in range(400)],
                                  max_iterations=1, max_concurrency=4)
    wait_until(lambda: store.count_trials(run_id) >= 8, message="the validation to begin")
    assert studio(store.url, "pause", run_id) == 0
    paused = wait_until(lambda: store.events(run_id, kind=EventKind.RUN_PAUSED), timeout=10,
                        message="the run to pause mid-validation")
    assert [e.iteration for e in paused] == [0]
    held = store.count_trials(run_id)
    assert held < 400
    assert studio(store.url, "unpause", run_id) == 0
    wait_until(lambda: store.count_trials(run_id) > held + IN_FLIGHT, timeout=10,
               message="the validation to go on")
    assert studio(store.url, "stop", run_id) == 0
    assert handle.wait(10) is StopReason.USER
    assert 0 < store.count_trials(run_id) < 400
    assert max(judged(store, run_id).values()) == 1
    assert get_manager(store).handle(run_id) is handle


def test_a_stop_during_a_slow_reflection_cancels_it(runner, store, script):
    """A reflection in a slow model's call (a minute here) does not hold a person's Stop: the
    call is cancelled, and the iteration's proposal is asked for again on resume."""
    slow = script("a minute to reflect", latency_s=60.0)
    spec = demo_spec().model_copy(update={"reflection": ReflectionSpec(model=slow)})
    run_id, handle = runner.start(spec, trainset(3), max_iterations=1)
    wait_until(lambda: script.requests(slow), timeout=30, message="the reflection's call")
    assert studio(store.url, "stop", run_id) == 0
    assert handle.wait(30) is StopReason.USER  # half the reflection's minute: it was cancelled
    assert store.proposals(run_id) == []  # nothing half-stored: asked again on resume
