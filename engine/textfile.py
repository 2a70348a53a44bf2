"""A user's file read as UTF-8 text, or one line saying where and why it is not.

Every reader of a file a user gives (WGSL, glTF, telemetry JSON Lines, traces, ablation
sources) decodes here or reports through ``utf8_problem``. A UTF-8 byte-order mark is valid,
not an error: it is stripped (Windows editors write one; naga and the JSON parsers would
reject it). Anything else that is not UTF-8 is named with its byte offset from the start of
the file and the likely cause (messages wrapped here)::

    shaders/post.wgsl: not UTF-8 at byte 214 (0xE9: Latin-1 or another 8-bit
        encoding?); save it as UTF-8
    shaders/post.wgsl: UTF-16 text (a byte-order mark at byte 0); save it as UTF-8
    shaders/post.wgsl: not UTF-8 at byte 4093 (0xC3 begins a character the data ends
        inside: a truncated file, or another encoding?)
    shaders/post.wgsl: a NUL byte at byte 37 (UTF-16 without a byte-order mark, or binary
        data?); save it as UTF-8 text

(NUL is valid UTF-8, but a reader that hands text to C, as wgpu does with WGSL, would stop
there: ``nul=False`` refuses it.)
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

UTF8_BOM = codecs.BOM_UTF8
_WIDE_BOMS = (  # longest first: a UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


class NotUtf8(ValueError):
    """A file that is not UTF-8 text. ``str()`` is one line: ``"<name>: <what>"``.

    Attributes:
        name: the file as the caller names it. offset: byte offset of the problem from the
            start of the file. what: the problem, its offset and what to do.
    """

    def __init__(self, name: str | os.PathLike, offset: int, what: str):
        super().__init__(f"{name}: {what}")
        self.name, self.offset, self.what = str(name), offset, what


def utf8_problem(data: bytes, *, base: int = 0, nul: bool = True) -> tuple[int, str] | None:
    """Why ``data`` is not UTF-8 text, or None when it is.

    Args:
        data: the bytes (a leading UTF-8 byte-order mark is fine).
        base: offset of ``data`` in its file (a line, a chunk); a byte-order mark counts only
            at 0.
        nul: whether a NUL byte is acceptable.

    Returns:
        ``(offset, what)``: the byte offset in the file and one clause naming it, or None.
    """
    if base == 0 and (wide := wide_text(data)) is not None:
        return 0, wide
    skip = len(UTF8_BOM) if base == 0 and data.startswith(UTF8_BOM) else 0
    try:
        codecs.decode(memoryview(data)[skip:], "utf-8")
    except UnicodeDecodeError as e:
        at, byte = base + skip + e.start, e.object[e.start]
        if e.reason == "unexpected end of data":
            return at, (
                f"not UTF-8 at byte {at} (0x{byte:02X} begins a character the data ends "
                "inside: a truncated file, or another encoding?)"
            )
        return at, (
            f"not UTF-8 at byte {at} (0x{byte:02X}: Latin-1 or another 8-bit encoding?); "
            "save it as UTF-8"
        )
    if not nul and (k := data.find(b"\x00")) >= 0:
        at = base + k
        return at, (
            f"a NUL byte at byte {at} (UTF-16 without a byte-order mark, or binary data?); "
            "save it as UTF-8 text"
        )
    return None


def wide_text(data: bytes) -> str | None:
    """The clause for UTF-16 or UTF-32 text, told by the byte-order mark ``data`` starts
    with, or None."""
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            return f"{encoding} text (a byte-order mark at byte 0); save it as UTF-8"
    return None


def decode_utf8(data: bytes, name: str | os.PathLike, *, nul: bool = True) -> str:
    """``data`` (a whole file) as text, a leading UTF-8 byte-order mark stripped.

    Raises:
        NotUtf8: not UTF-8 (or a NUL byte with ``nul=False``), naming ``name`` and the byte.
    """
    problem = utf8_problem(data, nul=nul)
    if problem is not None:
        raise NotUtf8(name, *problem)
    return data[len(UTF8_BOM) :].decode() if data.startswith(UTF8_BOM) else data.decode()


def read_utf8(path: str | os.PathLike, *, name: str | None = None, nul: bool = True) -> str:
    """The file at ``path`` as text (``decode_utf8``; ``name``: how messages name it).

    Raises:
        OSError: it cannot be read. NotUtf8: it is not UTF-8 text.
    """
    return decode_utf8(Path(path).read_bytes(), path if name is None else name, nul=nul)


def replace_invalid(data: bytes, base: int = 0) -> tuple[bytes, int] | None:
    """``data`` with each byte sequence that is not UTF-8 replaced by U+FFFD (as a browser's
    ``TextDecoder`` reads it) and the file offset of the first (``base``: offset of ``data``),
    or None when it is UTF-8 already. For formats read leniently (traces from other tools)."""
    try:
        codecs.decode(data, "utf-8")
    except UnicodeDecodeError as e:
        return data.decode("utf-8", "replace").encode(), base + e.start
    return None
