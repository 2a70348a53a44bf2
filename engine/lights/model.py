"""Local lights in ``KHR_lights_punctual``'s terms: ``LightSet``, the lights of a scene as numpy
structure-of-arrays, changed from Python and uploaded by dirty ranges.

Units and conventions (the extension's): a point light shines equally in every direction; a
spot light along ``direction`` (a glTF node's -Z), fully inside ``inner_cone`` and not at all
past ``outer_cone`` (radians from the axis, 0 <= inner < outer <= pi / 2). ``intensity`` is in
candela; ``color`` is linear RGB (a tint, usually at most 1). A surface at distance d receives
the illuminance ``intensity / d^2`` (lux) windowed to ``range`` (``shaders/lights_shade.wgsl``
cites the window): the frame's sun delivers ``pi x sun_color`` (about 9.4 for the day's sun),
so a 100 cd lamp at 3 m lights a surface a little more than the day's sun does.
A light without a range (the extension allows that: infinite) gets the distance at which its
illuminance drops to ``CUTOFF_LUX``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

POINT, SPOT = 0, 1
KINDS = {"point": POINT, "spot": SPOT}
#: Most lights a set holds: 48 MiB of GPU records (WebGPU's default storage binding is 128 MiB).
MAX_LIGHTS = 1 << 20
#: Illuminance (lux, the frame's units) at which a light given no range is cut off.
CUTOFF_LUX = 0.01
#: The GPU record of one light (shaders/lights_common.wgsl ``Light``), 48 bytes.
LIGHT_DTYPE = np.dtype(
    [
        ("position", "<f4", 3),
        ("range", "<f4"),
        ("intensity", "<f4", 3),  # candela x colour
        ("spot_scale", "<f4"),  # 1 / (cos inner - cos outer); 0: a point light
        ("direction", "<f4", 3),
        ("spot_offset", "<f4"),  # -cos outer x spot_scale; 1: a point light
    ]
)
assert LIGHT_DTYPE.itemsize == 48
#: The extension's floor under cos inner - cos outer (its sample code's max(0.001, ...)).
MIN_CONE_COS = 0.001
_FIELDS = ("position", "color", "intensity", "range", "kind", "direction", "inner", "outer")


class LightSet:
    """A scene's point and spot lights, ``count`` rows of structure-of-arrays.

    Change them only through ``add``, ``set``, ``remove`` and ``clear``: each marks the rows
    it changed, and ``take_dirty`` hands the GPU side the ranges to upload (a frame with no
    change uploads nothing, whatever the count).

    Attributes (``(count, ...)`` views, float32 unless said; do not write into them):
        position ``(N, 3)`` world; color ``(N, 3)`` linear RGB; intensity ``(N,)`` candela;
        range ``(N,)`` world units; kind ``(N,)`` uint8 (``POINT``, ``SPOT``); direction
        ``(N, 3)`` unit; inner, outer ``(N,)`` cone angles in radians.
    """

    def __init__(self):
        self.count = 0
        self._data = {
            "position": np.zeros((0, 3), np.float32),
            "color": np.zeros((0, 3), np.float32),
            "intensity": np.zeros(0, np.float32),
            "range": np.zeros(0, np.float32),
            "kind": np.zeros(0, np.uint8),
            "direction": np.zeros((0, 3), np.float32),
            "inner": np.zeros(0, np.float32),
            "outer": np.zeros(0, np.float32),
        }
        self._dirty: list[tuple[int, int]] = []
        self.version = 0  # bumped by every change (the GPU side's cheap "anything new?")

    def __len__(self) -> int:
        return self.count

    def __getattr__(self, name: str):
        data = self.__dict__.get("_data")
        if data is not None and name in data:
            return data[name][: self.count]
        raise AttributeError(name)

    # -- changes --------------------------------------------------------------------------------
    def add(self, position, *, kind: str | Sequence[str] = "point", color=(1.0, 1.0, 1.0),
            intensity=1.0, range=None, direction=(0.0, -1.0, 0.0), inner_cone=0.0,
            outer_cone=math.pi / 4) -> np.ndarray:  # fmt: skip
        """Append K lights; ``position`` ``(K, 3)`` or ``(3,)``, every other argument one
        value for all or one per light (``kind``: ``"point"`` or ``"spot"``; ``range`` None:
        ``default_range``). Returns their indices ``(K,)`` int64.

        Raises:
            ValueError: one line naming the first bad light, its field and value (NaN or
                negative range, zero, negative or infinite intensity, a cone outside
                0 <= inner < outer <= 90 degrees, a zero direction, more than
                ``MAX_LIGHTS``).
        """
        pos = np.atleast_2d(np.asarray(position, np.float64))
        k = len(pos)
        if pos.shape != (k, 3):
            raise ValueError(f"lights: position: expected shape (K, 3), got {pos.shape}")
        if self.count + k > MAX_LIGHTS:
            raise ValueError(
                f"lights: {self.count:,} + {k:,} is more than the {MAX_LIGHTS:,} a set holds"
            )
        rows = _columns(
            k, position=pos, kind=kind, color=color, intensity=intensity, range=range,
            direction=direction, inner=inner_cone, outer=outer_cone,
        )  # fmt: skip
        _check(rows, np.arange(self.count, self.count + k))
        self._grow(self.count + k)
        start = self.count
        for name, values in rows.items():
            self._data[name][start : start + k] = values
        self.count += k
        self._mark(start, start + k)
        return np.arange(start, start + k)

    def extend(self, other: LightSet, start: int = 0, stop: int | None = None) -> None:
        """Append ``other``'s lights ``start..stop`` (already checked: no validation).

        Raises:
            ValueError: more than ``MAX_LIGHTS`` in all.
        """
        stop = other.count if stop is None else min(stop, other.count)
        k = max(stop - start, 0)
        if self.count + k > MAX_LIGHTS:
            raise ValueError(
                f"lights: {self.count:,} + {k:,} is more than the {MAX_LIGHTS:,} a set holds"
            )
        self._grow(self.count + k)
        for name, data in self._data.items():
            data[self.count : self.count + k] = other._data[name][start:stop]
        self._mark(self.count, self.count + k)
        self.count += k

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` lights (nothing to upload: the rest are just not drawn)."""
        if count < self.count:
            self.count = max(int(count), 0)
            self.version += 1

    def set(self, indices, **fields) -> None:
        """Change the given fields (``add``'s names: position, kind, color, intensity, range,
        direction, inner_cone, outer_cone) of the lights ``indices`` (an int, a sequence or a
        slice); a value for all or one per light. A new intensity without a range keeps the
        old range.

        Raises:
            ValueError: an index out of range, an unknown field, or a bad value (as ``add``).
        """
        idx = np.atleast_1d(np.arange(self.count)[indices] if isinstance(indices, slice)
                            else np.asarray(indices))  # fmt: skip
        if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0
                         or idx.max() >= self.count):  # fmt: skip
            raise ValueError(f"lights: indices {indices!r} outside 0..{self.count - 1}")
        names = {"inner_cone": "inner", "outer_cone": "outer"}
        unknown = sorted(set(fields) - {"position", "kind", "color", "intensity", "range",
                                        "direction", "inner_cone", "outer_cone"})  # fmt: skip
        if unknown:
            raise ValueError(f"lights: unknown field(s) {', '.join(unknown)}")
        current = {n: self._data[n][idx] for n in _FIELDS}
        current["kind"] = np.where(current["kind"] == SPOT, "spot", "point")
        given = {names.get(n, n): v for n, v in fields.items()}
        rows = _columns(len(idx), **{**current, **given})
        _check(rows, idx)
        for name, values in rows.items():
            self._data[name][idx] = values
        if idx.size:
            for a, b in _ranges(np.unique(idx)):
                self._mark(a, b)

    def remove(self, indices) -> None:
        """Remove lights; the last ones move into the holes (indices of the rest change).

        Raises:
            ValueError: an index out of range.
        """
        idx = np.unique(np.atleast_1d(np.asarray(indices, np.int64)))
        if idx.size and (idx.min() < 0 or idx.max() >= self.count):
            raise ValueError(f"lights: indices {indices!r} outside 0..{self.count - 1}")
        new = self.count - len(idx)
        holes = idx[idx < new]
        keep = np.setdiff1d(np.arange(new, self.count), idx)
        for data in self._data.values():
            data[holes] = data[keep]
        self.count = new
        for a, b in _ranges(holes):
            self._mark(a, b)
        self.version += 1

    def clear(self) -> None:
        """Remove every light."""
        self.count = 0
        self._dirty.clear()
        self.version += 1

    def take_dirty(self) -> list[tuple[int, int]]:
        """Row ranges ``[start, stop)`` changed since the last call (sorted, merged), for
        ``records`` to pack and upload; cost O(ranges), never O(count)."""
        if not self._dirty:
            return []
        spans = sorted(self._dirty)
        self._dirty.clear()
        out = [list(spans[0])]
        for a, b in spans[1:]:
            if a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return [(a, min(b, self.count)) for a, b in out if a < self.count]

    def mark_all(self) -> None:
        """Mark every light changed (a new GPU buffer must be filled)."""
        self._dirty = [(0, self.count)] if self.count else []

    # -- the GPU record -------------------------------------------------------------------------
    def records(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows ``start..stop`` packed as ``LIGHT_DTYPE`` (the spot terms of
        ``KHR_lights_punctual``'s angular attenuation precomputed)."""
        stop = self.count if stop is None else stop
        s = slice(start, stop)
        d = self._data
        out = np.zeros(stop - start, LIGHT_DTYPE)
        out["position"] = d["position"][s]
        out["range"] = d["range"][s]
        out["intensity"] = d["color"][s] * d["intensity"][s, None]
        out["direction"] = d["direction"][s]
        cos_in = np.cos(d["inner"][s].astype(np.float64))
        cos_out = np.cos(d["outer"][s].astype(np.float64))
        scale = 1.0 / np.maximum(MIN_CONE_COS, cos_in - cos_out)
        spot = d["kind"][s] == SPOT
        out["spot_scale"] = np.where(spot, scale, 0.0)
        out["spot_offset"] = np.where(spot, -cos_out * scale, 1.0)
        return out

    # -- internals ------------------------------------------------------------------------------
    def _grow(self, n: int) -> None:
        cap = len(self._data["range"])
        if n <= cap:
            return
        cap = max(64, 1 << (n - 1).bit_length())
        for name, data in self._data.items():
            grown = np.zeros((cap, *data.shape[1:]), data.dtype)
            grown[: self.count] = data[: self.count]
            self._data[name] = grown

    def _mark(self, a: int, b: int) -> None:
        self._dirty.append((a, b))
        self.version += 1


def default_range(intensity, color=(1.0, 1.0, 1.0)) -> np.ndarray:
    """The distance at which ``intensity x max(color)`` candela falls to ``CUTOFF_LUX``."""
    peak = np.asarray(intensity, np.float64) * np.max(np.asarray(color, np.float64), axis=-1)
    return np.sqrt(np.maximum(peak, 0.0) / CUTOFF_LUX)


def _columns(k: int, *, position, kind, color, intensity, range, direction, inner, outer) -> dict:
    """Every field broadcast to K rows (float64 for the checks; ``kind`` as codes)."""

    def rows(value, shape, what):
        a = np.asarray(value, np.float64)
        try:
            return np.broadcast_to(a, (k, *shape)).copy()
        except ValueError:
            raise ValueError(
                f"lights: {what}: expected one value or {k} of shape {shape}, got {a.shape}"
            ) from None

    names = np.broadcast_to(np.asarray(kind, object), (k,))
    bad = [n for n in names if n not in KINDS]
    if bad:
        raise ValueError(f"lights: kind {bad[0]!r}: expected 'point' or 'spot'")
    color = rows(color, (3,), "color")
    intensity = rows(intensity, (), "intensity")
    if range is None:
        rng = default_range(intensity, color)
    else:
        rng = rows(range, (), "range")
    d = rows(direction, (3,), "direction")
    length = np.linalg.norm(d, axis=1)
    return {
        "position": rows(position, (3,), "position"),
        "color": color,
        "intensity": intensity,
        "range": rng,
        "kind": np.array([KINDS[n] for n in names], np.uint8),
        "direction": d / np.where(length > 0, length, 1.0)[:, None],
        "inner": rows(inner, (), "inner_cone"),
        "outer": rows(outer, (), "outer_cone"),
        "direction_length": length,
    }


def _check(rows: dict, where: np.ndarray) -> None:
    """Raise ValueError naming the first light with a bad value (row i is light
    ``where[i]``); drops the helper column ``direction_length``."""
    length = rows.pop("direction_length")
    spot = rows["kind"] == SPOT
    tests = (
        ("position", ~np.isfinite(rows["position"]).all(1), "must be finite"),
        ("color", ~(np.isfinite(rows["color"]).all(1) & (rows["color"] >= 0).all(1)),
         "must be finite and >= 0"),
        ("intensity", ~(np.isfinite(rows["intensity"]) & (rows["intensity"] > 0)),
         "candela must be finite and > 0 (remove() a light to turn it off)"),
        ("range", ~(np.isfinite(rows["range"]) & (rows["range"] > 0)),
         "must be finite and > 0 (world units)"),
        ("direction", spot & ~(np.isfinite(length) & (length > 0)),
         "must be a finite non-zero vector"),
        ("inner_cone", spot & ~((rows["inner"] >= 0) & (rows["inner"] < rows["outer"])),
         "must be in 0 <= inner < outer (radians)"),
        ("outer_cone", spot & ~((rows["outer"] > 0) & (rows["outer"] <= math.pi / 2)),
         "must be in 0 < outer <= pi / 2 (90 degrees)"),
    )  # fmt: skip
    for name, bad, rule in tests:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            column = {"inner_cone": "inner", "outer_cone": "outer"}.get(name, name)
            value = rows[column][i]
            shown = value.tolist() if isinstance(value, np.ndarray) else float(value)
            raise ValueError(f"lights: light {int(where[i])} {name} {shown}: {rule}")


def _ranges(sorted_rows: np.ndarray) -> list[tuple[int, int]]:
    """``[start, stop)`` runs of consecutive values in sorted ``sorted_rows``."""
    if sorted_rows.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(sorted_rows) > 1)
    starts = np.concatenate(([sorted_rows[0]], sorted_rows[breaks + 1]))
    stops = np.concatenate((sorted_rows[breaks], [sorted_rows[-1]])) + 1
    return [(int(a), int(b)) for a, b in zip(starts, stops, strict=True)]
