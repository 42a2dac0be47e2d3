"""Reading files a person gives: bounded in size (:data:`MAX_DATASET_BYTES`), UTF-8 only, and
CSV / JSON Lines rows (:data:`MAX_CELL_CHARS`, :data:`MAX_JSON_DEPTH`, no NaN), each refusal
naming the file and line."""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path
from typing import Any, NoReturn

from studio.model.errors import ConfigError, DatasetError
from studio.model.jsontools import MAX_JSON_DEPTH, finite_float, json_depth, unique_keys

MAX_DATASET_BYTES = 100_000_000
"""A dataset file larger than this (100 MB) is refused before it is read."""
MAX_CELL_CHARS = 1_000_000
"""The longest CSV cell read (1 MB of text)."""


def read_bounded(path: Path, limit: int, error: type[ConfigError]) -> bytes:
    """The bytes of a regular file no larger than ``limit`` (a FIFO is refused, never read:
    reading one would wait for a writer)."""
    try:
        if not path.is_file():
            raise error("file not found" if not path.exists() else
                        f"not a regular file ({file_kind(path)})", where=str(path))
        size = path.stat().st_size
        if size > limit:
            raise error(f"the file is {size:,} bytes; the limit is {limit:,}", where=str(path))
        return path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror}", where=str(path)) from exc


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO, a named pipe"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISREG, "a file"))


def file_kind(path: Path) -> str:
    """What is at ``path``, in words a refusal can use ("a folder", "a FIFO, a named pipe")."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "nothing: it does not exist"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def decode_text(data: bytes, source: str, error: type[ConfigError] = DatasetError) -> str:
    """UTF-8 text (a UTF-8 byte-order mark is dropped); any other encoding is refused with the
    line of the first bad byte, so nothing is silently garbled."""
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                      (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if data.startswith(bom):
            raise error(f"the file is {name}; save it as UTF-8", where=source)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise error(f"line {line} is not UTF-8 (byte 0x{data[exc.start]:02x}); the file looks "
                    "like Latin-1/Windows-1252 or UTF-16: save it as UTF-8",
                    where=f"{source}, line {line}") from exc


csv.field_size_limit(MAX_CELL_CHARS)


def read_csv(path: Path | str, text: str | None = None) -> list[dict[str, Any]]:
    """Rows of a CSV with a header: every row has every column (an empty cell is ``""``)."""
    if text is None:
        text = decode_text(read_bounded(Path(path), MAX_DATASET_BYTES, DatasetError), str(path))
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise DatasetError("the CSV has no header row", where=str(path))
        check_header(header, str(path))
        rows = []
        for cells in reader:
            if not cells:
                continue
            rows.append(_csv_row(header, cells, reader.line_num, str(path)))
    except csv.Error as exc:
        limit = (f" (the longest cell read is {MAX_CELL_CHARS:,} characters)"
                 if "field limit" in str(exc) else "")
        raise DatasetError(f"the CSV does not parse: {exc}{limit}",
                           where=f"{path}, line {reader.line_num}") from exc
    return rows


def check_header(header: list[str], source: str) -> None:
    """Column names must be present and distinct, or a column's data would be dropped."""
    seen: set[str] = set()
    for number, name in enumerate(header, start=1):
        if not name.strip():
            raise DatasetError(f"column {number} of the header has no name; name every column",
                               where=f"{source}, line 1")
        if name in seen:
            raise DatasetError(f"column name {name!r} appears twice in the header; rename one",
                               where=f"{source}, line 1", value=name)
        seen.add(name)


def _csv_row(header: list[str], cells: list[str], line: int, source: str) -> dict[str, str]:
    if len(cells) > len(header):
        raise DatasetError(f"line {line} has {len(cells)} cells but the header has "
                           f"{len(header)} columns", where=f"{source}, line {line}")
    if len(cells) < len(header):
        missing = ", ".join(header[len(cells):])
        raise DatasetError(f"line {line} has {len(cells)} cells but the header has "
                           f"{len(header)} columns (missing: {missing}); an empty cell is "
                           "written as nothing between two commas", where=f"{source}, line {line}")
    return dict(zip(header, cells, strict=True))


def read_jsonl(path: Path | str, text: str | None = None) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file: one object per line; NaN, infinities (``Infinity``, ``1e400``)
    and deep nesting refused."""
    if text is None:
        text = decode_text(read_bounded(Path(path), MAX_DATASET_BYTES, DatasetError), str(path))
    rows = []
    # "\n" only: str.splitlines also splits at U+2028, U+0085 ..., which JSON allows raw in strings
    for line_number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = f"{path}, line {line_number}"
        row = _json_line(line, line_number, where)
        if not isinstance(row, dict):
            raise DatasetError(f"line {line_number} is not a JSON object", where=where)
        rows.append(row)
    return rows


def parse_json_array(text: str, source: str) -> list[dict[str, Any]]:
    """Rows from a JSON array of objects, bounded like JSONL (nesting, NaN/Infinity)."""
    rows = _json_line(text, 1, source, label="the data")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DatasetError("a JSON dataset must be an array of objects", where=source)
    return rows


def _json_line(line: str, line_number: int, where: str, label: str = "") -> Any:
    label = label or f"line {line_number}"
    if json_depth(line) > MAX_JSON_DEPTH:
        raise DatasetError(f"{label} nests more than {MAX_JSON_DEPTH} levels deep",
                           where=where)
    try:
        return json.loads(line, parse_constant=_refuse_constant, parse_float=finite_float,
                          object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        where = where if label.startswith("line") else f"{where}, line {exc.lineno}"
        raise DatasetError(f"{label} is not JSON: {exc.msg}", where=where) from exc
    except ValueError as exc:
        raise DatasetError(f"{label}: {exc}", where=where) from exc


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number JSON can hold; write null or a number")
