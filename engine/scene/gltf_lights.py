"""glTF ``KHR_lights_punctual``: the file's point and spot lights into the scene's
``engine.lights.model.LightSet``.

A light (``extensions.KHR_lights_punctual.lights[i]``: ``type``, ``color`` default white,
``intensity`` default 1 candela, ``range`` optional, ``spot.innerConeAngle`` default 0 and
``spot.outerConeAngle`` default pi / 4) is placed by every node that names it
(``nodes[n].extensions.KHR_lights_punctual.light``): at the node's world origin, a spot
pointing along its world -Z; node scale changes neither range nor intensity (the
extension's rule). A light of intensity 0 is dark and skipped (one warning for all of
them); directional lights are named in one warning and ignored (the frame's sun is its one
directional light). Anything else that breaks the extension's schema (a wrong JSON type, a
negative or zero range, a cone outside 0 <= inner < outer <= pi / 2, an index that names no
light) is a ``SceneError`` naming the node and the light.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.lights.model import LightSet

log = logging.getLogger("lantern")
LIGHTS_PUNCTUAL = "KHR_lights_punctual"


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


class LightReader:
    """Collects the lights of the nodes visited (``visit``) into ``lights``.

    Args:
        path: the file (for messages). obj: the file's JSON. fail: ``fail(what)`` returns the
            loader's ``SceneError`` naming the file.
    """

    def __init__(self, path: Path, obj: dict, fail: Callable[[str], Exception]):
        self.path, self.fail = path, fail
        ext = obj.get("extensions", {})
        ext = ext.get(LIGHTS_PUNCTUAL, {}) if isinstance(ext, dict) else {}
        self.defs = ext.get("lights", []) if isinstance(ext, dict) else []
        if not isinstance(self.defs, list):
            raise fail(f"{LIGHTS_PUNCTUAL}.lights is {type(self.defs).__name__}, not an array")
        nodes = obj.get("nodes", [])
        self.nodes = nodes if isinstance(nodes, list) else []
        self.lights = LightSet()
        self.dark: set[int] = set()
        self.directional: set[int] = set()

    def visit(self, index: int, world: np.ndarray) -> None:
        """Add node ``index``'s light (if it names one) placed by its ``world`` matrix."""
        node = self.nodes[index] if index < len(self.nodes) else None
        ext = node.get("extensions") if isinstance(node, dict) else None
        ref = ext.get(LIGHTS_PUNCTUAL) if isinstance(ext, dict) else None
        if ref is None:
            return
        where = f"node {index} {LIGHTS_PUNCTUAL}"
        light = ref.get("light") if isinstance(ref, dict) else None
        n = len(self.defs)
        if not isinstance(light, int) or isinstance(light, bool) or not 0 <= light < n:
            raise self.fail(f"{where}: light {light!r} does not exist ({n} light(s))")
        self._add(light, world, where)

    def _add(self, i: int, world: np.ndarray, where: str) -> None:
        d = self.defs[i]
        what = f"{where}: light {i}"
        if not isinstance(d, dict):
            raise self.fail(f"{what} is not an object")
        kind = d.get("type")
        if kind == "directional":
            self.directional.add(i)
            return
        if kind not in ("point", "spot"):
            raise self.fail(f"{what}: type {kind!r}; expected point, spot or directional")
        color = d.get("color", [1.0, 1.0, 1.0])
        if not (isinstance(color, list) and len(color) == 3 and all(map(_number, color))
                and min(color) >= 0):  # fmt: skip
            raise self.fail(f"{what}: color {color!r}; expected 3 numbers >= 0")
        intensity = d.get("intensity", 1.0)
        if not _number(intensity) or intensity < 0:
            raise self.fail(f"{what}: intensity {intensity!r}; expected a number >= 0 (candela)")
        rng = d.get("range")
        if rng is not None and (not _number(rng) or rng <= 0):
            raise self.fail(f"{what}: range {rng!r}; expected a number > 0")
        spot = d.get("spot", {}) if kind == "spot" else {}
        if not isinstance(spot, dict):
            raise self.fail(f"{what}: spot is not an object")
        inner = spot.get("innerConeAngle", 0.0)
        outer = spot.get("outerConeAngle", math.pi / 4)
        if not (_number(inner) and _number(outer) and 0 <= inner < outer <= math.pi / 2):
            raise self.fail(f"{what}: cone angles inner {inner!r}, outer {outer!r}; expected "
                            "0 <= inner < outer <= pi / 2 (radians)")  # fmt: skip
        if intensity == 0 or max(color) == 0:
            self.dark.add(i)
            return
        axis = world[:3, :3] @ np.array([0.0, 0.0, -1.0])
        norm = float(np.linalg.norm(axis))
        if kind == "spot" and not norm > 0:
            raise self.fail(f"{what}: the node's transform has no direction (scale 0)")
        self.lights.add(world[:3, 3], kind=kind, color=color, intensity=intensity, range=rng,
                        direction=axis / norm if norm > 0 else (0.0, -1.0, 0.0),
                        inner_cone=inner, outer_cone=outer)  # fmt: skip

    def warn(self) -> None:
        """One warning each for the dark and the directional lights skipped."""
        if self.dark:
            log.warning("%s: %s light(s) %s have intensity 0 (dark): skipped", self.path,
                        LIGHTS_PUNCTUAL, sorted(self.dark))  # fmt: skip
        if self.directional:
            log.warning(
                "%s: %s directional light(s) %s ignored: the frame's sun is its one "
                "directional light",
                self.path, LIGHTS_PUNCTUAL, sorted(self.directional),
            )  # fmt: skip
