"""The Run form builds its stop inputs from the stop conditions (studio.model.stops): each
condition with a form input is asked for, and what a person enters reaches the run's config."""

from __future__ import annotations

import pytest

from studio.engine.hosting.worker import get_manager
from studio.model.stops import STOP_CONDITIONS
from studio.projects.workspace import EXAMPLES_DIR, import_example
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok

SCRIPTED = EXAMPLES_DIR / "haiku_scripted.yaml"


@pytest.mark.slow  # starts a real run
def test_the_run_form_asks_for_each_stop_condition_and_starts_with_its_values(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    at = app("run", project_id=project.id)
    labels = [n.label for n in at.number_input]
    asked = [c.form.label for c in STOP_CONDITIONS if c.form is not None]
    assert [label for label in labels if label in asked] == asked
    inputs = {n.label: n for n in at.number_input}
    inputs["Max iterations"].set_value(0)
    inputs["Time limit, minutes (0: none)"].set_value(1.5)
    inputs["Stop after N iterations without gain (0: never)"].set_value(2)
    next(b for b in at.button if b.label == "Start run").click().run()
    assert_ok(at)
    run = studio_db.list_runs()[0]
    assert (run.config.max_iterations, run.config.timeout_seconds, run.config.patience,
            run.config.max_metric_calls, run.config.score_threshold) == (0, 90.0, 2, None, None)
    wait_until(lambda: not studio_db.get_run(run.id).status.is_active, timeout=60)
    get_manager(studio_db).handle(run.id).wait(timeout=60)
