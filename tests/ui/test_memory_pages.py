"""Issue 18 as a person meets it on the pages: a "no" at the Proposals page steers the run to a
different proposal, and an iteration the reflection could not fill is said so on the Run and
Proposals pages, not passed off as a normal one."""

from __future__ import annotations

import pytest

from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok, texts
from tests.ui.test_pages import SCRIPTED, button, review_run

SKIPPED = "the reflection repeated a rejected text 3 times; iteration skipped"


@pytest.mark.slow
def test_a_rejection_on_the_proposals_page_leads_to_a_different_proposal(app, studio_db):
    run = review_run(studio_db)
    first = pending_proposal(studio_db, run.id)
    at = app("proposals", run_id=run.id)
    at.text_input(key=f"proposals.reason.{first.id}").set_value("not this rule")
    button(at, "Reject").click().run()
    assert_ok(at)
    second = wait_until(lambda: (p := pending_proposal(studio_db, run.id)) and p.id != first.id
                        and p, message="the next proposal reaches the gate")
    assert second.text != first.text and second.iteration == first.iteration + 1


@pytest.mark.slow
def test_a_skipped_iteration_is_said_on_the_run_and_proposals_pages(app, studio_db, script):
    from studio.runtime.providers import demo

    def repeating(request):
        if demo.REFLECTION_MARKER in request.prompt_text:
            return "Write a haiku about the given topic. Say nothing of the topic."
        return demo.reply(request)

    model = script("memory_page_repeats", repeating)
    project = import_example(studio_db, SCRIPTED)
    text = studio_db.get_project(project.id).yaml.replace(
        "reflection:\n  model: scripted/demo@150ms", f"reflection:\n  model: {model}")
    studio_db.save_project(project.name, text, project.id)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, review="auto", seed=7))
    get_manager(studio_db).handle(run.id).wait(timeout=60)

    at = app("proposals", run_id=run.id)
    assert_ok(at)
    assert any(f"iteration 2: {SKIPPED}" in s for s in texts(at.info))
    at = app("run", run_id=run.id)
    assert_ok(at)
    assert any(f"iteration 2: {SKIPPED}" in s for s in texts(at.caption))
