"""Writing an output file without destroying what was there: PNG captures.

A capture path comes from a command line (the in-game console, the portal page, ``--capture``)
and may name anything. ``png_target(path)`` refuses, in one line, what must not be replaced:
a symbolic link (writing through it would overwrite its target, wherever that is), something
that is not a regular file, and an existing file that is not a PNG (a script, a reference
text). ``save_png(path, image)`` writes to a temporary file in the same folder and renames it
over the target, so a failed or interrupted write leaves the old file whole and never a
half-written one.

    target = png_target("shots/a.png")     # Path('/abs/cwd/shots/a.png'); raises UnsafeWrite
    save_png(target, pil_image)            # OSError if the folder refuses writes
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class UnsafeWrite(ValueError):
    """The path names something a capture must not replace; the message is one line naming
    the path and what to do."""


def png_target(path: str | os.PathLike) -> Path:
    """The absolute path a PNG for ``path`` goes to (relative paths resolve against the
    current working directory, which the caller should say).

    Raises:
        UnsafeWrite: ``path`` does not end in ``.png``, is a symbolic link, is not a regular
            file, is an existing file that is not a PNG, or its folder does not exist.
    """
    p = Path(os.path.abspath(os.fspath(path)))  # abspath: no symlink resolution
    if p.suffix.lower() != ".png":
        raise UnsafeWrite(f"{os.fspath(path)!r} must end in .png")
    if p.is_symlink():
        raise UnsafeWrite(
            f"{p} is a symbolic link (to {os.readlink(p)!r}); a capture does not write "
            "through links: name the file itself"
        )
    if not p.parent.is_dir():
        raise UnsafeWrite(f"folder {str(p.parent)!r} does not exist; create it first")
    if p.exists():
        if not p.is_file():
            raise UnsafeWrite(f"{p} is not a regular file; choose a file path")
        if not _is_png(p):
            raise UnsafeWrite(f"{p} exists and is not a PNG; a capture replaces only PNGs")
    return p


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it: set and restore at once
    os.umask(mask)
    return mask


def _is_png(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return f.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE
    except OSError:
        return False  # unreadable: not known to be a PNG, so not replaced


def save_png(path: str | os.PathLike, image) -> Path:
    """Write ``image`` (a ``PIL.Image.Image``) as PNG to ``png_target(path)``: into a
    temporary file in the same folder, then renamed over the target (atomic on POSIX).

    Returns the absolute path written.

    Raises:
        UnsafeWrite: see ``png_target`` (checked again right before the rename).
        OSError: the folder refuses the write (no permission, disk full); the message
            names the target, and nothing is left behind.
    """
    target = png_target(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:  # name the file asked for, not the temporary one
        raise OSError(e.errno, e.strerror, str(target)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            image.save(f, format="PNG")
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600: as open() would have made it
        png_target(target)  # swapped for a link or a text file while we wrote?
        os.replace(tmp, target)  # replaces a link itself, never its target
    except BaseException:
        os.unlink(tmp)
        raise
    return target
