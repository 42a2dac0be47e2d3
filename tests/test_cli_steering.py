"""``studio stop|pause|unpause RUN``: what each says for a run in every state, one line each,
exit 0 when done and 2 (a one-line error) when the run cannot be steered so."""

from __future__ import annotations

from studio.cli import main
from studio.engine import EvolutionConfig, create_run
from studio.engine.hosting.queue import queue_run
from studio.model.records import RunRequest, RunStatus, StopReason
from tests.helpers import demo_spec, trainset


def studio(store, *args: str) -> int:
    return main(["--db", store.url, *args])


def new_run(store) -> str:
    return create_run(store, spec=demo_spec(), trainset=trainset(2),
                      config=EvolutionConfig(max_iterations=1)).id


def test_stop_cancels_a_queued_run_and_says_so(store, capsys):
    run_id = queue_run(store, new_run(store)).id
    assert studio(store, "stop", run_id) == 0
    assert "was still queued: stopped before a worker took it" in capsys.readouterr().err
    run = store.get_run(run_id)
    assert (run.status, run.stop_reason) == (RunStatus.STOPPED, StopReason.USER)


def test_pause_and_unpause_a_running_run_ask_its_worker(store, capsys):
    run_id = new_run(store)
    store.update_run(run_id, status=RunStatus.RUNNING, worker="host:1:w")  # another process
    assert studio(store, "pause", run_id) == 0
    assert f"studio unpause {run_id}" in capsys.readouterr().err
    run = store.get_run(run_id)
    assert (run.control, run.control_seq, run.shown_status) == (RunRequest.PAUSE, 1,
                                                                 RunStatus.PAUSED)
    assert studio(store, "unpause", run_id) == 0
    assert (store.get_run(run_id).control, store.get_run(run_id).control_seq) == (None, 2)
    assert studio(store, "stop", run_id) == 0
    assert "asked to stop; it stops within seconds" in capsys.readouterr().err
    assert store.get_run(run_id).control is RunRequest.STOP


def test_a_second_stop_on_a_stopped_run_leaves_nothing_behind(store, capsys):
    run_id = new_run(store)
    store.update_run(run_id, status=RunStatus.STOPPED, stop_reason=StopReason.USER)
    assert studio(store, "stop", run_id) == 0
    assert f"run {run_id} is already stopped: nothing to stop" in capsys.readouterr().err
    assert (store.get_run(run_id).control, store.get_run(run_id).control_seq) == (None, 0)


def test_pausing_a_stopped_run_is_refused_in_one_line(store, capsys):
    run_id = new_run(store)
    store.update_run(run_id, status=RunStatus.STOPPED, stop_reason=StopReason.USER)
    assert studio(store, "pause", run_id) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: run {run_id} is stopped; only a queued, pending, running or paused "
                   f"run can be paused or unpaused; resume it with `studio resume {run_id}`")
    assert studio(store, "stop", "no-such-run") == 2
    assert "run 'no-such-run' does not exist" in capsys.readouterr().err
