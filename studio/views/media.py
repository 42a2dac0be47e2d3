"""Thumbnails of an example's images, for the trial views.

A thumbnail is re-encoded here as a small PNG (at most
:data:`~studio.model.limits.THUMBNAIL_PIXELS` a side), so the page sends the browser a few
kilobytes per trial instead of the full image, and the browser only ever decodes a PNG the
studio wrote. Pages show it with ``st.image`` from these bytes, never as HTML. A video gets a
note instead of a picture (decoding video is not worth a dependency).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from studio.model.errors import DatasetError
from studio.model.limits import THUMBNAIL_PIXELS
from studio.model.media import example_media

MAX_DECODED_PIXELS = 40_000_000
"""An image claiming more pixels than this (a decompression bomb, or just huge) gets a note
instead of a thumbnail: its header is read, its pixels are not."""


@dataclass(frozen=True)
class Thumbnail:
    """One media field of an example as a trial view shows it."""

    field: str
    caption: str
    png: bytes | None = None
    """The thumbnail, or None when there is only the caption (a video, an undecodable image)."""


def example_thumbnails(example: dict[str, Any], *, size: int = THUMBNAIL_PIXELS
                       ) -> list[Thumbnail]:
    """A thumbnail per image or video field of ``example``, in field order."""
    try:
        media = example_media(example)
    except DatasetError as exc:  # stored data is data: say so rather than fail the page
        return [Thumbnail(field="?", caption=f"unreadable image: {exc}")]
    return [_thumbnail(m.field, m.mime_type, m.data, size) for m in media]


def _thumbnail(field: str, mime_type: str, data: bytes, size: int) -> Thumbnail:
    caption = f"{field} · {mime_type} · {_size_text(len(data))}"
    if mime_type.startswith("video/"):
        return Thumbnail(field, f"{caption} (video: no preview)")
    try:
        return Thumbnail(field, caption, small_png(data, size))
    except Exception as exc:  # untrusted bytes PIL cannot read: a note, never a failed page
        return Thumbnail(field, f"{caption} (no preview: {exc})"[:300])


def small_png(data: bytes, size: int = THUMBNAIL_PIXELS) -> bytes:
    """``data`` (PNG, JPEG, GIF or WEBP) scaled to fit ``size`` pixels a side, as PNG.

    Raises:
        ValueError: the image claims more than :data:`MAX_DECODED_PIXELS` pixels.
        OSError: PIL cannot read the image.
    """
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
        if width * height > MAX_DECODED_PIXELS:
            raise ValueError(f"{width}x{height} pixels is too large to preview")
        image.draft("RGB", (size, size))  # JPEG: decode at a reduced scale
        frame = image.convert("RGBA")
        frame.thumbnail((size, size))
        out = io.BytesIO()
        frame.save(out, format="PNG", optimize=True)
        return out.getvalue()


def _size_text(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    return f"{size / 1000:.1f} kB" if size >= 1000 else f"{size} B"
