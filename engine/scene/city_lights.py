"""The procedural city's local lights (``--lights N``): a spot light under every lamp head,
then lit windows, point lights just outside the buildings' facades.

Street lights come first (in the city's block order, so the first ones are downtown), then
windows, each from its own row of random numbers: the first N lights of a city are the same
whatever N, so a sweep over the light count adds lights and never moves them.
"""

from __future__ import annotations

import math

import numpy as np

from engine.lights.model import LightSet
from engine.scene import city_materials as cm

#: Street lights: warm (sodium-like) spots pointing down from the lamp head, candela.
STREET = {"intensity": 320.0, "range": 24.0, "inner": math.radians(35), "outer": math.radians(65)}
STREET_COLOR = (1.0, 0.72, 0.42)
#: Windows: candela and range of the point light just outside a lit window.
WINDOW_INTENSITY = (6.0, 30.0)
WINDOW_RANGE = (4.0, 8.0)
WINDOW_COLORS = np.array([[1.0, 0.80, 0.55], [1.0, 0.90, 0.75], [0.75, 0.85, 1.0]])
FLOOR = 3.2  # m between window rows
WINDOW_OUT = 0.6  # m in front of the facade


def add_city_lights(scene, count: int, *, seed: int = 0) -> LightSet:
    """Add ``count`` lights to ``scene.lights`` (an ``engine.scene.procedural.city`` scene):
    the street lights, then windows. Returns the set.

    Raises:
        ValueError: ``count`` < 0, or windows wanted in a scene without buildings.
    """
    scene.lights.extend(city_lights(scene, count, seed=seed))
    return scene.lights


def city_lights(scene, count: int, *, seed: int = 0) -> LightSet:
    """A new ``LightSet`` of the city's first ``count`` lights (``add_city_lights``).

    Raises:
        ValueError: ``count`` < 0, or windows wanted in a scene without buildings.
    """
    if count < 0:
        raise ValueError(f"lights: expected a count >= 0, got {count}")
    lights = LightSet()
    heads = scene.transforms[scene.material_ids == cm.LAMP][:, :3, 3]
    n_street = min(count, len(heads))
    if n_street:
        pos = heads[:n_street] - np.array([0.0, 0.35, 0.0], np.float32)
        lights.add(pos, kind="spot", color=STREET_COLOR, intensity=STREET["intensity"],
                   range=STREET["range"], direction=(0.0, -1.0, 0.0),
                   inner_cone=STREET["inner"], outer_cone=STREET["outer"])  # fmt: skip
    n_windows = count - n_street
    if n_windows:
        _add_windows(scene, lights, n_windows, seed)
    return lights


def _add_windows(scene, lights: LightSet, n: int, seed: int) -> None:
    boxes = scene.transforms[np.isin(scene.material_ids, (cm.FACADE, cm.BRICK))]
    if not len(boxes):
        raise ValueError("lights: this scene has no buildings to put lit windows on")
    centre = boxes[:, :3, 3].astype(np.float64)
    size = np.abs(np.diagonal(boxes[:, :3, :3], axis1=1, axis2=2)).astype(np.float64)
    # faces: +x, -x, +z, -z; weighted by their area (width x height)
    width = np.stack([size[:, 2], size[:, 2], size[:, 0], size[:, 0]], 1)
    area = (width * size[:, 1:2]).reshape(-1)
    cum = np.cumsum(area) / area.sum()
    u = np.random.default_rng(seed + 1).random((n, 6))  # one row per window: prefix-stable
    face = np.minimum(np.searchsorted(cum, u[:, 0], side="right"), len(cum) - 1)
    b, f = face // 4, face % 4
    c, s = centre[b], size[b]
    floors = np.maximum(np.floor((s[:, 1] - 2.0) / FLOOR), 1.0)
    bottom = c[:, 1] - s[:, 1] / 2
    y = bottom + 1.6 + FLOOR * np.floor(u[:, 1] * floors)
    along = (u[:, 2] - 0.5) * 0.85 * width[b, f]
    normal = np.array([[1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, 0, -1]], np.float64)[f]
    half = np.where(f < 2, s[:, 0], s[:, 2]) / 2
    pos = c + normal * (half + WINDOW_OUT)[:, None]
    pos[:, 1] = y
    pos[:, 0] += np.where(f < 2, 0.0, along)
    pos[:, 2] += np.where(f < 2, along, 0.0)
    lo, hi = WINDOW_INTENSITY
    intensity = lo + (hi - lo) * u[:, 3]
    rlo, rhi = WINDOW_RANGE
    colors = WINDOW_COLORS[(u[:, 4] * len(WINDOW_COLORS)).astype(int)]
    lights.add(pos, kind="point", color=colors, intensity=intensity,
               range=rlo + (rhi - rlo) * u[:, 5])  # fmt: skip
