"""``View``: a debug view of the standard frame drawn to the output in place of Post.

Each view reads a target the frame already made (no geometry is drawn again) and writes a
picture of it with one fullscreen triangle (``view.wgsl``; the records: ``views.py``):

========== ===================================================================================
depth      view distance ``z = near / d`` of the reverse-Z depth on a log scale: grey
           ``log(z / near) / log(far / near)`` (sRGB-encoded value), ``far`` the scene's
           diagonal; the sky (d = 0) dark blue
hiz        Hi-Z pyramid level N (default 1) at output size, shown like depth
shadow     the sun's shadow map (reverse-Z orthographic depth, white nearest the sun),
           letterboxed; with cascades, their layers side by side (C0 left)
cascades   the shadow cascade of each pixel in its colour (``CASCADE_COLOURS``, mixed in the
           blend bands, lit by normals from depth), grey outside every cascade;
           ``cascades:texels``: shadow-map texels per pixel (square root of the area ratio)
           as Turbo on log2 over -4..+4
luminance  log2 luminance of the HDR target as false colour (Turbo) over ``EV_RANGE``; the
           bottom strip is the ramp with a white tick at middle grey for the current exposure
normals    world-space normals reconstructed from depth (``n * 0.5 + 0.5``)
nan        NaN (magenta), +Inf (red), -Inf (blue), negative (cyan) pixels of the HDR target
ids        each instance (scene row) in its own hash colour (``id_colour``)
lod        the LOD each instance was drawn with (``LOD_COLOURS``: 0 green, 1 yellow, ...)
overdraw   fragments per pixel before the depth test (every rasterised one; ``overdraw:after``
           those passing it at their turn) as Turbo over 1 .. ``OVERDRAW_MAX`` (log2); the
           bottom strip: the ramp, a tick per power of two
culled     (culling frozen: F2 or --cull-camera) the instances the frozen camera culls,
           ghosted over the normal picture in their reason's colour (``ViewCulledPass``)
wireframe  the drawn triangles' edges over the normal picture (``ViewWirePass``: vertex
           pulling, barycentrics from the vertex stage)
lights     the local lights per cluster (froxel) at each pixel's depth, Turbo on log2 over
           1 .. the cluster cap, white where a cluster is at the cap (the light clusters
           ``Lights.Cluster`` built this frame; not on the forward light path)
cost       measured GPU ns per pixel: each fragment that passes the depth test adds its draw's
           ns per fragment (``--gpu-profile draws``: draw time / fragment invocations); Turbo
           on log2 ns over ``cost_range``, ticks at powers of two
========== ===================================================================================

``ids`` and ``lod`` draw the frame's instances again (``ViewGeometryPass``, ``View.Geometry``:
the cull's indirect args and remap list, regions early and late, into an ``rg32uint`` target
of row + 1 and LOD + 1 with its own depth); the others read only existing targets.

The pass is in the graph from the start, disabled; the views tool (``engine.tools.views.tool``)
enables it and disables Post while a view is on, so a view costs one fullscreen pass in
place of the tone map and nothing when off.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import wgpu

from engine.graph import ComputePass, RenderPass, TextureDesc
from engine.passes.resources import (
    CLUSTERS,
    DEPTH,
    DEPTH_FORMAT,
    DRAW_INPUTS,
    EXPOSURE,
    HDR,
    OUTPUT,
    VIEW_DEPTH,
    VIEW_IDS,
    VIEW_MATERIAL,
    VIEW_OVERDRAW,
    clear_output,
)
from engine.passes.screen import fullscreen_pipeline
from engine.scene.meshes import VERTEX_LAYOUT
from engine.shader_registry import shader_pipeline
from engine.tools.views.views import BY_NAME, NAMES, VIEWS

#: overdraw: fragment counts at the ramp's ends (log2 scale: 1 .. OVERDRAW_MAX); every count
#: above it has the top colour, so the legend says ">= OVERDRAW_MAX" there.
OVERDRAW_MAX = 32
#: The counts' ceiling in ``view.overdraw`` (``rg16float``, +1 per fragment by additive
#: blending): float16 holds every integer up to 2048 and 2048 + 1 rounds back to 2048, so a
#: pixel with more fragments reads 2048. ``inspect`` and ``--dump`` say ">= 2048" there.
OVERDRAW_CEILING = 2048.0

HERE = Path(__file__).parent  # this package's WGSL
#: The cascades view's two pictures (its level): the cascade index, the texel density.
CASCADES_MODES = ("index", "texels")
#: cascades:texels: log2 of shadow-map texels per pixel at the ramp's two ends.
TEXELS_LOG2 = (-4.0, 4.0)
#: log2 luminance at the two ends of the luminance view's ramp (scene-referred, linear HDR).
EV_RANGE = (-8.0, 8.0)
PARAMS_DTYPE = np.dtype(
    [
        ("pad_view", "<u4"),  # (the view is the pipeline's entry point, fs_<name>)
        ("level", "<u4"),
        ("auto_exposure", "<u4"),
        ("pad0", "<u4"),
        ("near", "<f4"),
        ("far", "<f4"),  # world units shown white by depth and hiz
        ("ev_lo", "<f4"),
        ("ev_hi", "<f4"),
        # hiz, shadow: texel = floor(pixel * num / den), estimated as pixel * ratio (no
        # integer division in the fragment shader); hiz: dims, the level's size
        ("num", "<u4", 2),
        ("den", "<u4", 2),
        ("ratio", "<f4", 2),
        ("dims", "<u4", 2),
    ]
)

_T = wgpu.ShaderStage.FRAGMENT


def parse_view(text: str) -> tuple[str, int | None]:
    """``"depth"`` -> ``("depth", None)``; ``"hiz:3"`` -> ``("hiz", 3)``.

    Raises:
        ValueError: an unknown name (the message lists the valid ones) or a bad level.
    """
    name, colon, level = text.strip().partition(":")
    if name not in BY_NAME:
        raise ValueError(f"unknown view {name!r}; views: {', '.join(NAMES)}")
    if not colon:
        return name, None
    if name == "overdraw" and level in ("before", "after"):
        return name, 0 if level == "before" else 1
    if name == "cascades" and level in CASCADES_MODES:
        return name, CASCADES_MODES.index(level)
    modes = {"overdraw": "before|after", "cascades": "|".join(CASCADES_MODES)}
    if name in modes:
        raise ValueError(f"view {name}:{level}: expected {name}:{modes[name]}, got {text!r}")
    if name != "hiz":
        raise ValueError(
            f"view {name} takes no level (only hiz:N, overdraw:before|after and "
            f"cascades:index|texels do), got {text!r}"
        )
    try:
        n = int(level)
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"expected hiz:N with a level N >= 0, got {text!r}")
    return name, n


def view_type(text: str) -> tuple[str, int | None]:
    """argparse ``type=`` of ``--view``: ``parse_view`` with argparse's error type."""
    import argparse

    try:
        return parse_view(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class ViewPass(RenderPass):
    """``View``: the selected debug view (``name``, ``level``) to the output.

    Args:
        res: the frame's ``FrameResources``.

    Attributes:
        name_shown: the view drawn (a name in ``VIEWS``); ``level``: the Hi-Z level of ``hiz``.
        far: world distance depth and hiz show white (the scene's diagonal by default).
    """

    writes = (OUTPUT,)

    def __init__(self, res, name: str = "View"):
        super().__init__(name, enabled=False)
        self.res = res
        d = res.device
        self.name_shown, self.level = "depth", 1  # level: hiz's mip, overdraw's channel
        self.cost_range = (0.01, 10.24)  # cost: ns per pixel at the ramp's ends
        lo, hi = res.gs.scene.extent
        self.far = max(float(np.linalg.norm(np.asarray(hi) - np.asarray(lo))), 1e-3)
        tex = {"sample_type": "unfilterable-float"}
        self.layout = d.create_bind_group_layout(
            label="view",
            entries=[
                {"binding": 0, "visibility": _T, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": _T, "buffer": {"type": "uniform"}},
                {"binding": 2, "visibility": _T, "texture": {"sample_type": "depth"}},
                {"binding": 3, "visibility": _T, "texture": tex},
                {"binding": 4, "visibility": _T, "texture": tex},
                {
                    "binding": 5,
                    "visibility": _T,
                    "texture": {"sample_type": "depth", "view_dimension": "2d-array"},
                },
                {"binding": 6, "visibility": _T, "buffer": {"type": "read-only-storage"}},
                {"binding": 7, "visibility": _T, "texture": {"sample_type": "uint"}},
                {"binding": 8, "visibility": _T, "texture": tex},
                {"binding": 9, "visibility": _T, "texture": tex},
                {"binding": 10, "visibility": _T, "buffer": {"type": "uniform"}},
                {"binding": 11, "visibility": _T, "buffer": {"type": "read-only-storage"}},
            ],
        )
        fmt = res.graph.output_format
        self.shader = shader_pipeline(d, HERE / "view.wgsl", lambda m: self._make(m, fmt))
        self.params = d.create_buffer(
            label="view params",
            size=PARAMS_DTYPE.itemsize,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
        )
        self._written: bytes | None = None
        self._group: tuple | None = None  # (key, bind group)
        # HDR-less frames (--no-post) still bind something of the right type
        self._blank = d.create_texture(
            size=(1, 1, 1), format="rgba16float", usage=wgpu.TextureUsage.TEXTURE_BINDING
        )
        self._blank_ids = d.create_texture(
            size=(1, 1, 1), format="rg32uint", usage=wgpu.TextureUsage.TEXTURE_BINDING
        )

    def _make(self, m, fmt: str) -> dict[str, wgpu.GPURenderPipeline]:
        """One pipeline per view, from its own entry point ``fs_<name>`` (each compiles only
        its own view's code: an uber-shader's switch costs every view the registers and
        branches of the heaviest); the shown one now, the others on first use."""
        d = self.res.device
        layout = d.create_pipeline_layout(bind_group_layouts=[self.layout])

        def make(name: str) -> wgpu.GPURenderPipeline:
            return fullscreen_pipeline(d, m, BY_NAME[name].entry, fmt, label=f"view {name}",
                                       layout=layout)  # fmt: skip

        class Pipelines(dict):
            def __missing__(self, name: str) -> wgpu.GPURenderPipeline:
                self[name] = p = make(name)
                return p

        pipes = Pipelines()
        pipes[self.name_shown] = make(self.name_shown)
        return pipes

    @property
    def reads(self) -> tuple[str, ...]:
        r = BY_NAME[self.name_shown].reads
        if CLUSTERS in r and not self.res.lights.count:  # no lights: nothing builds them,
            r = tuple(x for x in r if x != CLUSTERS)  # and the view shows none everywhere
        if self.name_shown == "luminance" and self.res.settings.auto_exposure:
            r += (EXPOSURE,)
        return r

    def levels(self) -> int:
        """The Hi-Z pyramid's mip count (valid ``level`` values are 0 .. levels - 1)."""
        return self.res.pyramid.levels

    def _params_bytes(self, size: tuple[int, int]) -> bytes:
        p = np.zeros((), PARAMS_DTYPE)
        if self.name_shown == "cost":
            p["ev_lo"], p["ev_hi"] = np.log2(self.cost_range)
            return p.tobytes()
        if self.name_shown in ("overdraw", "cascades"):
            p["level"] = self.level  # overdraw 0: before, 1: after the depth test
        else:
            p["level"] = min(self.level, self.levels() - 1)
        p["auto_exposure"] = 1 if self.res.settings.auto_exposure else 0
        cam = self.res.camera
        p["near"] = cam.near if cam is not None else 0.1
        p["far"] = self.far
        p["ev_lo"], p["ev_hi"] = EV_RANGE
        if self.name_shown == "hiz":
            base = self.res.pyramid.base
            p["num"], p["den"] = base, size
            p["dims"] = [max(1, b >> int(p["level"])) for b in base]
        elif self.name_shown == "shadow":  # the layers side by side, each a square
            sm = self.res.shadow
            side = max(1, min(size[1], size[0] // sm.layers))
            p["num"], p["den"] = (sm.size, sm.size), (side, side)
        p["ratio"] = p["num"] / np.maximum(p["den"], 1)
        return p.tobytes()

    def _bind_group(self) -> wgpu.GPUBindGroup:
        r, g = self.res, self.res.graph
        post = r.settings.post
        has_ids = VIEW_IDS in g.texture_names()  # (made with view.overdraw, view.material)
        key = (g.resource_key(), id(r.shadow.view), id(r.pyramid.view), post, has_ids)
        if self._group is None or self._group[0] != key:
            hdr = g.view(HDR) if post else self._blank.create_view()
            entries = [
                {"binding": 0, "resource": {"buffer": r.view_uniform}},
                {"binding": 1, "resource": {"buffer": self.params}},
                {"binding": 2, "resource": g.view(DEPTH)},
                {"binding": 3, "resource": hdr},
                {"binding": 4, "resource": r.pyramid.view},
                {"binding": 5, "resource": r.shadow.view},
                {"binding": 6, "resource": {"buffer": g.buffer(EXPOSURE)}},
                {
                    "binding": 7,
                    "resource": g.view(VIEW_IDS) if has_ids else self._blank_ids.create_view(),
                },
                {
                    "binding": 8,
                    "resource": g.view(VIEW_OVERDRAW) if has_ids else self._blank.create_view(),
                },
                {
                    "binding": 9,
                    "resource": g.view(VIEW_MATERIAL) if has_ids else self._blank.create_view(),
                },
                {"binding": 10, "resource": {"buffer": r.lights.params}},
                {"binding": 11, "resource": {"buffer": r.lights.counts}},
            ]
            grp = r.device.create_bind_group(label="view", layout=self.layout, entries=entries)
            self._group = (key, grp)
        return self._group[1]

    def targets(self, ctx) -> dict:
        return clear_output(ctx)

    def record(self, ctx, rpass) -> None:
        data = self._params_bytes(tuple(ctx.size))
        if data != self._written:  # written when the view or a knob changes
            self.res.device.queue.write_buffer(self.params, 0, data)
            self._written = data
        rpass.set_pipeline(self.shader.get()[self.name_shown])
        rpass.set_bind_group(0, self._bind_group())
        rpass.draw(3)


def _drawing(modes: tuple[str, ...]) -> list[str]:
    """The views whose ``View.Geometry`` mode (``material:N`` is ``material``) is in ``modes``."""
    return [v.name for v in VIEWS if (v.geometry or "").partition(":")[0] in modes]


class ViewGeometryPass(RenderPass):
    """``View.Geometry``: the frame's drawn instances again into ``view.ids`` (``rg32uint``:
    scene row + 1, LOD + 1; 0 where nothing) with its own depth ``view.depth``; both
    targets are created on first use. Enabled by the views tool for a view with
    ``geometry``."""

    reads = DRAW_INPUTS
    #: What turns it on to write each target: the views that draw the geometry again.
    turned_on_by = {
        target: "a debug view that draws the geometry again: "
        + " or ".join(f"--view {n}" for n in _drawing(modes))
        + f" ('view {_drawing(modes)[0]}' in the console)"
        for target, modes in (
            (VIEW_IDS, ("ids",)),
            (VIEW_OVERDRAW, ("overdraw", "cost")),
            (VIEW_MATERIAL, ("material",)),
            (VIEW_DEPTH, ("ids", "overdraw", "cost", "material")),
        )
    }

    @property
    def writes(self) -> tuple[str, ...]:
        """The target its mode draws, ``view.ids`` (ids, lod) or ``view.overdraw`` (overdraw,
        cost), and its depth ``view.depth``; the other target keeps what it had, so it is not
        declared written."""
        target = {"ids": VIEW_IDS, "material": VIEW_MATERIAL}.get(self.mode, VIEW_OVERDRAW)
        return (target, VIEW_DEPTH)

    def __init__(self, res, name: str = "View.Geometry"):
        super().__init__(name, enabled=False)
        self.res = res

        d = res.device
        ro = {"type": "read-only-storage"}
        v = wgpu.ShaderStage.VERTEX
        self.layout = d.create_bind_group_layout(
            label="view geometry",
            entries=[
                {"binding": 0, "visibility": v, "buffer": ro},
                {"binding": 1, "visibility": v, "buffer": ro},
                {"binding": 2, "visibility": v, "buffer": {"type": "uniform"}},
                {"binding": 3, "visibility": v, "buffer": ro},
            ],
        )
        gs = res.gs
        #: cost: GPU ns per fragment of each batch (rows: tool.cost_weights)
        self.weights = d.create_buffer(
            label="view cost weights",
            size=max(16, 4 * gs.batch_count * 4),
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST,
        )
        self.mode = "ids"  # "ids" (ids, lod), "overdraw", "cost" or "material"
        self.quantity = 0  # material: which input (views.MATERIAL_VIEWS order)
        self.uniform = d.create_buffer_with_data(
            label="view geometry",
            data=np.array([gs.region_slots, gs.batch_count, 0, 0], np.uint32).tobytes(),
            usage=wgpu.BufferUsage.UNIFORM,
        )
        self.group = d.create_bind_group(
            label="view geometry",
            layout=self.layout,
            entries=[
                {"binding": 0, "resource": {"buffer": gs.mesh_table}},
                {"binding": 1, "resource": {"buffer": gs.mesh_ids}},
                {"binding": 2, "resource": {"buffer": self.uniform}},
                {"binding": 3, "resource": {"buffer": self.weights}},
            ],
        )
        self.shader = shader_pipeline(d, HERE / "view_geometry.wgsl", self._make)

    def _make(self, m) -> dict:
        d, mesh = self.res.device, self.res.mesh
        layout = d.create_pipeline_layout(
            bind_group_layouts=[mesh.layout_view, mesh.layout_draw, self.layout]
        )

        def pipe(vs, fs, fmt, compare, write, blend=None):
            target = {"format": fmt}
            if blend:
                add = {"operation": "add", "src_factor": "one", "dst_factor": "one"}
                target["blend"] = {"color": add, "alpha": add}
            return d.create_render_pipeline(
                label=f"view geometry {fs}",
                layout=layout,
                vertex={"module": m, "entry_point": vs, "buffers": [VERTEX_LAYOUT]},
                primitive={"topology": "triangle-list", "cull_mode": "back"},
                depth_stencil={
                    "format": DEPTH_FORMAT,
                    "depth_write_enabled": write,
                    "depth_compare": compare,
                },
                fragment={"module": m, "entry_point": fs, "targets": [target]},
            )

        return {
            "ids": pipe("vs_ids", "fs_ids", "rg32uint", "greater", True),
            "before": pipe("vs_count", "fs_before", "rg16float", "always", False, blend=True),
            "after": pipe("vs_count", "fs_after", "rg16float", "greater", True, blend=True),
            "cost": pipe("vs_cost", "fs_cost", "rg16float", "greater", True, blend=True),
            "cost_shade": pipe(
                "vs_cost_shade", "fs_cost_shade", "rg16float", "equal", False, blend=True
            ),  # fmt: skip
        }

    def set_weights(self, ns_per_fragment: np.ndarray) -> None:
        """``(4, batches)`` GPU ns per fragment (``tool.cost_weights``' rows)."""
        w = np.ascontiguousarray(ns_per_fragment, np.float32).reshape(-1)
        self.res.device.queue.write_buffer(self.weights, 0, w.tobytes())

    def ensure_targets(self) -> None:
        """Create ``view.ids`` and ``view.depth`` (output size) unless the graph has them."""
        g = self.res.graph
        if VIEW_IDS in g.texture_names():
            return
        t = wgpu.TextureUsage
        g.create_texture(
            VIEW_IDS, TextureDesc("rg32uint", t.RENDER_ATTACHMENT | t.TEXTURE_BINDING | t.COPY_SRC)
        )
        g.create_texture(VIEW_DEPTH, TextureDesc(DEPTH_FORMAT, t.RENDER_ATTACHMENT))
        g.create_texture(
            VIEW_OVERDRAW,
            TextureDesc(
                "rg16float",
                t.RENDER_ATTACHMENT | t.TEXTURE_BINDING | t.COPY_SRC,
                ceiling=OVERDRAW_CEILING,
            ),
        )
        g.create_texture(
            VIEW_MATERIAL,
            TextureDesc("rgba16float", t.RENDER_ATTACHMENT | t.TEXTURE_BINDING | t.COPY_SRC),
        )

    def targets(self, ctx) -> dict:
        g = self.res.graph
        color = {"ids": VIEW_IDS, "material": VIEW_MATERIAL}.get(self.mode, VIEW_OVERDRAW)
        return {
            "color_attachments": [
                {
                    "view": g.view(color),
                    "load_op": "clear",
                    "clear_value": (0, 0, 0, 0),
                    "store_op": "store",
                }  # fmt: skip
            ],
            "depth_stencil_attachment": {
                "view": g.view(VIEW_DEPTH),
                "depth_clear_value": 0.0,
                "depth_load_op": "clear",
                "depth_store_op": "store",  # every graph target is readable (--dump, inspect)
            },
        }

    def record(self, ctx, rpass) -> None:
        r, pipes = self.res, self.shader.get()
        r.bind_geometry(rpass)
        if self.mode == "material":  # the mesh shader's own material inputs, MASK cut
            r.materials.set_view(self.quantity)
            rpass.set_bind_group(2, r.material_group)
            rpass.set_bind_group(3, r.shadow.group)
            for cls, span in sorted(r.gs.class_ranges.items()):
                if cls < 4:  # BLEND instances are in no depth: not shown
                    rpass.set_pipeline(r.mesh.material_view("rgba16float", cls))
                    for region in (0, 1):
                        r.gs.draw(rpass, region, 1, r.draw_group, span)
            return
        rpass.set_bind_group(2, self.group)
        if self.mode == "cost":  # per Main pass: its fragments in draw order, then the
            for region in (0, 1):  # shading after its prepass (0 without one) at depth equal
                for key in ("cost", "cost_shade"):
                    rpass.set_pipeline(pipes[key])
                    r.gs.draw(rpass, region, 1, r.draw_group)
            return
        keys = {"ids": ("ids",), "overdraw": ("before", "after")}
        for key in keys[self.mode]:
            rpass.set_pipeline(pipes[key])
            for region in (0, 1):
                r.gs.draw(rpass, region, 1, r.draw_group)


#: Alpha "over" blending onto the picture, its alpha kept.
OVER_BLEND = {
    "color": {"operation": "add", "src_factor": "src-alpha", "dst_factor": "one-minus-src-alpha"},
    "alpha": {"operation": "add", "src_factor": "zero", "dst_factor": "one"},
}


class OverPicturePass(RenderPass):
    """A view drawn over the output's picture (after Post), depth-tested against
    ``frame.depth`` without writing it, blended "over" (``OVER_BLEND``)."""

    def __init__(self, res, name: str):
        super().__init__(name, enabled=False)
        self.res = res

    def _pipeline(
        self, m, fmt: str, layouts, vertex: dict, fs: str, **depth
    ) -> wgpu.GPURenderPipeline:
        """The pipeline over ``fmt`` with bind group ``layouts``, vertex stage ``vertex``,
        fragment entry ``fs``; ``depth``: extra depth-stencil fields (a bias)."""
        d = self.res.device
        return d.create_render_pipeline(
            label=self.name,
            layout=d.create_pipeline_layout(bind_group_layouts=layouts),
            vertex={"module": m, **vertex},
            primitive={"topology": "triangle-list", "cull_mode": "back"},
            depth_stencil={
                "format": DEPTH_FORMAT,
                "depth_write_enabled": False,
                "depth_compare": "greater-equal",
                **depth,
            },
            fragment={
                "module": m,
                "entry_point": fs,
                "targets": [{"format": fmt, "blend": OVER_BLEND}],
            },
        )

    def targets(self, ctx) -> dict:
        return {
            "color_attachments": [{"view": ctx.output, "load_op": "load", "store_op": "store"}],
            "depth_stencil_attachment": {
                "view": self.res.graph.view(DEPTH),
                "depth_load_op": "load",
                "depth_store_op": "store",
            },
        }


class ViewCulledPass(OverPicturePass):
    """``View.Culled``: the instances the frozen culling camera removed (``set_culled``),
    ghosted over the output in their reason's colour (alpha ``0.35``), depth-tested against
    ``frame.depth`` (no writes), one direct indexed draw per mesh (its LOD 0)."""

    reads = (OUTPUT, DEPTH)
    writes = (OUTPUT,)

    def __init__(self, res, name: str = "View.Culled"):
        super().__init__(res, name)
        d = res.device
        self.layout = d.create_bind_group_layout(
            label="view culled",
            entries=[
                {
                    "binding": 0,
                    "visibility": wgpu.ShaderStage.VERTEX,
                    "buffer": {"type": "read-only-storage"},
                }  # fmt: skip
            ],
        )
        fmt = res.graph.output_format
        self.shader = shader_pipeline(d, HERE / "view_culled.wgsl", lambda m: self._make(m, fmt))
        self.buffer = None
        self.group = None
        self.draws: list[tuple[int, int, int, int, int]] = []  # draw_indexed arguments
        self.counts = (0, 0, 0)  # frustum, small, occluded

    def _make(self, m, fmt) -> wgpu.GPURenderPipeline:
        vertex = {"entry_point": "vs_culled", "buffers": [VERTEX_LAYOUT]}
        layouts = [self.res.mesh.layout_view, self.layout]
        return self._pipeline(m, fmt, layouts, vertex, "fs_culled")

    def set_culled(self, rows: np.ndarray, reasons: np.ndarray) -> None:
        """The culled scene ``rows`` ``(K,)`` and their ``reasons`` ``(K,)`` (reference
        classes 0 frustum, 1 small, 2 occluded): uploaded grouped by mesh."""
        gs = self.res.gs
        rows = np.asarray(rows, np.int64)
        reasons = np.asarray(reasons, np.uint32)
        self.counts = tuple(int((reasons == k).sum()) for k in range(3))
        mesh = gs.scene.mesh_ids[rows]
        order = np.argsort(mesh, kind="stable")
        rows, reasons, mesh = rows[order], reasons[order], mesh[order]
        self.draws = []
        for m in np.unique(mesh):
            idx = np.flatnonzero(mesh == m)
            b = gs.batches[gs.first_batch[int(m)]]  # LOD 0
            self.draws.append((b.index_count, len(idx), b.first_index, b.base_vertex, int(idx[0])))
        data = np.stack([rows, reasons], 1).astype(np.uint32) if len(rows) else np.zeros((1, 2))
        d = self.res.device
        self.buffer = d.create_buffer_with_data(
            label="view culled", data=data.astype(np.uint32).tobytes(),
            usage=wgpu.BufferUsage.STORAGE,
        )  # fmt: skip
        self.group = d.create_bind_group(
            layout=self.layout, entries=[{"binding": 0, "resource": {"buffer": self.buffer}}]
        )

    def record(self, ctx, rpass) -> None:
        if not self.draws:
            return
        r = self.res
        rpass.set_pipeline(self.shader.get())
        r.bind_geometry(rpass)
        rpass.set_bind_group(1, self.group)
        for n, count, first, base, first_instance in self.draws:
            rpass.draw_indexed(n, count, first, base, first_instance)


class ViewWirePass(OverPicturePass):
    """``View.Wire``: the frame's drawn instances (regions early and late) again by vertex
    pulling, non-indexed, with barycentrics from the vertex stage; dark lines of constant
    screen width blended over the output, depth-tested against ``frame.depth`` with a bias
    towards the eye. Its args come from ``WireArgsPass`` (``View.WireArgs``) right before."""

    reads = (*DRAW_INPUTS, DEPTH, OUTPUT)
    writes = (OUTPUT,)

    def __init__(self, res, args_buffer, name: str = "View.Wire"):
        super().__init__(res, name)
        self.args = args_buffer
        d, gs = res.device, res.gs
        verts, idx, table = [], [], []
        for mesh in gs.scene.meshes:
            for lod in mesh.lods:
                verts.append(np.asarray(lod.vertices, np.float32).reshape(-1))
                idx.append(np.asarray(lod.indices, np.uint32))
        for b in gs.batches:
            table.append((b.first_index, b.index_count, b.base_vertex, 0))
        usage = wgpu.BufferUsage.STORAGE
        self.positions = d.create_buffer_with_data(
            label="wire vertices", data=np.concatenate(verts).tobytes(), usage=usage
        )
        self.indices = d.create_buffer_with_data(
            label="wire indices", data=np.concatenate(idx).tobytes(), usage=usage
        )
        self.table = d.create_buffer_with_data(
            label="wire batches", data=np.array(table, np.uint32).tobytes(), usage=usage
        )
        self.uniform = d.create_buffer_with_data(
            label="wire", data=np.array([len(table), 0, 0, 0], np.uint32).tobytes(),
            usage=wgpu.BufferUsage.UNIFORM,
        )  # fmt: skip
        ro = {"type": "read-only-storage"}
        v = wgpu.ShaderStage.VERTEX
        self.layout = d.create_bind_group_layout(
            label="view wire",
            entries=[
                {"binding": 0, "visibility": v, "buffer": ro},
                {"binding": 1, "visibility": v, "buffer": ro},
                {"binding": 2, "visibility": v, "buffer": ro},
                {"binding": 3, "visibility": v, "buffer": {"type": "uniform"}},
            ],
        )
        self.group = d.create_bind_group(
            layout=self.layout,
            entries=[
                {"binding": 0, "resource": {"buffer": self.positions}},
                {"binding": 1, "resource": {"buffer": self.indices}},
                {"binding": 2, "resource": {"buffer": self.table}},
                {"binding": 3, "resource": {"buffer": self.uniform}},
            ],
        )
        fmt = res.graph.output_format
        self.shader = shader_pipeline(d, HERE / "view_wireframe.wgsl", lambda m: self._make(m, fmt))

    def _make(self, m, fmt) -> wgpu.GPURenderPipeline:
        mesh = self.res.mesh
        layouts = [mesh.layout_view, mesh.layout_draw, self.layout]
        bias = {"depth_bias": 8, "depth_bias_slope_scale": 1.0}  # towards the eye
        return self._pipeline(m, fmt, layouts, {"entry_point": "vs_wire"}, "fs_wire", **bias)

    def record(self, ctx, rpass) -> None:
        r, gs = self.res, self.res.gs
        rpass.set_pipeline(self.shader.get())
        rpass.set_bind_group(0, r.view_group)
        rpass.set_bind_group(2, self.group)
        nb = gs.batch_count
        if gs.first_instance:
            rpass.set_bind_group(1, r.draw_group, [0])
        for k in range(2 * nb):  # regions early and late
            if not gs.first_instance:
                rpass.set_bind_group(1, r.draw_group, [k * 256])
            rpass.draw_indirect(self.args, k * 16)


class WireArgsPass(ComputePass):
    """``View.WireArgs``: the cull's indexed indirect args of regions early and late as the
    non-indexed args ``View.Wire`` draws with (``shaders/view_wire_args.wgsl``)."""

    reads = DRAW_INPUTS
    writes = ("view.wire_args",)

    def __init__(self, res, name: str = "View.WireArgs"):
        super().__init__(name, enabled=False)
        self.res = res
        d, gs = res.device, res.gs
        n = 2 * gs.batch_count
        self.count = n
        self.args = d.create_buffer(
            label="wire args", size=n * 16,
            usage=wgpu.BufferUsage.INDIRECT | wgpu.BufferUsage.STORAGE,
        )  # fmt: skip
        self.shader = shader_pipeline(
            d,
            HERE / "view_wire_args.wgsl",
            lambda m: d.create_compute_pipeline(
                label="wire args", layout="auto", compute={"module": m, "entry_point": "convert"}
            ),
        )
        self.shader.on_reload(lambda: setattr(self, "_group", None))
        self._group = None

    def record(self, ctx, cpass) -> None:
        gs = self.res.gs
        if self._group is None:
            self._group = self.res.device.create_bind_group(
                layout=self.shader.get().get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": {"buffer": gs.args, "size": self.count * 20}},
                    {"binding": 1, "resource": {"buffer": self.args}},
                ],
            )
        cpass.set_pipeline(self.shader.get())
        cpass.set_bind_group(0, self._group)
        cpass.dispatch_workgroups(-(-self.count // 64), 1, 1)


__all__ = [
    "CASCADES_MODES",
    "EV_RANGE",
    "OVERDRAW_CEILING",
    "OVERDRAW_MAX",
    "ViewPass",
    "parse_view",
    "view_type",
]
