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

``output_problem(path, suffix)`` checks any output path of a command line (``--trace``,
``--dump``, compare's ``--png`` ...) before the run: the same refusals, with an existing
file replaced only when it is already the kind written (``OUTPUT_KINDS``).
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


#: suffix -> (what the file is, test of its first 4 KiB): an existing file is replaced only
#: when it passes (a script or a note given as an output path is never overwritten)
OUTPUT_KINDS = {
    ".png": ("a PNG", lambda head: head.startswith(PNG_SIGNATURE)),
    ".npy": ("a NumPy .npy file", lambda head: head.startswith(b"\x93NUMPY")),
    ".exr": ("an OpenEXR file", lambda head: head.startswith(b"\x76\x2f\x31\x01")),
    ".csv": ("a text table", lambda head: b"\0" not in head),
    ".json": ("a Chrome trace", lambda head: b'"traceEvents"' in head or b'"ph"' in head),
    ".jsonl": ("a Lantern telemetry file", lambda head: _first_line_is_session(head)),
    ".dot": ("a Graphviz file", lambda head: head.lstrip().startswith((b"digraph", b"strict"))),
    ".html": ("an HTML page", lambda head: head.lstrip()[:9].lower() in (b"<!doctype", b"<html>")),
    ".rdc": ("a RenderDoc capture", lambda head: head.startswith(b"RDOC")),
}


def _first_line_is_session(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0].replace(b" ", b"")
    return b'"type":"session"' in first


def output_problem(path: str, suffix: str) -> str | None:
    """Why ``path`` must not be written as an output ending in ``suffix`` (one line naming
    it and what to do), or None: an empty name, another suffix, a missing folder, a symbolic
    link (even dangling), something not a regular file, an existing file that is neither
    empty nor of the kind written (``OUTPUT_KINDS``), or a path the file system refuses (a
    real open for append, then removed if new: permission bits say nothing for root)."""
    if not path.strip():
        return f"empty path; give a file name ending in {suffix}"
    if not path.lower().endswith(suffix):
        return f"{path!r} must end in {suffix}"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"folder {folder!r} does not exist; create it first"
    if os.path.islink(path):  # a dangling one too: the probe below would create its target
        return (
            f"{path!r} is a symbolic link; Lantern does not write through links: give the "
            "file's own path"
        )
    existed = os.path.exists(path)
    if existed and not os.path.isfile(path):  # a directory, pipe or device: never open it
        return f"{path!r} is not a regular file; choose a file path"
    if existed and not _replaceable(path, suffix):
        return (
            f"{path!r} exists and is not {OUTPUT_KINDS[suffix][0]}; Lantern replaces only its "
            "own kind of file: choose another name or remove it first"
        )
    try:
        with open(path, "ab"):
            pass
        if not existed:
            os.remove(path)
    except OSError as e:
        return f"cannot write {path!r} ({e.strerror}); choose a writable path"
    return None


def _replaceable(path: str, suffix: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return True  # unreadable: the write probe reports it
    kind = OUTPUT_KINDS.get(suffix)
    return not head or kind is None or kind[1](head)
