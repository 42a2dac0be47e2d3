"""A project's datasets resolved to rows: files read (inside the project's folder, local projects
only), image paths read as data URIs, columns checked, the validation split carved out."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Protocol

from studio.model.errors import DatasetError
from studio.model.jsontools import first_non_finite
from studio.model.media import is_media_uri, media_from_path
from studio.model.records import (
    EXPECTED_KEY,
    CheckedExamples,
    validate_examples,
)
from studio.projects.files.readers import (
    MAX_DATASET_BYTES,
    decode_text,
    file_kind,
    read_bounded,
    read_csv,
    read_jsonl,
)
from studio.projects.files.sections import DatasetSection, DataSource, ProjectFile, SplitSection
from studio.projects.files.trust import Origin
from studio.runtime.adk_evalsets import eval_set_rows, is_eval_set_file


def load_rows(source: list[dict[str, Any]] | DataSource, base_dir: Path, where: str,
              origin: Origin = Origin.LOCAL, images: list[str] | None = None
              ) -> list[dict[str, Any]]:
    """The rows of a dataset source, image paths in the ``images`` columns read as data URIs
    (relative to the dataset file's folder, or ``base_dir`` for inline rows)."""
    if isinstance(source, list):
        return resolve_images(source, images or [], base_dir, where, origin)
    path = dataset_path(source, base_dir, where, origin)
    return resolve_images(read_rows(path, source, where), images or [], path.parent, where,
                          origin)


def read_rows(path: Path, source: DataSource, where: str) -> list[dict[str, Any]]:
    """The rows of a CSV, JSONL or ADK eval set dataset file (bounded, UTF-8 only)."""
    if is_eval_set_file(path):  # ADK's *.evalset.json / *.test.json: studio.runtime.adk_evalsets
        text = decode_text(read_bounded(path, MAX_DATASET_BYTES, DatasetError), str(path))
        return eval_set_rows(text, source=source.path, where=where)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise DatasetError(f"unsupported dataset file type {suffix!r} ({source.path}): use .csv "
                           "or .jsonl (or ADK's .evalset.json / .test.json)",
                           where=f"{where}.path", value=source.path)
    text = decode_text(read_bounded(path, MAX_DATASET_BYTES, DatasetError), str(path))
    rows = read_csv(path, text=text) if suffix == ".csv" else read_jsonl(path, text=text)
    if not rows:
        raise DatasetError(f"the file {source.path} has no rows", where=f"{where}.path",
                           value=source.path)
    return rows


def resolve_images(rows: list[Any], columns: list[str], folder: Path, where: str,
                   origin: Origin) -> list[Any]:
    """Rows with each image path in ``columns`` replaced by the file's data URI (empty cells
    and data URIs are kept as they are).

    Raises:
        DatasetError: naming the row and the column of a missing column, a path that leads
            outside ``folder``, a file that is missing, too large or not an image, or a path
            in a project from the browser (which cannot read server files).
    """
    if not columns:
        return rows
    resolved = []
    for i, row in enumerate(rows):
        updates = {}
        for column in columns if isinstance(row, dict) else ():
            cell = f"{where}[{i}].{column}"
            if column not in row:
                raise DatasetError(f"row {i} has no column {column!r} (dataset.images); "
                                   f"columns: {sorted(row)}", where=cell)
            value = row[column]
            if value is None or value == "" or is_media_uri(value):
                continue
            updates[column] = _image_from_cell(value, folder, cell, origin)
        resolved.append({**row, **updates} if updates else row)
    return resolved


def _image_from_cell(value: object, folder: Path, cell: str, origin: Origin) -> str:
    if not isinstance(value, str):
        raise DatasetError(f"an image column holds a path or a data URI, got "
                           f"{type(value).__name__} {value!r}"[:200], where=cell)
    if origin is Origin.BROWSER:
        raise DatasetError(f"image {value[:100]!r}: a project from the browser cannot read "
                           "files on the server; embed the image as a data URI "
                           "(data:image/png;base64,...)", where=cell, value=value[:100])
    return media_from_path(value, folder, where=cell)


def dataset_path(source: DataSource, base_dir: Path, where: str, origin: Origin) -> Path:
    """The file of a dataset source: inside the project's folder, and only for local projects.

    Raises:
        DatasetError: naming the path and why it is refused.
    """
    if origin is Origin.BROWSER:
        raise DatasetError(
            f"dataset file {source.path!r}: a project from the browser cannot read files on the "
            "server; inline its rows (dataset.train: [{...}]) or upload the CSV/JSONL with the "
            "dataset editor", where=f"{where}.path", value=source.path)
    raw = Path(source.path)
    if raw.is_absolute():
        raise DatasetError(f"dataset file {source.path!r} is an absolute path; give a path "
                           "relative to the project file's folder", where=f"{where}.path",
                           value=source.path)
    folder = base_dir.resolve()
    path = (folder / raw).resolve()
    if not path.is_relative_to(folder):
        raise DatasetError(f"dataset file {source.path!r} is outside the project's folder "
                           f"{folder}; move it next to the project file", where=f"{where}.path",
                           value=source.path)
    if path.exists() and not path.is_file():
        raise DatasetError(f"dataset file {path} is not a regular file ({file_kind(path)})",
                           where=f"{where}.path", value=source.path)
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}", where=f"{where}.path",
                           value=source.path)
    return path


def check_finite(value: object, where: str) -> None:
    """Refuse NaN and infinities anywhere in a row (they would export as invalid JSON)."""
    found = first_non_finite(value, where)
    if found is not None:
        path, number = found
        raise DatasetError(f"{path} is {number}: write null or a number", where=path)


def prepare_rows(rows: list[dict[str, Any]], dataset: DatasetSection, where: str
                 ) -> list[dict[str, Any]]:
    """Check the chosen columns exist and rename the expected column to ``expected``."""
    prepared = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DatasetError(f"row {i} is not a mapping", where=where)
        for column, role in ((dataset.input_column, "input_column"),
                             (dataset.expected_column, "expected_column")):
            if column and column not in row:
                raise DatasetError(
                    f"row {i} has no column {column!r} (dataset.{role}); columns: "
                    f"{sorted(row)}", where=where)
        check_finite(row, f"{where}[{i}]")
        if dataset.expected_column and dataset.expected_column != EXPECTED_KEY:
            row = dict(row)  # a copy only when renamed: a large split is not held twice
            row[EXPECTED_KEY] = row.pop(dataset.expected_column)
        prepared.append(row)
    return validate_examples(prepared, name=where)


def resolve_datasets(project: WithDataset, base_dir: Path, *, source: str | None = None,
                     origin: Origin = Origin.LOCAL
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """``(trainset, valset or None)`` with files read, columns checked, split applied.

    Raises:
        DatasetError: naming the project file (``source``), the field and the problem.
    """
    try:
        return _resolve_datasets(project, base_dir, origin)
    except DatasetError as exc:
        if source is None:
            raise
        where = f"{source}: {exc.where}" if exc.where else source
        raise DatasetError(exc.message, where=where, value=exc.value) from exc


class WithDataset(Protocol):
    """What the dataset readers read of a project: its dataset section (a fork's ``--dataset``
    file has only that)."""

    @property
    def dataset(self) -> DatasetSection: ...


def train_source(dataset: DatasetSection) -> list[dict[str, Any]] | DataSource:
    """``dataset.train``, which the section's validation requires."""
    if dataset.train is None:
        raise DatasetError("dataset.train is required (inline rows or {path: ...})",
                           where="dataset.train")
    return dataset.train


def _resolve_datasets(project: WithDataset, base_dir: Path, origin: Origin
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    dataset = project.dataset
    train = prepare_rows(load_rows(train_source(dataset), base_dir, "dataset.train", origin,
                                   dataset.images), dataset, "dataset.train")
    val = None
    if dataset.val is not None:
        val = prepare_rows(load_rows(dataset.val, base_dir, "dataset.val", origin,
                                     dataset.images), dataset, "dataset.val")
    elif dataset.split.val_fraction > 0:
        train, val = split_rows(train, dataset.split)
    return train, val


def resolve_testset(project: WithDataset, base_dir: Path, *, source: str | None = None,
                    origin: Origin = Origin.LOCAL) -> list[dict[str, Any]] | None:
    """The project's held-out test rows (``dataset.test``), read and checked as ``train`` is;
    None without one.

    Raises:
        DatasetError: naming the project file (``source``), the field and the problem.
    """
    dataset = project.dataset
    if dataset.test is None:
        return None
    try:
        rows = load_rows(dataset.test, base_dir, "dataset.test", origin, dataset.images)
        return prepare_rows(rows, dataset, "dataset.test")
    except DatasetError as exc:
        if source is None:
            raise
        where = f"{source}: {exc.where}" if exc.where else source
        raise DatasetError(exc.message, where=where, value=exc.value) from exc


def split_rows(rows: list[dict[str, Any]], split: SplitSection
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shuffled = list(rows)
    random.Random(split.seed).shuffle(shuffled)
    n_val = max(1, round(len(rows) * split.val_fraction))
    if n_val >= len(rows):
        raise DatasetError(f"val_fraction {split.val_fraction} leaves no training rows "
                           f"out of {len(rows)}", where="dataset.split")
    if isinstance(rows, CheckedExamples):  # parts of a checked split are checked
        return rows.subset(shuffled[n_val:]), rows.subset(shuffled[:n_val])
    return shuffled[n_val:], shuffled[:n_val]


def inline_datasets(project: ProjectFile, base_dir: Path) -> ProjectFile:
    """A self-contained copy (file sources replaced by their rows, image paths by data URIs),
    for storing in the DB."""
    images = project.dataset.images
    dataset = project.dataset.model_copy(update={
        "train": load_rows(train_source(project.dataset), base_dir, "dataset.train",
                           images=images),
        "val": None if project.dataset.val is None else load_rows(
            project.dataset.val, base_dir, "dataset.val", images=images),
        "test": None if project.dataset.test is None else load_rows(
            project.dataset.test, base_dir, "dataset.test", images=images),
    })
    return project.model_copy(update={"dataset": dataset})
