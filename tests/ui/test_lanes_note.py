"""A run that keeps fewer parallel proposals in flight than it asked for says so, and why, on
the Run page and in the CLI (issue 32: ``parallel_proposals: 3`` with ``max_metric_calls``
silently ran one lane; only docs/concepts/loop.md said so)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from studio import cli
from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.model.records import EventKind, RunStatus
from studio.projects.workspace import import_example, start_project_run
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import SCRIPTED

SAID = ("1 of the 3 parallel proposals asked for runs: under a max_metric_calls budget one lane "
        "runs")


def test_the_cli_says_one_lane_runs_under_a_budget_and_why(tmp_path: Path, capsys):
    data = yaml.safe_load(SCRIPTED.read_text())
    for part in ("agent", "critic", "reflection"):
        data[part]["model"] = "scripted/demo"
    data["run"].update(max_iterations=1, parallel_proposals=3, max_metric_calls=60)
    project = tmp_path / "budget.yaml"
    project.write_text(yaml.safe_dump(data))
    assert cli.main(["--db", f"sqlite:///{tmp_path}/s.db", "run", str(project)]) == 0
    assert SAID in capsys.readouterr().err


@pytest.mark.slow
def test_the_run_page_says_one_lane_runs_under_a_budget_and_why(app, studio_db):
    project = import_example(studio_db, SCRIPTED)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=1, review="review", parallel_proposals=3, max_metric_calls=60))
    wait_until(lambda: studio_db.events(run.id, kind=EventKind.LANES_REDUCED),
               timeout=60, message="the run to say how many lanes run")
    at = app("run", run_id=run.id)
    assert any(SAID in note for note in texts(at.info))
    assert_ok(at)
    get_manager(studio_db).stop(run.id)
    wait_until(lambda: studio_db.get_run(run.id).status is RunStatus.STOPPED, timeout=30,
               message="the run to stop")
