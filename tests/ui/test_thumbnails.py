"""A trial whose example holds an image shows a thumbnail of it on the Run and Review pages
(``st.image`` from a small PNG the studio re-encoded), never the base64 or HTML."""

from __future__ import annotations

import io

import yaml

from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.model.media import data_uri
from studio.projects.workspace import import_yaml, start_project_run
from tests.ui.conftest import assert_ok, texts


def picture(size: tuple[int, int] = (640, 320)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (40, 120, 220)).save(out, format="PNG")
    return out.getvalue()


def image_run(store):
    """A finished run of a project whose examples hold a photo (inline data URI)."""
    photo = data_uri(picture(), "image/png")
    text = yaml.safe_dump({
        "name": "pictures",
        "agent": {"name": "looker", "model": "scripted/echo", "instruction": "Describe {photo}."},
        "critic": {"type": "evaluator", "evaluator": {"evaluator": "contains"}},
        "reflection": {"model": "scripted/demo"},
        "dataset": {"train": [{"photo": photo, "question": q, "expected": "photo"}
                              for q in ("What is this?", "And this?")]},
    })
    project = import_yaml(store, text, "pictures.yaml")
    run = start_project_run(store, project.id, EvolutionConfig(max_iterations=1,
                                                                minibatch_size=2))
    get_manager(store).handle(run.id).wait(timeout=60)
    return run


def captions(at) -> list[str]:
    """The captions of the page's ``st.image`` pictures, Markdown escapes removed."""
    return [c.replace("\\", "") for image in at.get("image") for c in image.captions]


def test_a_trial_with_an_image_shows_its_thumbnail_on_the_run_page(app, studio_db):
    run = image_run(studio_db)
    at = app("run", run_id=run.id)
    assert captions(at) == []  # nothing selected yet
    at.session_state[f"run.table.{run.id}"] = {"selection": {"rows": [0], "columns": [],
                                                             "cells": []}}
    at.run()
    assert_ok(at)
    assert len(captions(at)) == 1 and captions(at)[0].startswith("photo · image/png · ")
    assert all(url.startswith("/mock/media/") for url in at.get("image")[0].value)
    assert any("photo: [image: photo]" in s for s in texts(at.code))
    assert not any("base64" in s for s in texts(at.code) + texts(at.markdown))


def test_the_review_page_shows_the_chosen_trial_s_thumbnail(app, studio_db):
    run = image_run(studio_db)
    at = app("review", run_id=run.id)
    assert_ok(at)
    assert len(captions(at)) == 1 and captions(at)[0].startswith("photo · image/png · ")


