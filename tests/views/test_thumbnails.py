"""Thumbnails for the trial views: small PNGs the studio re-encodes, bounded in size and in the
pixels it agrees to decode; a video or an unreadable image gets a caption instead."""

from __future__ import annotations

import io
import struct
import zlib

from studio.model.limits import THUMBNAIL_PIXELS
from studio.model.media import data_uri
from studio.views.media import example_thumbnails


def picture(size: tuple[int, int], fmt: str = "JPEG") -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (10, 200, 90)).save(out, format=fmt)
    return out.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels (a decompression bomb's shape)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def size_of(png: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        return image.size


def test_a_large_image_becomes_a_small_png_keeping_its_shape():
    jpeg = picture((1200, 600))
    [thumb] = example_thumbnails({"photo": data_uri(jpeg, "image/jpeg"), "q": "what?"})
    assert size_of(thumb.png) == (THUMBNAIL_PIXELS, THUMBNAIL_PIXELS // 2)
    assert len(thumb.png) < len(jpeg)
    assert thumb.caption == f"photo · image/jpeg · {len(jpeg) / 1000:.1f} kB"


def test_every_supported_image_type_gets_a_thumbnail_in_field_order():
    example = {"b": data_uri(picture((30, 30), "GIF"), "image/gif"), "text": "x",
               "a": data_uri(picture((30, 20), "WEBP"), "image/webp")}
    thumbs = example_thumbnails(example)
    assert [t.field for t in thumbs] == ["b", "a"]
    assert [size_of(t.png) for t in thumbs] == [(30, 30), (30, 20)]


def test_a_video_and_a_pixel_bomb_get_a_caption_instead_of_a_picture():
    mp4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + b"\x00" * 32
    bomb = png_claiming(60_000, 60_000)
    thumbs = example_thumbnails({"clip": data_uri(mp4, "video/mp4"),
                                 "huge": data_uri(bomb, "image/png")})
    assert [t.png for t in thumbs] == [None, None]
    assert thumbs[0].caption.endswith("(video: no preview)")
    assert "no preview" in thumbs[1].caption


def test_an_example_without_images_has_no_thumbnails():
    assert example_thumbnails({"topic": "autumn", "expected": "leaves"}) == []
