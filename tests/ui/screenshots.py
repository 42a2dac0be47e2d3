"""Screenshots of every page at 1440x900, for a person to look at (issue 21's "what must show").

Not a test: ``python -m tests.ui.screenshots [OUT_DIR]`` (default ``tests/ui/shots/``) seeds a
fresh SQLite store with the scripted example (one finished run, one waiting at its gate), serves the
studio and saves each page's first screen and its whole height."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from studio.store import open_store
from tests.ui.browser import ROOT, chromium_page, full_page_shot, settled, studio_server
from tests.ui.test_pages import finished_run, review_run

SIZE = {"width": 1440, "height": 900}
PAGES = {"": "Recent runs", "projects": "Project name", "run": "Latest trials",
         "review": "Review next", "proposals": "Your decision", "compare": "Pareto front",
         "agreement": "Align critic"}
"""Each page's path and a text that shows once its content is drawn (the project editor draws
its open tab on a second pass, after the tabs report which is open)."""


def seed(db: Path) -> tuple[str, str]:
    """A finished run and a run waiting for a decision; returns their ids."""
    store = open_store(f"sqlite:///{db}", cached=False)
    try:
        done = finished_run(store)
        waiting = review_run(store)
        return done.id, waiting.id
    finally:
        store.close()


def drawn(page) -> None:
    """Wait until no placeholder is left: Streamlit shows a skeleton until an element's data
    arrives, and Plotly draws its SVG after the element mounts."""
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stSkeleton"]')
              && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                   .every(chart => chart.querySelector('.main-svg'))""", timeout=60_000)
    settled(page)


def shoot(page, path: Path) -> None:
    """The first screen, then the whole height (stretching the viewport mounts what was below
    the fold, so wait for it to draw before the full shot)."""
    drawn(page)
    page.screenshot(path=str(path))
    size = page.viewport_size
    height = 0
    for _ in range(6):  # charts mounted below the fold make the page taller: until it settles
        taller = page.evaluate(
            "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
        if taller == height:
            break
        height = taller
        page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
        drawn(page)
    full_page_shot(page, path.with_name(path.stem + "_full.png"))
    page.set_viewport_size(size)


def take(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="studio-shots-") as tmp:
        db = Path(tmp) / "studio.db"
        done, waiting = seed(db)
        with studio_server(db) as url, chromium_page(**SIZE) as page:
            for name, ready in PAGES.items():
                run = waiting if name in ("proposals",) else done
                page.goto(f"{url}/{name}?run={run}")
                page.get_by_test_id("stMain").wait_for()
                page.locator("h1").first.wait_for(timeout=60_000)
                page.get_by_text(ready).first.wait_for(timeout=60_000)
                first = out / f"{name or 'home'}.png"
                shoot(page, first)
                written += [first, first.with_name(first.stem + "_full.png")]
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "ui" / "shots"
    for path in take(target):
        print(path)
