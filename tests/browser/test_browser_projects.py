"""In real headless Chromium at 1440x900, the Projects page's fixes (issue 21, defect 8): a CSV
with new columns waits for a confirmation that shows them and picks the input and expected
columns; a fixed project file imported again under the same name is read anew; the test set is
shown and added on the Dataset tab; a reload with unsaved edits asks first. Screenshots go to
``test-artifacts/ui/``."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from studio.projects.files import parse_project
from studio.projects.workspace import EXAMPLES_DIR, import_example
from studio.store import open_store
from tests.browser.test_browser import shot, wait_idle
from tests.ui.browser import chromium_page, studio_server

pytestmark = pytest.mark.browser

SIZE = {"width": 1440, "height": 900}
SCRIPTED = EXAMPLES_DIR / "haiku_scripted.yaml"


def upload(page, key: str, name: str, text: str) -> None:
    """Give the file uploader whose key starts with ``key`` (dots as dashes) a file, through the
    browser's own file input."""
    uploader = page.locator(f"[class*='st-key-{key}']")
    uploader.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        {"name": name, "mimeType": "text/plain", "buffer": text.encode()})
    uploader.get_by_text(name).first.wait_for()
    wait_idle(page)


def test_projects_rows_columns_reimport_test_set_and_unsaved_warning(tmp_path):
    db = tmp_path / "studio.db"
    store = open_store(f"sqlite:///{db}", cached=False)
    project = import_example(store, SCRIPTED)
    with studio_server(db) as url, chromium_page(**SIZE) as page:
        page.goto(f"{url}/projects?project={project.id}")
        page.get_by_role("heading", name="Projects", exact=True).wait_for()
        page.get_by_role("tab", name="Dataset").click()
        page.get_by_text("Load rows: upload a CSV/JSONL file or paste").click()
        wait_idle(page)

        # a CSV with new columns: nothing replaced until confirmed; its columns chosen
        upload(page, "projects-rows_upload-", "questions.csv",
               "question,answer\nWhat is 2+2?,4\nCapital of Peru?,Lima\n")
        page.get_by_role("button", name="Use the uploaded file").click()
        page.get_by_text(re.compile(r"2 row\(s\) from questions.csv for the training rows, "
                                    r"with the columns 'question', 'answer'")).wait_for()
        wait_idle(page)
        shot(page, "projects_rows_confirm")
        page.get_by_role("button", name=re.compile(r"Replace the \d+ training rows")).click()
        page.get_by_text("Training rows: 2").wait_for()
        wait_idle(page)
        # only the separate validation rows (the old columns) are in the way now
        assert page.get_by_text(re.compile(r"dataset\.train.*has no column")).count() == 0
        page.get_by_role("button", name="Split the training rows instead").click()
        # the rerun removes the warning: wait for that, not for an idle that can come before it
        expect(page.get_by_text("has no column")).to_have_count(0, timeout=60_000)
        wait_idle(page)
        assert page.get_by_text("Unsaved changes").count() == 1
        assert page.get_by_text("All changes saved.").count() == 0

        # a reload while edits are unsaved asks first (and the edits are gone after it)
        dialogs: list[str] = []

        def answer(dialog) -> None:
            dialogs.append(dialog.type)
            dialog.accept()

        page.on("dialog", answer)
        page.reload()
        page.get_by_role("heading", name="Projects", exact=True).wait_for()
        assert dialogs == ["beforeunload"]
        page.remove_listener("dialog", answer)
        wait_idle(page)
        assert page.get_by_text("All changes saved.").count() == 1

        # the test set, on the Dataset tab
        page.get_by_role("tab", name="Dataset").click()
        page.get_by_text("No test set").wait_for()
        page.get_by_text("Load rows: upload a CSV/JSONL file or paste").click()
        page.get_by_text("test rows", exact=True).click()
        wait_idle(page)
        page.get_by_label("Or paste rows").fill('{"topic": "snow at dusk"}\n{"topic": "a kettle"}')
        page.get_by_label("Or paste rows").press("Tab")
        wait_idle(page)
        page.get_by_role("button", name="Use the pasted rows").click()
        page.get_by_role("button", name="Use these rows as the test rows").click()
        page.get_by_text(re.compile(r"^2 test rows")).wait_for()
        wait_idle(page)
        shot(page, "projects_test_set")
        page.get_by_role("button", name="Save project").click()
        page.get_by_text("All changes saved.").wait_for()
        stored = parse_project(store.get_project(project.id).yaml)
        assert [row["topic"] for row in stored.dataset.test] == ["snow at dusk", "a kettle"]

        # a fixed project file imported again under the same name is read anew
        page.get_by_text("Add a project: examples and import").click()
        wait_idle(page)
        text = SCRIPTED.read_text()
        for n, description in enumerate(("first version", "fixed version")):
            version = text.replace("name: haiku-scripted", f"name: same-file-{n}").replace(
                "description:", f"description: {description}.", 1)
            upload(page, "projects-upload-", "project.yaml", version)
            page.get_by_role("button", name="Import").click()
            page.get_by_text(f"Imported same-file-{n}").wait_for()
            wait_idle(page)
            assert description in store.find_project(f"same-file-{n}").yaml
        shot(page, "projects_reimported")
    store.close()
