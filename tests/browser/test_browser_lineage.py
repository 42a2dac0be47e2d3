"""In real headless Chromium at 1440x900: the Compare page's charts are clickable (issue 21). A
lineage node opens its text, its diff against its parent, its minibatch evidence and why it
was kept or not (a person's rejection with the reason given); a heatmap cell opens that trial
with its correction form; switching runs clears both. Screenshots go to
``test-artifacts/ui/``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from studio.engine.hosting.worker import get_manager
from studio.engine.people.gates import decide
from studio.projects.workspace import pending_proposal
from studio.store import open_store
from tests.browser.test_browser import shot, wait_idle
from tests.browser.test_browser_guard_fork import choose
from tests.helpers import wait_until
from tests.ui.browser import chromium_page, studio_server
from tests.ui.test_pages import finished_run, review_run

pytestmark = pytest.mark.browser

SIZE = {"width": 1440, "height": 900}
REASON = "too long: keep it to three lines"
NODE_PANEL = "[class*='st-key-compare-lineage-node']"
TRIAL_PANEL = "[class*='st-key-compare-heatmap-trial']"

POINT = """([key, x, y]) => {
  // The page coordinates of data point (x, y) in the plotly chart under the keyed element.
  const gd = document.querySelector(`[class*='st-key-${key}'] .js-plotly-plot`);
  const box = gd.getBoundingClientRect(), xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  return {x: box.left + xa._offset + xa.d2p(x), y: box.top + ya._offset + ya.d2p(y)};
}"""
NODES = """([key, name]) => {
  // Each node of one legend entry: [candidate id, x, y].
  const gd = document.querySelector(`[class*='st-key-${key}'] .js-plotly-plot`);
  const trace = gd.data.find(t => t.name === name);
  const list = a => Array.from(a._inputArray || a);
  const [ids, xs, ys] = [list(trace.customdata), list(trace.x), list(trace.y)];
  return ids.map((id, i) => [id, xs[i], ys[i]]);
}"""


def decided_run(store):
    """A review-mode run where alice accepts, rejects with a reason, then accepts."""
    run = review_run(store, max_iterations=3)
    for action in ("accept", "reject", "accept"):
        waiting = wait_until(lambda: pending_proposal(store, run.id), timeout=60)
        decide(waiting.id, action, reason=REASON if action == "reject" else "", author="alice",
               store=store)
    get_manager(store).handle(run.id).wait(timeout=60)
    return run


def chart_ready(page, key: str) -> None:
    """Scroll the keyed chart into view and wait until plotly has drawn it."""
    page.locator(f"[class*='st-key-{key}']").scroll_into_view_if_needed()
    page.wait_for_function("key => { const gd = document.querySelector("
                           "`[class*='st-key-${key}'] .js-plotly-plot`);"
                           " return !!(gd && gd._fullLayout && gd.data); }", arg=key)
    wait_idle(page)


def click_point(page, key: str, x, y) -> None:
    chart_ready(page, key)
    where = page.evaluate(POINT, [key, x, y])
    page.mouse.click(where["x"], where["y"])


def test_a_lineage_node_and_a_heatmap_cell_open_what_they_stand_for(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    run, other = decided_run(store), finished_run(store, seed=3)
    rejected = next(p for p in store.proposals(run.id) if p.status.value == "rejected")
    child = store.get_candidate(rejected.child_id)
    parent = store.get_candidate(rejected.parent_id)
    store.close()
    with studio_server(db) as url, chromium_page(**SIZE) as page:
        page.goto(f"{url}/compare?run={run.id}")
        page.get_by_role("heading", name="Lineage").wait_for()
        wait_idle(page)
        lineage = f"compare-lineage-{run.id}"
        chart_ready(page, lineage)
        nodes = page.evaluate(NODES, [lineage, "rejected proposal (minibatch only)"])
        assert [n[0] for n in nodes] == [child.id]  # the rejected proposal is in the tree
        click_point(page, lineage, nodes[0][1], nodes[0][2])

        panel = page.locator(NODE_PANEL)
        panel.wait_for()
        panel.get_by_text(re.compile(rf"^#{child.index} · born in iteration "
                                     rf"{child.iteration} from #{parent.index}")).wait_for()
        panel.get_by_text(f"Rejected by alice, who said: “{REASON}”").wait_for()
        panel.get_by_text(re.compile(r"The rule (accepts|rejects): child minibatch sum")).wait_for()
        for label in ("Parent minibatch sum", "Child minibatch sum", "Examples compared"):
            panel.get_by_text(label, exact=True).wait_for()
        panel.get_by_text(re.compile(r"^The minibatch example by example \(\d+\)")).wait_for()
        panel.get_by_text(f"What changed from its parent #{parent.index} (word diff)").wait_for()
        added = child.components["instruction"].splitlines()[-1]
        assert added not in parent.components["instruction"]
        panel.get_by_text(added, exact=False).first.wait_for()  # the diff's new line
        wait_idle(page)
        shot(page, "compare_lineage_node")

        panel.get_by_role("button", name="Compare it above").click()  # a version picked here
        picker = page.get_by_test_id("stMultiSelect").first
        picker.get_by_role("button", name=re.compile(rf"^Remove #{child.index} ")).wait_for()
        expect(panel.get_by_role("button", name="Compare it above")).to_be_disabled()

        heatmap = f"compare-heatmap-{run.id}"
        click_point(page, heatmap, 1, 1)  # the second candidate on the second example
        trial = page.locator(TRIAL_PANEL)
        trial.wait_for()
        trial.get_by_text(re.compile(r"^Trial \d+ \(id \d+\) · iteration \d+ · valset · "
                                     r"candidate #\d+ · val example 1$")).wait_for()
        trial.get_by_role("button", name="Save correction").wait_for()
        assert page.locator(NODE_PANEL).count() == 1  # the node stays open beside it
        wait_idle(page)
        shot(page, "compare_heatmap_trial")

        choose(page, "Current run", other.id[:8])
        page.wait_for_url(re.compile(rf"run={other.id}"))
        page.get_by_role("heading", name="Lineage").wait_for()
        wait_idle(page)
        page.locator(NODE_PANEL).wait_for(state="detached")
        assert page.locator(TRIAL_PANEL).count() == 0  # nothing of the first run stays open
        shot(page, "compare_switched_run")
