"""Image decoding through Pillow, several images at once.

Pillow's decoders run in C with the GIL released, so a thread pool decodes a model's images
on every core (a 2-core machine decodes the five 2048² JPEGs of a typical PBR model in about
the time of the two largest). Every failure is one ``ImageError`` line naming the image.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine.materials.model import Image


class ImageError(ValueError):
    """An image cannot be decoded; the message names it and says why."""


def decode(name: str, data: bytes) -> Image:
    """Decode encoded image bytes (PNG, JPEG, or anything Pillow reads) to RGBA8.

    16-bit images keep their 8 most significant bits; greyscale is replicated to RGB, a
    missing alpha is 255.

    Raises:
        ImageError: empty, truncated or unreadable data (naming ``name``).
    """
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    if not data:
        raise ImageError(f"{name}: the image is empty (0 bytes)")
    try:
        img = PILImage.open(io.BytesIO(data))
        img.load()
    except UnidentifiedImageError:
        raise ImageError(f"{name}: not an image format Pillow can read (PNG, JPEG, ...)") from None
    except (OSError, SyntaxError, ValueError) as e:  # truncated, corrupt
        raise ImageError(f"{name}: cannot decode the image ({e})") from None
    except PILImage.DecompressionBombError as e:
        raise ImageError(f"{name}: {e}") from None
    return Image(name, to_rgba8(img))


def to_rgba8(img) -> np.ndarray:
    """``(h, w, 4)`` uint8 of a Pillow image of any mode."""
    if img.mode.startswith("I;16") or img.mode == "I":
        grey = (np.asarray(img, np.uint32) >> 8).clip(0, 255).astype(np.uint8)
        rgba = np.empty((*grey.shape, 4), np.uint8)
        rgba[..., :3] = grey[..., None]
        rgba[..., 3] = 255
        return rgba
    if img.mode != "RGBA":
        img = img.convert("RGBA")
    return np.asarray(img, np.uint8).copy()


def decode_all(
    sources: Sequence[tuple[str, Callable[[], bytes]]], *, workers: int | None = None
) -> list[Image]:
    """Decode ``(name, read)`` pairs in parallel (``read()`` returns the encoded bytes; it
    may raise ImageError itself); results in input order.

    Raises:
        ImageError: the first failing image in input order.
    """
    if not sources:
        return []
    workers = workers or min(len(sources), max(2, os.cpu_count() or 2))

    def one(item):
        name, read = item
        return decode(name, read())

    if len(sources) == 1:
        return [one(sources[0])]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="decode") as pool:
        return list(pool.map(one, sources))
