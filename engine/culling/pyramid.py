"""Depth-pyramid sizes shared by the Hi-Z pass (``engine.passes.hiz``) and the numpy
specification of the cull (``engine.culling.reference``)."""

from __future__ import annotations


def pyramid_base(size: int) -> int:
    """Largest power of two strictly below ``size`` pixels (1 when ``size`` <= 2).

    Raises:
        ValueError: ``size`` below 1.
    """
    if size < 1:
        raise ValueError(f"pyramid size must be >= 1 pixel, got {size}")
    p = 1
    while p * 2 < size:
        p *= 2
    return p


def pyramid_levels(width: int, height: int) -> int:
    """Mip count of a ``width`` x ``height`` level 0: down to 1x1."""
    return max(width, height).bit_length()
