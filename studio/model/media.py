"""Images (and short videos) as agent inputs: how an example holds them and how they are checked.

An example field holds media when its value is a data URI of an image or a video
(``data:image/png;base64,...``). A project may also declare columns of image *paths*
(``dataset.images``); they are read when the dataset loads (confined to the dataset file's
folder) and stored as data URIs, so a stored run needs no file and any worker can run it.

Every media value is bounded (:data:`~studio.model.limits.MAX_IMAGE_BYTES`,
:data:`~studio.model.limits.MAX_VIDEO_BYTES`) and its type is read from its first bytes, never
from its name or declared type: PNG, JPEG, GIF, WEBP, MP4 and WEBM only. At run time a media
field reaches the agent as an ADK inline-data part; in the input text and the session state it
is replaced by a short label (``[image: photo]``), so a ``{photo}`` placeholder never pours
base64 into a prompt.
"""

from __future__ import annotations

import base64
import binascii
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.model.errors import DatasetError
from studio.model.limits import (
    MAX_IMAGE_BYTES,
    MAX_MEDIA_PER_EXAMPLE,
    MAX_VIDEO_BYTES,
)

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
VIDEO_TYPES = ("video/mp4", "video/webm")
SUPPORTED = "PNG, JPEG, GIF, WEBP, MP4 or WEBM"

_MEDIA_PREFIXES = ("data:image/", "data:video/")
_REMOTE_PREFIXES = ("http://", "https://", "ftp://", "file:", "//")
_MP4_BRANDS = {b"isom", b"iso2", b"iso4", b"iso5", b"iso6", b"mp41", b"mp42", b"avc1",
               b"dash", b"M4V ", b"mmp4", b"MSNV"}
_TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


@dataclass(frozen=True)
class Media:
    """One image or video of an example, as the agent receives it."""

    field: str
    mime_type: str
    data: bytes

    @property
    def kind(self) -> str:
        return media_kind(self.mime_type)

    @property
    def label(self) -> str:
        return media_label(self.field, self.mime_type)


def media_kind(mime_type: str) -> str:
    """``image`` or ``video``."""
    return "video" if mime_type.startswith("video/") else "image"


def media_label(field: str, mime_type: str) -> str:
    """What the input text and the session state hold in place of the media itself."""
    return f"[{media_kind(mime_type)}: {field}]"


def sniff_type(data: bytes) -> str | None:
    """The media type the bytes say they are (magic numbers), or None when not supported."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:8] == b"ftyp" and data[8:12] in _MP4_BRANDS:
        return "video/mp4"
    if data.startswith(b"\x1a\x45\xdf\xa3") and b"webm" in data[:64]:
        return "video/webm"
    return None


def byte_limit(mime_type: str) -> int:
    return MAX_VIDEO_BYTES if media_kind(mime_type) == "video" else MAX_IMAGE_BYTES


def checked_type(data: bytes, *, where: str, declared: str | None = None) -> str:
    """The sniffed type of ``data``, after checking it is supported and within its limit.

    Raises:
        DatasetError: naming ``where``, the type found and the limit.
    """
    mime_type = sniff_type(data)
    if mime_type is None:
        said = f" (declared {declared})" if declared else ""
        raise DatasetError(f"not a supported image or video{said}: the bytes are not "
                           f"{SUPPORTED} (starts with {data[:8].hex(' ') or 'nothing'})",
                           where=where)
    if declared and media_kind(declared) != media_kind(mime_type):
        raise DatasetError(f"declared {declared} but the bytes are {mime_type}", where=where)
    limit = byte_limit(mime_type)
    if len(data) > limit:
        raise DatasetError(f"the {media_kind(mime_type)} is {len(data):,} bytes; the limit is "
                           f"{limit:,} ({mime_type})", where=where)
    return mime_type


def data_uri(data: bytes, mime_type: str) -> str:
    return f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"


def is_media_uri(value: object) -> bool:
    """Whether ``value`` is a data URI of an image or a video (supported or not)."""
    return isinstance(value, str) and value[:11].lower().startswith(_MEDIA_PREFIXES)


def decode_media_uri(uri: str, *, where: str) -> tuple[str, bytes]:
    """``(sniffed type, bytes)`` of a base64 image or video data URI, checked and bounded.

    Raises:
        DatasetError: naming ``where`` and what is wrong with the URI or its bytes.
    """
    header, comma, payload = uri.partition(",")
    if not comma:
        raise DatasetError("a data URI needs a comma before its data "
                           "(data:image/png;base64,...)", where=where)
    params = header[5:].split(";")
    declared = _TYPE_ALIASES.get(params[0].strip().lower(), params[0].strip().lower())
    if "base64" not in (p.strip().lower() for p in params[1:]):
        raise DatasetError(f"a {declared} data URI must be base64 (data:{declared};base64,...)",
                           where=where)
    payload = payload.strip()
    if len(payload) * 3 // 4 > MAX_VIDEO_BYTES:  # refused before decoding anything that large
        raise DatasetError(f"the data URI holds about {len(payload) * 3 // 4:,} bytes; the "
                           f"limit is {MAX_IMAGE_BYTES:,} for an image, {MAX_VIDEO_BYTES:,} "
                           "for a video", where=where)
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DatasetError(f"the data URI's base64 does not decode: {exc}", where=where) from exc
    return checked_type(data, where=where, declared=declared), data


def image_file(path: str | Path) -> str:
    """A data URI of the image (or MP4/WEBM video) at ``path``, for ``evolve(trainset=...)``:
    ``{"photo": studio.image_file("cat.png"), "question": "What animal is this?"}``.

    Raises:
        DatasetError: the file is missing, not a regular file, too large or not supported.
    """
    path = Path(path)
    return media_from_file(path, where=str(path))


def media_from_file(path: Path, *, where: str) -> str:
    """The data URI of a regular file, read no further than the video limit."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise DatasetError(f"{path} is not a regular file (a folder or a device)",
                               where=where, value=str(path))
        if info.st_size > MAX_VIDEO_BYTES:
            raise DatasetError(f"{path} is {info.st_size:,} bytes; the limit is "
                               f"{MAX_IMAGE_BYTES:,} for an image, {MAX_VIDEO_BYTES:,} for a "
                               "video", where=where, value=str(path))
        with path.open("rb") as handle:
            data = handle.read(MAX_VIDEO_BYTES + 1)
    except FileNotFoundError as exc:
        raise DatasetError(f"image file not found: {path}", where=where,
                           value=str(path)) from exc
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror}", where=where,
                           value=str(path)) from exc
    try:
        return data_uri(data, checked_type(data, where=where))
    except DatasetError as exc:
        raise DatasetError(f"{path}: {exc.message}", where=where, value=str(path)) from exc


def media_from_path(value: str, folder: Path, *, where: str) -> str:
    """The data URI of the file ``value`` names, relative to ``folder`` and never outside it
    (absolute paths, ``..`` and symlinks leading out are refused).

    Raises:
        DatasetError: naming ``where``, the path and why it is refused.
    """
    text = value.strip()
    if text.lower().startswith(_REMOTE_PREFIXES):
        raise DatasetError(f"{value!r} is a URL; images are never fetched: save the file next "
                           "to the dataset and give its relative path", where=where, value=value)
    raw = Path(text)
    if raw.is_absolute() or text.startswith("~"):
        raise DatasetError(f"{value!r} is an absolute path; give a path relative to the "
                           f"dataset's folder {folder}", where=where, value=value)
    try:
        root = folder.resolve()
        path = (root / raw).resolve()
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long
        raise DatasetError(f"{value[:100]!r} is not a usable path: {exc}", where=where,
                           value=value[:100]) from exc
    if not path.is_relative_to(root):
        raise DatasetError(f"{value!r} leads outside the dataset's folder {root} (through "
                           "'..' or a symlink); move the image into that folder", where=where,
                           value=value)
    return media_from_file(path, where=where)


def check_example_media(row: dict[str, Any], *, where: str) -> tuple[dict[str, Any], int]:
    """``(row, media bytes)``: every media value of the row checked, with its data URI rewritten
    to the sniffed type where the declared one differs.

    Raises:
        DatasetError: naming the row and the column of a bad, oversize, unsupported or
            misplaced image (media must be a whole top-level value, not inside a list or an
            object, and not the expected answer).
    """
    total, count, fixed = 0, 0, {}
    for key, value in row.items():
        if not is_media_uri(value):
            _refuse_nested_media(value, f"{where}.{key}")
            continue
        if key == "expected":
            raise DatasetError("the expected answer is an image or a video; the critic compares "
                               "text: put the image in an input column", where=f"{where}.{key}")
        mime_type, data = decode_media_uri(value, where=f"{where}.{key}")
        total, count = total + len(data), count + 1
        if not value.startswith(f"data:{mime_type};base64,"):
            fixed[key] = data_uri(data, mime_type)
    if count > MAX_MEDIA_PER_EXAMPLE:
        raise DatasetError(f"the example holds {count} images or videos; the limit is "
                           f"{MAX_MEDIA_PER_EXAMPLE}", where=where)
    return ({**row, **fixed} if fixed else row), total


def _refuse_nested_media(value: object, where: str) -> None:
    stack = [value] if isinstance(value, list | dict) else []
    while stack:
        item = stack.pop()
        items = item.values() if isinstance(item, dict) else item
        for inner in items:
            if is_media_uri(inner):
                raise DatasetError("an image or video inside a list or an object would be sent "
                                   "as text: give each one its own column", where=where)
            if isinstance(inner, list | dict):
                stack.append(inner)


def example_media(example: dict[str, Any]) -> list[Media]:
    """The example's images and videos, in field order (checked again: stored data is data)."""
    found = []
    for key, value in example.items():
        if key != "expected" and is_media_uri(value):
            mime_type, data = decode_media_uri(value, where=key)
            found.append(Media(field=key, mime_type=mime_type, data=data))
    return found


def without_media(example: dict[str, Any]) -> dict[str, Any]:
    """The example with each media value replaced by its label."""
    return {key: _label_of(key, value) if is_media_uri(value) else value
            for key, value in example.items()}


def _label_of(key: str, uri: str) -> str:
    declared = uri[5:].split(";", 1)[0].split(",", 1)[0].lower()
    return media_label(key, declared)
