"""Where Lantern's WGSL shaders and assets (fonts, meshes, the portal page) are: the one place
that resolves their paths.

In a source checkout they are the repository's top-level ``shaders/`` and ``assets/`` folders.
A built wheel (``pip install .``) carries the same files as package data under
``engine/_data/shaders`` and ``engine/_data/assets`` (pyproject.toml maps the two folders
there), found with ``importlib.resources`` relative to the ``engine`` package that is imported,
so a checkout never reads an installed copy's files nor the other way round.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from pathlib import Path

KINDS = ("shaders", "assets")
_CHECKOUT = Path(__file__).resolve().parents[1]  # the repository root when run from source


@functools.cache
def resource_dir(kind: str) -> Path:
    """The folder of ``kind`` (``"shaders"`` or ``"assets"``) for the imported ``engine``.

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
        FileNotFoundError: neither the installed package data nor a checkout's folder exists
            (a broken install); the message says what to do.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown resource kind {kind!r}; expected one of {KINDS}")
    installed = Path(str(files("engine") / "_data" / kind))
    if installed.is_dir():
        return installed
    checkout = _CHECKOUT / kind
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"Lantern's {kind}/ folder is missing (looked in {installed} and {checkout}): "
        "reinstall Lantern (pip install .) or run from a checkout"
    )


def shader_path(name: str) -> Path:
    """Path of the WGSL file ``name`` (e.g. ``"mesh.wgsl"``); it may not exist."""
    return resource_dir("shaders") / name


def asset_path(relative: str) -> Path:
    """Path of ``relative`` under the assets (e.g. ``"portal/index.html"``); it may not exist."""
    return resource_dir("assets") / relative
