"""Model-written text never becomes a live link: GitHub-flavoured Markdown turns a bare URL, a
``www.`` host or an e-mail address into a link after escapes are resolved, so the pages render
model text with those patterns broken (an invisible word joiner), on the Run, Proposals and
Compare pages, in outputs, proposals, run names and error boxes."""

from __future__ import annotations

import re

import pytest

from studio.engine import EvolutionConfig
from studio.engine.hosting.worker import get_manager
from studio.projects.workspace import import_example, pending_proposal, start_project_run
from studio.runtime.providers import demo
from studio.views.diffing import inline_markdown
from studio.views.markdown import escape_markdown
from tests.helpers import wait_until
from tests.ui.conftest import assert_ok
from tests.ui.test_pages import SCRIPTED

PHISH = "Visit http://evil.example/login or www.evil.example, mail help@evil.example"
AUTOLINK = re.compile(r"https?://|www\.|[\w.+-]+@[\w-]+\.\w", re.IGNORECASE)
"""What GFM's autolink-literal extension links (checked on the text as Markdown resolves it)."""


def linkable(markdown: str) -> bool:
    resolved = re.sub(r"\\(.)", r"\1", markdown)
    return bool(AUTOLINK.search(resolved) or re.search(r"(?<!\\)\]\(|<a\s", markdown))


def page_texts(at) -> list[str]:
    kinds = ("markdown", "caption", "error", "warning", "info", "success", "subheader",
             "header", "title")
    return [str(e.value) for kind in kinds for e in getattr(at, kind)]


def phishing_project(studio_db, script):
    def model(request):
        if demo.REFLECTION_MARKER in request.prompt_text:
            return "Write a haiku about the given topic.\n" + PHISH
        return demo.reply(request)

    name = script("phish_links", model)
    project = import_example(studio_db, SCRIPTED)
    text = studio_db.get_project(project.id).yaml.replace(
        "reflection:\n  model: scripted/demo@150ms", f"reflection:\n  model: {name}")
    studio_db.save_project(project.name, text, project.id)
    return project


def test_the_escaping_helper_breaks_every_autolink_and_keeps_the_text():
    for text in (PHISH, "HTTPS://EVIL.EXAMPLE", "WWW.evil.example", "x@y.co",
                 "ftp://a.b", "see <http://a.b>", "[x](http://a.b)"):
        shown = escape_markdown(text)
        assert not linkable(shown), shown
        assert shown.replace("\u2060", "").replace("\\", "") == text.replace("\\", "")
    assert not linkable(inline_markdown("go to a", "go to https://evil.example now"))
    assert escape_markdown("wwwx.com and awww.b") == "wwwx\\.com and awww\\.b"


@pytest.mark.slow
def test_no_model_text_is_a_link_on_the_proposals_and_run_pages(app, studio_db, script):
    project = phishing_project(studio_db, script)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=2, review="review", seed=7), name="Run http://evil.example/x")
    wait_until(lambda: pending_proposal(studio_db, run.id))
    studio_db.update_run(run.id, error="model said: see www.evil.example/fix")
    for page in ("proposals", "run"):
        at = app(page, run_id=run.id)
        assert_ok(at)
        shown = page_texts(at)
        assert any("evil" in text for text in shown), page
        assert not [t for t in shown if linkable(t)], page


@pytest.mark.slow
def test_no_model_text_is_a_link_on_the_compare_page(app, studio_db, script):
    project = phishing_project(studio_db, script)
    run = start_project_run(studio_db, project.id, EvolutionConfig(
        max_iterations=3, minibatch_size=3, review="auto", seed=7), name="www.evil.example")
    get_manager(studio_db).handle(run.id).wait(timeout=60)
    at = app("compare", run_id=run.id)
    shown = page_texts(at)
    assert shown and not [t for t in shown if linkable(t)]
