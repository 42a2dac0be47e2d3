"""End to end in real headless Chromium: build a two-agent sequential project in the workflow
builder (outliner -> writer, only the writer evolves, the writer's reply is scored), run it in
review mode, see the pipeline trace, accept a proposal for the second agent at the gate, and see
the accepted ``writer.instruction`` diff in Compare.

Screenshots go to ``$STUDIO_SHOTS_DIR`` (default ``test-artifacts/ui/``). Run with
``pytest -m browser tests/browser/test_browser_workflow.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from studio.projects.files import parse_project
from studio.store import open_store
from tests.browser.test_browser import (
    proposal_heading,
    select_first_row,
    wait_idle,
    wait_until_decided,
)
from tests.helpers import wait_until
from tests.ui.browser import ARTIFACTS, chromium_page, full_page_shot, nav, studio_server

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_SHOTS_DIR") or ARTIFACTS)


def shot(page, name: str) -> None:
    full_page_shot(page, SHOTS / f"{name}.png")


@pytest.fixture
def server(tmp_path):
    db = tmp_path / "studio.db"
    with studio_server(db) as url:
        yield url, db


def test_build_run_accept_and_compare_a_two_agent_workflow(server):
    url, db = server
    with chromium_page() as page:
        try:
            workflow_flow(page, url, db)
        except Exception:
            shot(page, "workflow_failure")
            raise


def workflow_flow(page, url: str, db: Path) -> None:
    page.goto(url)
    page.get_by_role("heading", name="Evolution Studio", exact=True).wait_for()
    nav(page, "Projects")
    page.get_by_role("button", name="Load example: haiku-scripted").click()
    page.get_by_text("Loaded the example").wait_for()
    build_two_agent_workflow(page)
    shot(page, "w01_builder")
    page.get_by_role("button", name="Save project").click()
    page.get_by_text("Saved haiku-scripted").wait_for()
    stored = parse_project(open_store(f"sqlite:///{db}").find_project("haiku-scripted").yaml)
    assert [a.name for a in stored.agents] == ["outliner", "writer"]
    assert stored.component_keys() == ["writer.instruction"]

    nav(page, "Run")
    page.get_by_text("Review: I decide on each proposal").click()
    page.get_by_role("button", name="Start run").click()
    page.get_by_text("is waiting for your decision").wait_for()
    select_first_row(page)
    page.get_by_text(re.compile(r"Pipeline: 2 step\(s\) in order")).wait_for()
    page.get_by_text("scored output").first.wait_for()
    shot(page, "w02_run_pipeline_trace")

    nav(page, "Proposals")
    accept = page.get_by_role("button", name="Accept", exact=True)
    accept.wait_for()
    page.get_by_text("Changes the instruction of agent writer").wait_for()
    heading = proposal_heading(page)
    assert "writer · instruction" in heading
    shot(page, "w03_proposal_for_the_writer")
    accept.click()
    wait_until_decided(page, heading)
    shot(page, "w04_after_accept")

    nav(page, "Compare")
    page.get_by_text("Agent writer").first.wait_for()
    page.get_by_text(re.compile(r"#0 · writer · instruction")).first.wait_for()
    page.locator(".js-plotly-plot").first.wait_for()
    assert page.get_by_text(re.compile(r"Rule:")).count() > 0  # the accepted rule, as diffed
    shot(page, "w05_compare_writer_diff")


def agent_card(page, position: int):
    return page.locator("[class*='st-key-builder-agent-']").nth(position)


def field(card, label: str):
    """The text input or area labelled ``label`` in a card (not its help button)."""
    return card.locator(f"input[aria-label='{label}'], textarea[aria-label='{label}']")


def type_into(field, text: str) -> None:
    """Replace a text field's value and commit it (Streamlit reruns when the field blurs)."""
    field.fill(text)
    field.press("Tab")
    wait_idle(field.page)


def build_two_agent_workflow(page) -> None:
    """The example's writer becomes step 1; an outliner is added and moved before it."""
    page.get_by_role("button", name="Make this a workflow of several agents").click()
    agent_card(page, 0).wait_for()
    page.get_by_role("button", name="Add agent").click()
    agent_card(page, 1).wait_for()
    wait_idle(page)

    writer = agent_card(page, 0)
    type_into(field(writer, "Model"), "scripted/pipeline")
    type_into(field(writer, "Instruction"), "Write a haiku from this outline: {outline}")

    outliner = agent_card(page, 1)
    type_into(field(outliner, "Agent name"), "outliner")
    type_into(field(outliner, "Model"), "scripted/pipeline")
    type_into(field(outliner, "Writes its reply to state key"), "outline")
    type_into(field(outliner, "Instruction"), "Outline the topic.")
    outliner.get_by_role("button", name="Clear all").click()  # the outliner is kept as written
    wait_idle(page)
    outliner.get_by_role("button", name="↑").click()
    wait_until(lambda: "outliner" in agent_card(page, 0).inner_text(), 20, step=0.2,
               message="the outliner to become step 1")
    wait_idle(page)
    first, second = agent_card(page, 0).inner_text(), agent_card(page, 1).inner_text()
    assert first.startswith("Step 1: outliner") and second.startswith("Step 2: writer")
    page.get_by_role("button", name="Picture of the workflow").click()  # one click away
    page.locator("[data-testid='stGraphVizChart'] svg").first.wait_for()
    page.screenshot(path=str(SHOTS / "workflow_picture.png"))
    page.keyboard.press("Escape")
    assert not page.get_by_text("need attention").count(), "the builder shows errors"
