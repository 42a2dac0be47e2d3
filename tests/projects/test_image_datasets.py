"""Image columns in project datasets: paths read relative to the dataset file's folder (never
outside it) and stored as data URIs; browser projects may hold data URIs only."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from studio.model.errors import DatasetError
from studio.model.media import data_uri
from studio.projects.files import (
    PROJECT_JSON_SCHEMA,
    Origin,
    check_project,
    dump_project,
    inline_datasets,
    load_project,
    parse_project,
    resolve_datasets,
)
from studio.projects.workspace import import_yaml


def png(colour: tuple[int, int, int] = (200, 0, 0)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (12, 12), colour).save(out, format="PNG")
    return out.getvalue()


def project_text(train: str, images: str = "[photo]") -> str:
    return f"""
name: pictures
agent: {{name: looker, model: scripted/echo, instruction: "Describe {{photo}}."}}
critic: {{type: evaluator, evaluator: {{evaluator: exact_match}}}}
reflection: {{model: scripted/demo}}
dataset:
  train: {train}
  images: {images}
  expected_column: answer
"""


@pytest.fixture
def folder(tmp_path) -> Path:
    """A project folder: data/rows.csv naming images under data/img/, a secret beside it."""
    (tmp_path / "data" / "img").mkdir(parents=True)
    (tmp_path / "data" / "img" / "red.png").write_bytes(png())
    (tmp_path / "data" / "img" / "blue.png").write_bytes(png((0, 0, 200)))
    (tmp_path / "secret.png").write_bytes(png((1, 2, 3)))
    return tmp_path


def write_csv(folder: Path, *rows: str) -> None:
    (folder / "data" / "rows.csv").write_text("photo,answer\n" + "\n".join(rows) + "\n")


def load(folder: Path, text: str, origin: Origin = Origin.LOCAL):
    project = parse_project(text, source="p.yaml")
    return resolve_datasets(project, folder, source="p.yaml", origin=origin)


def test_paths_are_read_relative_to_the_dataset_file_and_stored_as_data_uris(folder):
    write_csv(folder, "img/red.png,red", "img/blue.png,blue", ",none")
    train, _ = load(folder, project_text("{path: data/rows.csv}"))
    assert [row["photo"] for row in train] == [
        data_uri(png(), "image/png"), data_uri(png((0, 0, 200)), "image/png"), ""]
    assert [row["expected"] for row in train] == ["red", "blue", "none"]


def test_inline_rows_are_relative_to_the_project_file(folder):
    text = project_text("[{photo: data/img/red.png, answer: red}]")
    train, _ = load(folder, text)
    assert train[0]["photo"] == data_uri(png(), "image/png")
    spec_check, _ = check_project(parse_project(text), folder, source="p.yaml")
    assert spec_check == train


@pytest.mark.parametrize("cell, message", [
    ("../secret.png", "leads outside the dataset's folder"),
    ("img/../../secret.png", "leads outside the dataset's folder"),
    ("/etc/passwd", "is an absolute path"),
    ("~/secret.png", "is an absolute path"),
    ("https://example.com/cat.png", "is a URL; images are never fetched"),
    ("file:///etc/passwd", "is a URL"),
    ("img/missing.png", "image file not found"),
    ("img", "is not a regular file"),
    ("rows.csv", "not a supported image or video"),
    ("img/red\x00.png", "is not a usable path"),
])
def test_a_bad_path_is_refused_naming_the_row_and_the_column(folder, cell, message):
    write_csv(folder, "img/red.png,red", f"{cell},x")
    with pytest.raises(DatasetError) as caught:
        load(folder, project_text("{path: data/rows.csv}"))
    assert caught.value.where == "p.yaml: dataset.train[1].photo"
    assert message in caught.value.message


def test_a_symlink_leading_out_of_the_folder_is_refused_and_one_inside_is_followed(folder):
    os.symlink(folder / "secret.png", folder / "data" / "img" / "escape.png")
    os.symlink(folder / "data" / "img" / "red.png", folder / "data" / "img" / "alias.png")
    write_csv(folder, "img/alias.png,red")
    train, _ = load(folder, project_text("{path: data/rows.csv}"))
    assert train[0]["photo"] == data_uri(png(), "image/png")
    write_csv(folder, "img/alias.png,red", "img/escape.png,x")
    with pytest.raises(DatasetError, match="leads outside the dataset's folder") as caught:
        load(folder, project_text("{path: data/rows.csv}"))
    assert caught.value.where == "p.yaml: dataset.train[1].photo"


def test_an_image_column_missing_from_a_row_or_not_text_is_refused(folder):
    with pytest.raises(DatasetError, match="row 0 has no column 'photo'") as caught:
        load(folder, project_text("[{picture: data/img/red.png, answer: red}]"))
    assert caught.value.where == "p.yaml: dataset.train[0].photo"
    with pytest.raises(DatasetError, match="holds a path or a data URI, got int"):
        load(folder, project_text("[{photo: 7, answer: red}]"))


def test_an_oversize_image_file_is_refused_before_it_is_read_whole(folder, monkeypatch):
    from studio.model import media

    monkeypatch.setattr(media, "MAX_VIDEO_BYTES", 50)
    with pytest.raises(DatasetError, match="bytes; the limit is") as caught:
        load(folder, project_text("[{photo: data/img/red.png, answer: red}]"))
    assert caught.value.where == "p.yaml: dataset.train[0].photo"


def test_a_browser_project_may_hold_data_uris_but_not_paths(folder, store):
    inline = data_uri(png(), "image/png")
    train, _ = load(folder, project_text(f"[{{photo: '{inline}', answer: red}}]"),
                    Origin.BROWSER)
    assert train[0]["photo"] == inline
    with pytest.raises(DatasetError, match="cannot read files on the server; embed the image"):
        load(folder, project_text("[{photo: data/img/red.png, answer: red}]"), Origin.BROWSER)
    with pytest.raises(DatasetError, match="cannot read files on the server"):
        import_yaml(store, project_text("[{photo: data/img/red.png, answer: red}]"), "up.yaml")


def test_a_bad_data_uri_in_any_column_is_refused(folder):
    text = project_text("[{note: 'data:image/png;base64,AAAA', answer: red}]", images="[]")
    with pytest.raises(DatasetError, match="not a supported image") as caught:
        load(folder, text)
    assert caught.value.where == "p.yaml: dataset.train[0].note"


def test_inlining_a_project_stores_its_images_as_data_uris(folder):
    write_csv(folder, "img/red.png,red")
    project = inline_datasets(parse_project(project_text("{path: data/rows.csv}")), folder)
    stored = parse_project(dump_project(project))
    assert stored.dataset.train == [{"photo": data_uri(png(), "image/png"), "answer": "red"}]
    train, _ = resolve_datasets(stored, Path("."), origin=Origin.BROWSER)
    assert train[0]["photo"] == data_uri(png(), "image/png")


def test_the_json_schema_documents_image_columns():
    field = PROJECT_JSON_SCHEMA["$defs"]["DatasetSection"]["properties"]["images"]
    assert field["type"] == "array" and field["items"] == {"type": "string"}


def test_a_project_too_large_once_its_images_are_inlined_is_not_stored(folder, store,
                                                                       monkeypatch):
    from studio.model.errors import ProjectFileError
    from studio.projects import workspace

    plain, pictured = folder / "plain.yaml", folder / "pictured.yaml"
    plain.write_text(project_text("[{photo: '', answer: red}]"))
    pictured.write_text(project_text("[{photo: data/img/red.png, answer: red}]"))
    # The limit sits just above the plain project's stored size (it grows with the project
    # file's fields), well under the pictured one's (its PNG inlined as a data URI).
    plain_size = len(dump_project(inline_datasets(*load_project(plain))))
    monkeypatch.setattr(workspace, "MAX_PROJECT_BYTES", plain_size + 50)
    workspace.import_example(store, plain)  # fits without its image
    with pytest.raises(ProjectFileError, match="with its datasets inlined"):
        workspace.import_example(store, pictured)
    assert len(store.list_projects()) == 1
