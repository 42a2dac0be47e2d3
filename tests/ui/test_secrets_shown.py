"""Every page that shows a trial, a proposal or a correction shows a secret from the environment
as ``***``: the store keeps it raw (the loop reads it), the pages redact it (Markdown, tables,
code blocks, the edit box, diffs)."""

from __future__ import annotations

import re

import pytest

from studio.engine import EvolutionConfig, override
from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from tests.bad_inputs.test_secrets_at_exits import SECRET, leaky
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok
from tests.ui.test_pages import SCRIPTED


def everything_shown(at) -> str:
    """All text a page shows: Markdown (its backslash escapes resolved, as a person reads it),
    captions, boxes, code, tables and text inputs."""
    kinds = ("markdown", "caption", "error", "warning", "info", "success", "subheader",
             "header", "title", "code", "json", "text")
    shown = [re.sub(r"\\(.)", r"\1", str(e.value)) for kind in kinds for e in getattr(at, kind)]
    shown += [e.value.to_csv() for e in at.dataframe]
    shown += [str(e.value) for e in at.text_area]
    return "\n".join(shown)


def leaky_project(studio_db, script):
    name = script("leaky_key", leaky)
    project = import_example(studio_db, SCRIPTED)
    text = studio_db.get_project(project.id).yaml.replace("scripted/demo@150ms", name)
    studio_db.save_project(project.name, text, project.id)
    return project


@pytest.mark.slow
def test_the_run_review_and_proposals_pages_show_the_secret_as_stars(app, studio_db, script,
                                                                     monkeypatch):
    monkeypatch.setenv("STUDIO_TEST_SECRET", SECRET)
    project = leaky_project(studio_db, script)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=3, review="review", seed=7), name="leaky")
    wait_until(lambda: pending_proposal(studio_db, run.id), timeout=60)
    trial = studio_db.trials(run.id)[0]
    override(trial.id, feedback=f"human: rotate {SECRET}", store=studio_db)
    assert SECRET in studio_db.get_trial(trial.id).override.feedback  # stored raw
    assert SECRET in pending_proposal(studio_db, run.id).text
    for page in ("run", "review", "proposals"):
        at = app(page, run_id=run.id)
        assert_ok(at)
        shown = everything_shown(at)
        assert "***" in shown, page
        assert SECRET[:12] not in shown, page


@pytest.mark.slow
def test_the_compare_page_shows_the_secret_as_stars(app, studio_db, script, monkeypatch):
    monkeypatch.setenv("STUDIO_TEST_SECRET", SECRET)
    project = leaky_project(studio_db, script)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, minibatch_size=3, review="auto", seed=7), name="leaky")
    get_manager(studio_db).handle(run.id).wait(timeout=60)
    # an evolved instruction holds the key raw: the next reflection reads it
    assert any(SECRET in str(c.components) for c in studio_db.candidates(run.id))
    at = app("compare", run_id=run.id)
    shown = everything_shown(at)
    assert "***" in shown and SECRET[:12] not in shown, shown
