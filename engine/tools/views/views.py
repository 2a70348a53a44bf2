"""The debug views, one record each: a new view is a ``DebugView`` here plus its fragment entry
point in ``view.wgsl`` (``fs_<name>``, reading the bindings every view gets).

Every table the views tool and its passes read comes from ``VIEWS`` (F3 order): the names
``--view`` and ``view NAME`` take, what each reads, the knobs it needs (and so the flags and
commands that starve it, from ``engine.settings.FRAME_KNOBS``), whether the instances are
drawn again first (``View.Geometry``), and its legend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.lights.gpu import CLUSTER_CAP, CLUSTER_X, CLUSTER_Y, CLUSTER_Z
from engine.passes.resources import (
    CLUSTERS,
    DEPTH,
    HDR,
    PYRAMID,
    SHADOW_MAP,
    VIEW_IDS,
    VIEW_MATERIAL,
    VIEW_OVERDRAW,
)
from engine.settings import FRAME_KNOBS


@dataclass(frozen=True)
class DebugView:
    """One debug view.

    Attributes:
        name: as ``view NAME`` and ``--view NAME`` take it.
        legend: how to read it, one line for the HUD (``{far}``: the distance shown white).
        reads: graph resources it reads beyond the ``View`` uniform.
        needs: ``FrameSettings`` switches that must be on for it to have something to show.
        needs_what: what those switches make, for the one-line refusal.
        geometry: what ``View.Geometry`` draws for it first (``"ids"``, ``"overdraw"``,
            ``"cost"``, ``"material:N"``: the material input N of ``MATERIAL_VIEWS``), or
            None: it reads only what the frame made.
        over: drawn over the normal picture by a pass of its own (no ``fs_<name>`` entry).
        refuse: ``refuse(settings or parsed args)``: ``(one-line reason, flag)`` when a
            non-switch knob's value starves it (the lights view on the forward light path),
            else None.
    """

    name: str
    legend: str
    reads: tuple[str, ...] = (DEPTH,)
    needs: tuple[str, ...] = ()
    needs_what: str = ""
    geometry: str | None = None
    over: bool = False
    refuse: Callable[[Any], tuple[str, str] | None] | None = None

    @property
    def entry(self) -> str:
        """Its fragment entry point in ``view.wgsl``."""
        return f"fs_{self.name}"

    def requirement(self, settings) -> str | None:
        """Why it cannot be shown with ``settings`` (one line naming the flags and commands
        that turn back on what it needs), or None."""
        off = [k for k in FRAME_KNOBS if k.attr in self.needs and not getattr(settings, k.attr)]
        if not off:
            refused = self.refuse(settings) if self.refuse is not None else None
            return None if refused is None else refused[0]
        flags = " / ".join(k.flag for k in off)
        commands = " / ".join(f"{k.command or k.name} on" for k in off)
        return f"view {self.name} needs {self.needs_what}: drop {flags} (or '{commands}')"

    def refused_by(self, args) -> str | None:
        """The first flag on the parsed command line that starves it (``--no-shadows``), or
        None."""
        off = [k for k in FRAME_KNOBS if k.attr in self.needs and not getattr(args, k.attr, True)]
        if off:
            return off[0].flag
        refused = self.refuse(args) if self.refuse is not None else None
        return None if refused is None else refused[1]


def _needs_clusters(settings) -> tuple[str, str] | None:
    """The lights view reads the light clusters, which the forward light path never builds."""
    if getattr(settings, "light_path", "clustered") != "forward":
        return None
    return (
        "view lights needs the light clusters, which the forward light path does not build: "
        "'light-path clustered' (or deferred)",
        "--light-path forward",
    )


HIZ_NEEDS = ("cull", "occlusion")
VIEWS = (
    DebugView(
        "depth",
        "view distance, log scale: black at the near plane, white at {far:.4g} units; sky "
        "dark blue",
    ),
    DebugView(
        "hiz",
        "",  # said by the tool: the level and its size
        (DEPTH, PYRAMID),
        HIZ_NEEDS,
        "occlusion culling (the frame builds no Hi-Z pyramid)",
    ),
    DebugView(
        "shadow",
        "sun shadow map, white nearest the sun (reverse-Z orthographic); with cascades, "
        "C0 .. C3 left to right",
        (DEPTH, SHADOW_MAP),
        ("shadows",),
        "the sun's shadow map",
    ),
    DebugView("cascades", "", (DEPTH, SHADOW_MAP), ("shadows",), "the sun's shadow map"),
    # legend: the tool (the splits; cascades:texels for the texel density)
    DebugView(
        "luminance",
        "log2 luminance -8..+8 as Turbo; bottom strip: the ramp, white tick = middle grey at "
        "the current exposure",
        (DEPTH, HDR),
        ("post",),
        "the HDR target",
    ),
    DebugView("normals", "world normals from depth, (n + 1) / 2 as RGB: up is light green"),
    DebugView(
        "nan",
        "HDR NaN magenta, +Inf red, -Inf blue, negative cyan; the rest dim grey",
        (DEPTH, HDR),
        ("post",),
        "the HDR target",
    ),
    DebugView(
        "ids",
        "each instance (scene row) in its own hash colour; drawn again (View.Geometry)",
        (DEPTH, VIEW_IDS),
        geometry="ids",
    ),
    DebugView(
        "lod",
        "LOD drawn: 0 green, 1 yellow, 2 orange, 3 red, 4 magenta, 5+ blue",
        (DEPTH, VIEW_IDS),
        geometry="ids",
    ),
    DebugView("overdraw", "", (DEPTH, VIEW_OVERDRAW), geometry="overdraw"),  # legend: the tool
    DebugView("cost", "", (DEPTH, VIEW_OVERDRAW), geometry="cost"),  # legend: the tool
    *(
        DebugView(
            name,
            legend,
            (DEPTH, VIEW_MATERIAL),
            geometry=f"material:{i}",
            **(
                {"needs": ("textures",), "needs_what": "the material textures"}
                if name == "mip"
                else {}
            ),
        )  # fmt: skip
        for i, (name, legend) in enumerate(
            (
                ("basecolor", "material base colour (factor x texture x instance tint), linear"),
                ("roughness", "perceptual roughness, black 0 .. white 1 (factor x texture)"),
                ("metallic", "metallic, black 0 .. white 1 (factor x texture)"),
                ("shading", "shading normals after the normal map, world, (n + 1) / 2 as RGB"),
                ("material", "each material id in its own hash colour"),
                (
                    "mip",
                    "base colour mip level sampled, Turbo: 0 dark blue .. 8 red; grey: no texture",
                ),
            )
        )
    ),  # drawn again by View.Geometry with the mesh shader (MASK cut-outs honoured)
    DebugView("culled", "", over=True),  # legend: the tool (the culler's counts)
    DebugView(
        "lights",
        f"lights per cluster at each pixel's depth ({CLUSTER_X}x{CLUSTER_Y} tiles x "
        f"{CLUSTER_Z} slices), Turbo on log2 1..{CLUSTER_CAP} (bottom strip; ticks at powers "
        "of two); white: a cluster at the cap (lights dropped); dark blue: none",
        (DEPTH, CLUSTERS),
        refuse=_needs_clusters,
    ),
    DebugView(
        "wireframe",
        "the drawn triangles' edges over the picture (vertex pulling, barycentrics from the "
        "vertex stage); drawn again (View.Wire)",
        over=True,
    ),
)
BY_NAME = {v.name: v for v in VIEWS}
NAMES = tuple(BY_NAME)
