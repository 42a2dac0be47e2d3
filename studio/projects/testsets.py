"""The overfitting guard's buttons: score a run's test set from the browser, and whether a
scoring is under way (in any process: it holds the run's lease while the run is settled).

Scoring the test set takes the whole :class:`~studio.store.Store`: it builds the run's engine
(:func:`studio.engine.hosting.api.start_test_scoring`).
"""

from __future__ import annotations

from datetime import timedelta

from studio.engine.hosting.api import start_test_scoring
from studio.engine.hosting.worker import STALE_AFTER_SECONDS
from studio.model.errors import RunStateError
from studio.model.records import Run, utcnow
from studio.projects.files import Origin, check_spec_trust
from studio.store import Store


def score_test_from_browser(store: Store, run_id: str) -> None:
    """Start scoring the baseline and the best candidate on the run's test set in this process
    (a browser action: only what the stored run has; Python agents need the server's opt-in).

    Raises:
        ProjectFileError: the run loads Python code and the server did not opt in.
        RunStateError: the run is still going, has no test set, was started from Python
            objects, or another worker holds it.
    """
    run = store.get_run(run_id)
    check_spec_trust(run.spec, Origin.BROWSER, f"run {run_id}")
    if not run.spec.resumable:
        raise RunStateError(f"run {run_id} was started from Python objects, which the studio "
                            "cannot rebuild: score it with studio.score_test_set(...) and the "
                            "same agent and critic")
    start_test_scoring(store, run_id)


def scoring_under_way(run: Run) -> bool:
    """True while a settled run is held by a live worker: its test set is being scored."""
    if run.status.is_active or run.worker is None or run.heartbeat_at is None:
        return False
    return utcnow() - run.heartbeat_at < timedelta(seconds=STALE_AFTER_SECONDS)
