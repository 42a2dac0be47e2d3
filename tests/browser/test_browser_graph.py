"""In real headless Chromium: the Run page of an ADK 2 graph workflow run draws its graph
(Streamlit's Graphviz renderer reads the DOT; a syntax error would show instead of the nodes).

Screenshots go to ``$STUDIO_SHOTS_DIR`` (default ``test-artifacts/ui/``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from studio.critics.adapters import build_critic
from studio.engine.hosting.api import evolve
from studio.model.config import EvolutionConfig
from studio.runtime.providers.scripted import register_script, unregister_script
from studio.store import open_store
from tests.browser.test_browser_guard_fork import choose
from tests.engine.test_graph_workflows import decision_graph
from tests.ui.browser import (
    ARTIFACTS,
    chromium_page,
    failure_shot,
    full_page_shot,
    nav,
    studio_server,
)

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_SHOTS_DIR") or ARTIFACTS)


def test_the_run_page_draws_a_graph_workflow(tmp_path):
    db = tmp_path / "studio.db"
    model = register_script("graph_page", lambda request: "a short answer")
    store = open_store(f"sqlite:///{db}", cached=False)
    try:
        result = asyncio.run(evolve(decision_graph(model), [{"topic": "x"}, {"topic": "y"}],
                           critic=build_critic({"evaluator": "contains",
                                                "params": {"substring": "answer"}}),
                           components={"pros": ["instruction"]}, reflection_model=model,
                           store=store, config=EvolutionConfig(max_iterations=1, review="auto")))
    finally:
        store.close()
        unregister_script("graph_page")
    with studio_server(db) as url, chromium_page() as page:
        page.goto(url)
        page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
        nav(page, "Run")
        choose(page, "Current run", result.run_id[:8])
        try:
            page.get_by_text("Graph workflow decide").click()
        except Exception:
            failure_shot(page, SHOTS / "graph_run_failure.png")
            raise
        svg = page.locator("svg").filter(has_text="pros")
        svg.first.wait_for()
        full_page_shot(page, SHOTS / "graph_run.png")
        for name in ("plan", "pros", "cons", "join", "final", "start"):
            assert svg.first.get_by_text(name, exact=True).count() >= 1, name
