"""Cost and a run waiting for a worker that can build it, on the Run and Compare pages (under
AppTest): the run's cost under its title, each candidate's in the Pareto-front table, and the
reason and tries of a run that went back to the queue."""

from __future__ import annotations

import pytest
from sqlalchemy import update

import studio.store.schema as tables
from studio.engine import EvolutionConfig, create_run
from studio.engine.hosting.queue import queue_run
from studio.model.costs import format_cost
from studio.model.records import RunStatus
from tests.helpers import demo_spec, trainset
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import finished_run


def priced_trials(store, run_id: str, each: float) -> float:
    """The run's trials as a priced model would have left them (the scripted model costs 0):
    ``each`` dollars a trial; returns the run's total."""
    with store.engine.begin() as c:
        c.execute(update(tables.trials).where(tables.trials.c.run_id == run_id)
                  .values(cost_usd=each))
    return sum(store.run_costs([run_id]).values())


@pytest.mark.slow  # a finished run, then two pages
def test_the_run_and_compare_pages_show_what_the_trials_cost(app, studio_db):
    run = finished_run(studio_db, max_iterations=1)
    total = priced_trials(studio_db, run.id, 0.0125)
    at = app("run", run_id=run.id)
    assert any(f"cost ${total:.4f}" in s for s in texts(at.caption)), texts(at.caption)
    at.switch_page("../pages/compare.py").run()
    assert_ok(at)
    assert any(f"${total:.4f}" in s for s in texts(at.caption))
    front = next(d.value for d in at.dataframe if "cost_usd" in d.value.columns)
    assert round(float(front["cost_usd"].sum()), 6) <= round(total, 6)
    assert float(front["cost_usd"].max()) > 0


@pytest.mark.slow  # a finished run, then two pages
def test_the_reflections_price_is_part_of_the_runs_cost_on_run_and_compare(app, studio_db):
    run = finished_run(studio_db, max_iterations=1)
    trials = priced_trials(studio_db, run.id, 0.01)
    with studio_db.engine.begin() as c:  # as a priced reflection model would have left them
        c.execute(update(tables.proposals).where(tables.proposals.c.run_id == run.id)
                  .values(cost_usd=0.5))
    total = sum(studio_db.run_costs([run.id]).values())
    assert total == pytest.approx(trials + 0.5 * len(studio_db.proposals(run.id)))
    at = app("run", run_id=run.id)
    assert any(f"cost {format_cost(total)}" in s for s in texts(at.caption)), texts(at.caption)
    at.switch_page("../pages/compare.py").run()
    assert_ok(at)
    assert any(f"so far: {format_cost(total)}, of which its trials {format_cost(trials)}" in s
               for s in texts(at.caption)), texts(at.caption)


def test_a_run_no_worker_here_could_build_says_what_it_waits_for(app, studio_db):
    run = create_run(studio_db, spec=demo_spec(), trainset=trainset(2),
                     config=EvolutionConfig(max_iterations=0))
    queue_run(studio_db, run.id, "nobody")
    studio_db.claim_next_run("h:1:a", "nobody", stale_after_s=10)
    studio_db.requeue_unbuilt(run.id, "h:1:a", "ModelConfigError: needs OPENAI_API_KEY",
                              max_tries=5)
    assert studio_db.get_run(run.id).status is RunStatus.QUEUED
    at = app("run", run_id=run.id)
    assert any("waiting for a worker that can build it: ModelConfigError: needs "
               "OPENAI_API_KEY (tries 1/5)" in s for s in texts(at.warning)), texts(at.warning)
