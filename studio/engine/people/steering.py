"""A person's Stop, Pause and go-on, from any process: the one implementation the Run page's
buttons, the Proposals page's Stop, ``studio stop|pause|unpause RUN`` and
:class:`studio.engine.hosting.worker.RunManager` share.

A request is stored on the run (``runs.control``, counted by ``runs.control_seq``) and reaches
its engine wherever it runs: at once in this process (the engine's control is registered,
:func:`studio.engine.run.context.register_control`), within a heartbeat in another. The engine
honours a Stop between the chains of a batch and a Pause before the next chain starts
(:mod:`studio.engine.scoring.batch`).

A resume a person asks for (``studio resume``, ``evolve(resume=...)``, the Run page's Resume,
a worker taking a run the Run page put back in the queue) starts from the state the person
left: it withdraws the requests made before it began (:func:`withdraw_requests`), and keeps
one made since (a Stop pressed while the resume starts is a newer wish). A resume no person
asked for (a worker taking over an orphaned run, a run resumed after a database outage or
handed on at a worker's shutdown) keeps them: a Pause holds there too.
"""

from __future__ import annotations

from enum import StrEnum

from studio.engine.run.context import live_control
from studio.model.errors import RunStateError
from studio.model.records import Run, RunRequest, RunStatus, StopReason, utcnow
from studio.store.seams import PeopleStore

__all__ = ["Steered", "pause_run", "stop_run", "unpause_run", "withdraw_requests"]


class Steered(StrEnum):
    """What a steering call did, in the words the CLI prints."""

    ASKED = "asked"
    """The request is stored; the run's engine acts on it at its next step."""
    CANCELLED = "cancelled"
    """A queued run no worker had claimed: stopped there."""
    SETTLED = "settled"
    """A run no process runs (orphaned, or never started): marked stopped directly."""
    ALREADY = "already"
    """Nothing to do: the run was already stopped, completed or failed."""


def stop_run(store: PeopleStore, run_id: str) -> Steered:
    """Ask the run to stop at its next step, wherever it runs (the Run page's Stop, the
    Proposals page's Stop, ``studio stop``). A run that is being resumed right now (settled,
    but claimed) gets the request, which the resume keeps."""
    if store.cancel_queued(run_id):
        return Steered.CANCELLED
    run = store.get_run(run_id)
    if run.worker is None and (run.status is RunStatus.ORPHANED or run.status.is_active):
        store.update_run(run_id, status=RunStatus.STOPPED, stop_reason=StopReason.USER,
                         finished_at=run.finished_at or utcnow())
        return Steered.SETTLED
    if not run.status.is_active and run.worker is None:
        return Steered.ALREADY  # a second Stop on a stopped run leaves nothing behind
    _request(store, run_id, RunRequest.STOP)
    return Steered.ASKED


def pause_run(store: PeopleStore, run_id: str) -> Steered:
    """Hold the run before its next chain or iteration until :func:`unpause_run`.

    Raises:
        RunStateError: the run is not queued, pending, running or paused.
    """
    _check_steerable(store.get_run(run_id))
    _request(store, run_id, RunRequest.PAUSE)
    return Steered.ASKED


def unpause_run(store: PeopleStore, run_id: str) -> Steered:
    """Lift a Pause (the Run page's Resume on a paused run, ``studio unpause``).

    Raises:
        RunStateError: the run is not queued, pending, running or paused (a stopped run is
            resumed: ``studio resume``).
    """
    _check_steerable(store.get_run(run_id))
    _request(store, run_id, None)
    return Steered.ASKED


def withdraw_requests(store: PeopleStore, seen: Run) -> bool:
    """A resume a person asked for: withdraw the run's Pause or Stop as read in ``seen`` (before
    the resume claimed the run); a request made since is kept. True when one was withdrawn."""
    return store.clear_control(seen.id, seen.control_seq)


def _request(store: PeopleStore, run_id: str, request: RunRequest | None) -> None:
    store.request_control(run_id, request)
    control = live_control(run_id)
    if control is not None:  # runs in this process: now, not at its next heartbeat
        control.apply(request)


def _check_steerable(run: Run) -> None:
    if not run.status.is_active:
        resume = (f"; resume it with `studio resume {run.id}`"
                  if run.status is not RunStatus.COMPLETED else "")
        raise RunStateError(f"run {run.id} is {run.status.value}; only a queued, pending, "
                            f"running or paused run can be paused or unpaused{resume}")
