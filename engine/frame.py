"""The standard frame: one engine-owned node that expands into the passes of a GPU-driven
frame with two-phase occlusion culling, a sun shadow map, HDR lighting and tone mapping.

Passes, in order (names are what every table, trace and capture shows)::

    Cull.Reset   transfer  copy last frame's counters to the readback ring; reset indirect
                           args (template copy) and clear the eight counters
    Shadow.Cull  compute   casters vs the sun's volume, extended toward the sun
    Shadow       render    depth-only sun shadow map (indirect draws)
    Cull.Early   compute   last frame's visible set, frustum only
    Main.Early   render    draw it: reverse-Z depth32float (clear 0, compare greater), HDR
    HiZ          compute   depth pyramid from that depth
    Cull.Late    compute   everything: frustum, sub-pixel, Hi-Z; newly visible queued
    Main.Late    render    draw the newly visible (colour and depth loaded)
    Post         render    sky, exposure, ACES-fitted tone map to the output

Knobs (``FrameSettings``): ``shadows``/``shadow_size``, ``cull``, ``occlusion``, ``post``.
Disabled passes stay in the graph with ``enabled = False``. Without occlusion there is one
phase: Cull.Early, Main.Early and HiZ are off and Main.Late draws everything that passes the
frustum and sub-pixel tests. Without culling every instance is visible (Cull.Late only picks
LODs). Without post, Main renders straight to the output (no HDR target, flat sky colour).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, replace

import numpy as np
import wgpu

from engine.cli import int_type
from engine.culling.counters import NUM_COUNTERS
from engine.culling.cull import (
    CULL_UNIFORM_SIZE,
    FLAG_CULL,
    FLAG_OCCLUSION,
    FLAG_RESET,
    FLAG_TWO_PHASE,
    LOD_BASE_PX,
    MAX_INSTANCES,
    CullPipelines,
    cull_uniform,
    workgroups,
)
from engine.culling.gpu_scene import GpuScene
from engine.culling.stats import CullStats
from engine.gpu import GpuError
from engine.graph import ComputePass, RenderGraph, RenderPass, TextureDesc, TransferPass
from engine.passes.frustum_lines import FrustumLines
from engine.passes.hiz import DepthPyramid
from engine.passes.mesh import DEPTH_FORMAT, SHADOW_FORMAT, VIEW_UNIFORM_SIZE, MeshPipelines
from engine.passes.post import HDR_FORMAT, PostPipeline
from engine.passes.shadow import SHADOW_DISTANCE, fit_sun, frustum_planes, shadow_region

log = logging.getLogger("lantern")

PASS_NAMES = (
    "Cull.Reset",
    "Shadow.Cull",
    "Shadow",
    "Cull.Early",
    "Main.Early",
    "HiZ",
    "Cull.Late",
    "Main.Late",
    "Post",
)
SKY_ZENITH = (0.16, 0.32, 0.68)
SKY_HORIZON = (0.62, 0.72, 0.84)
GROUND = (0.30, 0.27, 0.23)
SUN_COLOR = (3.0, 2.8, 2.5)


@dataclass(frozen=True)
class FrameSettings:
    """The standard frame's knobs.

    Attributes:
        shadows: render the sun shadow map. ``shadow_size``: its size in texels, a power of
            two in 256..8192.
        cull: GPU culling on (off: every instance is drawn, LODs still chosen).
        occlusion: two-phase Hi-Z occlusion culling on (needs ``cull``).
        post: HDR target + tone-mapping Post pass (off: Main renders to the output).
        fog_density: exponential fog per world unit (0 = none).
        exposure: multiplier before tone mapping.
        shadow_radius: shadow distance: receivers the camera sees up to this view depth
            (world units) are shadowed (None: ``SHADOW_DISTANCE``, 90).
        lod_base_px: projected diameter in pixels below which LOD 1 is used (halving per LOD).

    Raises:
        ValueError: a bad ``shadow_size`` or a negative number.
    """

    shadows: bool = True
    shadow_size: int = 2048
    cull: bool = True
    occlusion: bool = True
    post: bool = True
    fog_density: float = 0.004
    exposure: float = 0.9
    shadow_radius: float | None = None
    lod_base_px: float = LOD_BASE_PX

    def __post_init__(self):
        s = self.shadow_size
        if not isinstance(s, int) or s < 256 or s > 8192 or s & (s - 1):
            raise ValueError(f"shadow_size must be a power of two in 256..8192, got {s!r}")
        if self.fog_density < 0 or self.exposure <= 0 or self.lod_base_px <= 0:
            raise ValueError("fog_density must be >= 0, exposure and lod_base_px > 0")


# -- command line ---------------------------------------------------------------------------
_shadow_range = int_type(256, 8192, "a power of two")


def shadow_size_type(text: str) -> int:
    """argparse type: a power of two in 256..8192 (texels)."""
    v = _shadow_range(text)
    if v & (v - 1):
        raise argparse.ArgumentTypeError(f"expected a power of two from 256 to 8,192, got {text!r}")
    return v


instances_type = int_type(1, MAX_INSTANCES, "an instance count")


def scene_type(path: str):
    """argparse type: a glTF scene the standard frame can hold (at most MAX_INSTANCES)."""
    from engine.scene.gltf import scene_file_type

    scene = scene_file_type(path)
    if scene.count > MAX_INSTANCES:
        raise argparse.ArgumentTypeError(
            f"{path}: {scene.count:,} instances (node x primitive); at most {MAX_INSTANCES:,}"
        )
    return scene


def add_frame_arguments(parser: argparse.ArgumentParser, *, default_instances: int) -> None:
    """Add the standard frame's switches (any sample can reuse them).

    ``--instances`` is None unless given, so a sample can tell "the procedural default"
    from "repeat the --scene file this many times"."""
    from engine.scene.camera import CAMERA_FORMAT, parse_camera

    g = parser.add_argument_group("standard frame")
    g.add_argument("--no-cull", action="store_true", help="draw every instance (no GPU culling)")
    g.add_argument("--no-occlusion", action="store_true", help="frustum + sub-pixel culling only")
    g.add_argument("--no-shadows", action="store_true", help="no sun shadow map")
    g.add_argument("--no-post", action="store_true", help="no HDR/tone mapping: Main to output")
    g.add_argument(
        "--shadow-size",
        type=shadow_size_type,
        default=2048,
        metavar="N",
        help="shadow map size in texels, a power of two 256..8192 (default 2048)",
    )
    g.add_argument(
        "--instances",
        type=instances_type,
        default=None,
        metavar="N",
        help=f"instances, 1..{MAX_INSTANCES:,}: the procedural city's size (default "
        f"{default_instances:,}), or with --scene the file repeated on a grid up to N",
    )
    g.add_argument(
        "--camera",
        type=parse_camera,
        default=None,
        metavar=CAMERA_FORMAT,
        help="fixed camera instead of the fly-through (world units, degrees)",
    )
    g.add_argument(
        "--scene",
        type=scene_type,
        metavar="FILE",
        default=None,
        help="render a glTF 2.0 scene (.gltf/.glb) instead of the procedural city",
    )


def settings_from_args(args: argparse.Namespace) -> FrameSettings:
    return FrameSettings(
        shadows=not args.no_shadows,
        shadow_size=args.shadow_size,
        cull=not args.no_cull,
        occlusion=not (args.no_occlusion or args.no_cull),
        post=not args.no_post,
    )


# -- the frame ------------------------------------------------------------------------------
class StandardFrame:
    """Builds the standard passes into ``graph`` for ``scene`` and feeds them every frame.

    Call ``update(ctx, camera)`` once per frame before the graph executes (e.g. from
    ``Sample.update``); it never waits for the GPU and its cost does not depend on the
    instance count (only changed scene rows are uploaded).

    Args:
        gpu: ``engine.gpu.Gpu`` (uses ``indirect-first-instance`` when present).
        graph: the render graph; passes are appended in ``PASS_NAMES`` order.
        scene: an ``engine.scene.scene.Scene``.
        settings: the knobs.
        stats: where the counters are read back (a ``CullStats`` is made when None).

    Raises:
        ValueError: an empty scene or more than ``MAX_INSTANCES`` instances.
        GpuError: the adapter's backend cannot run the frame's shaders (OpenGL).
    """

    def __init__(
        self,
        gpu,
        graph: RenderGraph,
        scene,
        settings: FrameSettings | None = None,
        *,
        stats: CullStats | None = None,
    ):
        if gpu.adapter.info.get("backend_type") == "OpenGL":
            raise GpuError(
                "the standard frame reads depth textures in shaders (textureLoad), which "
                "wgpu's OpenGL backend cannot translate: use Vulkan (unset WGPU_BACKEND_TYPE)"
            )
        if scene.count > MAX_INSTANCES:
            raise ValueError(f"scene has {scene.count:,} instances; at most {MAX_INSTANCES:,}")
        self.gpu, self.graph, self.scene = gpu, graph, scene
        self.device = d = gpu.device
        self.settings = settings or FrameSettings()
        self.gs = GpuScene(d, scene, first_instance="indirect-first-instance" in gpu.features)
        self.workgroups = workgroups(scene.count)
        self.stats = stats if stats is not None else CullStats(d)
        self.counters = d.create_buffer(
            label="cull counters",
            size=NUM_COUNTERS * 4,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST,
        )
        u = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        self.view_uniform = d.create_buffer(label="view", size=VIEW_UNIFORM_SIZE, usage=u)
        self.cull_uniform = d.create_buffer(label="cull", size=CULL_UNIFORM_SIZE, usage=u)
        self.mesh = MeshPipelines(d)
        self.cull = CullPipelines(d)
        self.post = PostPipeline(d, graph.output_format)
        self.pyramid = DepthPyramid(d, graph.size)
        tex = wgpu.TextureUsage
        graph.create_texture(
            "frame.depth",
            TextureDesc(DEPTH_FORMAT, tex.RENDER_ATTACHMENT | tex.TEXTURE_BINDING | tex.COPY_SRC),
        )
        graph.create_texture(
            "frame.hdr", TextureDesc(HDR_FORMAT, tex.RENDER_ATTACHMENT | tex.TEXTURE_BINDING)
        )
        self.view_group = self.mesh.view_group(self.view_uniform, self.gs)
        self.draw_group = self.mesh.draw_group(self.gs)
        self.shadow_map = None
        self.camera = None
        self.show_frustum = True  # draw the frozen culling frustum (while frozen)
        self._lines: dict[str, FrustumLines] = {}  # per colour format, made on first freeze
        self.cull_camera = None  # frozen culling camera (F2) or None
        self._reset = True  # ignore visibility from before (first frame, resize, knob change)
        self._last_recorded: int | None = None
        self._make_shadow_map()
        self._bind_sized()
        self._add_passes()
        self.configure(self.settings)
        graph.on_resize(self._on_resize)

    # -- knobs and resources ---------------------------------------------------------------
    def configure(self, settings: FrameSettings) -> None:
        """Apply new knobs: enables/disables passes and recreates what they change."""
        size_changed = settings.shadow_size != self.settings.shadow_size
        self.settings = settings
        if size_changed:
            self._make_shadow_map()
        two_phase = settings.cull and settings.occlusion
        on = {
            "Shadow.Cull": settings.shadows,
            "Shadow": settings.shadows,
            "Cull.Early": two_phase,
            "Main.Early": two_phase,
            "HiZ": two_phase,
            "Post": settings.post,
        }
        for p in self.passes:
            p.enabled = on.get(p.name, True)
        self._reset = True

    def set_settings(self, **changes) -> FrameSettings:
        """``configure(replace(settings, **changes))``; returns the new settings."""
        self.configure(replace(self.settings, **changes))
        return self.settings

    def _make_shadow_map(self) -> None:
        if self.shadow_map is not None:
            self.shadow_map.destroy()
        s = self.settings.shadow_size
        self.shadow_map = self.device.create_texture(
            label="shadow map",
            size=(s, s, 1),
            format=SHADOW_FORMAT,
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.TEXTURE_BINDING,
        )
        self.shadow_view = self.shadow_map.create_view()
        self.shadow_group = self.mesh.shadow_group(self.shadow_view)

    def _bind_sized(self) -> None:
        g = self.graph
        self.post_group = self.post.bind(
            self.view_uniform, g.view("frame.hdr"), g.view("frame.depth")
        )
        self.cull_group = self.cull.bind(
            self.cull_uniform, self.gs, self.counters, self.pyramid.view
        )

    def _on_resize(self, size) -> None:
        self.pyramid.resize(size)
        self._bind_sized()
        self._reset = True  # a pyramid or visibility from another size is never used

    # -- per frame --------------------------------------------------------------------------
    def freeze_culling(self, frozen: bool | None = None) -> bool:
        """Freeze (or release; None toggles) the culling camera at the current camera.

        While frozen, culling keeps the frozen camera's frustum, sub-pixel and LOD decisions
        while rendering from the moving camera; the Hi-Z test is paused because the depth
        pyramid comes from the moving camera. Returns whether culling is now frozen."""
        frozen = (self.cull_camera is None) if frozen is None else frozen
        self.cull_camera = self.camera if frozen else None
        self._reset = True
        log.info(
            "culling camera %s",
            "FROZEN (F2 releases): fly around to see what was culled; occlusion paused"
            if frozen
            else "released",
        )
        return frozen

    def update(self, ctx, camera) -> None:
        """Upload changed rows and this frame's uniforms; collect finished counters.

        Args:
            ctx: the ``FrameContext`` of the frame about to be recorded.
            camera: ``engine.scene.camera.Camera`` to render from.
        """
        self.stats.collect()
        self.gs.upload_dirty()
        self.camera = camera
        w, h = ctx.size
        aspect = w / h
        view = camera.view()
        proj = camera.proj(aspect)
        view_proj = proj @ view
        sun = np.asarray(self.scene.sun_direction, np.float32)
        fit = self._fit_sun(view_proj)
        self._update_frustum_lines(view_proj, aspect)
        s = self.settings
        vu = np.zeros(72, np.float32)
        vu[0:16] = view_proj.T.reshape(-1)
        vu[16:32] = np.linalg.inv(view_proj.astype(np.float64)).astype(np.float32).T.reshape(-1)
        vu[32:48] = fit.view_proj.T.reshape(-1)
        vu[48:52] = (*camera.eye, s.fog_density)
        vu[52:56] = (*sun, 1.0 if s.shadows else 0.0)
        vu[56:60] = (*SUN_COLOR, fit.texel_world)
        vu[60:64] = (*SKY_ZENITH, s.shadow_size)
        vu[64:68] = (*SKY_HORIZON, s.exposure)
        vu[68:72] = (*GROUND, 0.0)
        q = self.device.queue
        q.write_buffer(self.view_uniform, 0, vu.tobytes())
        q.write_buffer(self.cull_uniform, 0, self._cull_bytes(ctx.size, aspect, fit))

    def _update_frustum_lines(self, view_proj, aspect) -> None:
        if self.cull_camera is None or not self.show_frustum:
            return
        fmt = HDR_FORMAT if self.settings.post else self.graph.output_format
        if fmt not in self._lines:
            self._lines[fmt] = FrustumLines(self.device, fmt, DEPTH_FORMAT)
        frozen = self.cull_camera.proj(aspect) @ self.cull_camera.view()
        self._lines[fmt].set_frustum(np.linalg.inv(frozen.astype(np.float64)))
        self._lines[fmt].set_view(view_proj)

    def _fit_sun(self, view_proj):
        extent, distance = self.scene.extent, self.settings.shadow_radius or SHADOW_DISTANCE
        center, radius = shadow_region(view_proj, distance, extent)  # what the camera sees
        return fit_sun(self.scene.sun_direction, center, radius, extent, self.settings.shadow_size)

    def _cull_bytes(self, size, aspect, fit) -> bytes:
        s = self.settings
        cam = self.cull_camera or self.camera
        view, proj = cam.view(), cam.proj(aspect)
        flags = 0
        if s.cull:
            flags |= FLAG_CULL
            if s.occlusion:
                flags |= FLAG_TWO_PHASE
                if self.cull_camera is None:
                    flags |= FLAG_OCCLUSION
        if self._reset:
            flags |= FLAG_RESET
        return cull_uniform(
            view=view,
            planes=frustum_planes(proj @ view),
            light_planes=fit.planes,
            eye=cam.eye,
            p00=float(proj[0, 0]),
            p11=float(proj[1, 1]),
            near=float(cam.near),
            screen=size,
            pyramid=self.pyramid.base,
            levels=self.pyramid.levels,
            count=self.gs.count,
            flags=flags,
            batches=self.gs.batch_count,
            region_slots=self.gs.region_slots,
            lod_base_px=s.lod_base_px * size[1] / 720.0,
        )

    # -- passes -----------------------------------------------------------------------------
    def _add_passes(self) -> None:
        g = self.graph
        self.passes = [
            g.add(TransferPass("Cull.Reset", record=self._rec_reset)),
            g.add(ComputePass("Shadow.Cull", record=self._dispatch(lambda: self.cull.shadow))),
            g.add(RenderPass("Shadow", record=self._rec_shadow, targets=self._shadow_targets)),
            g.add(ComputePass("Cull.Early", record=self._dispatch(lambda: self.cull.early))),
            g.add(RenderPass("Main.Early", record=self._draw(0), targets=self._main_targets(True))),
            g.add(ComputePass("HiZ", record=self._rec_hiz)),
            g.add(ComputePass("Cull.Late", record=self._dispatch(lambda: self.cull.late))),
            g.add(RenderPass("Main.Late", record=self._draw(1), targets=self._main_targets(False))),
            g.add(RenderPass("Post", record=self._rec_post, targets=self._post_targets)),
        ]

    def _rec_reset(self, ctx, encoder) -> None:
        if self._last_recorded is not None:
            self.stats.record_copy(encoder, self.counters, self._last_recorded)
        self._last_recorded = ctx.frame_index
        self.gs.reset_args(encoder)
        encoder.clear_buffer(self.counters)
        # The uniform written for this frame carries FLAG_RESET; later frames do not.
        self._reset = False

    def _dispatch(self, pipeline):
        def record(ctx, cpass):
            cpass.set_pipeline(pipeline())
            cpass.set_bind_group(0, self.cull_group)
            cpass.dispatch_workgroups(self.workgroups, 1, 1)

        return record

    def _shadow_targets(self, ctx) -> dict:
        return {
            "color_attachments": [],
            "depth_stencil_attachment": {
                "view": self.shadow_view,
                "depth_clear_value": 0.0,
                "depth_load_op": "clear",
                "depth_store_op": "store",
            },
        }

    def _rec_shadow(self, ctx, rpass) -> None:
        rpass.set_pipeline(self.mesh.shadow())
        self._bind_geometry(rpass)
        self.gs.draw(rpass, 2, 1, self.draw_group)

    def _bind_geometry(self, rpass) -> None:
        rpass.set_bind_group(0, self.view_group)
        rpass.set_vertex_buffer(0, self.gs.vertices)
        rpass.set_index_buffer(self.gs.indices, "uint32")

    def color_target(self, ctx):
        """(view, format) Main renders to: the HDR texture, or the output without Post."""
        if self.settings.post:
            return self.graph.view("frame.hdr"), HDR_FORMAT
        return ctx.output, self.graph.output_format

    def _main_targets(self, early: bool):
        def targets(ctx) -> dict:
            clear = early or not self.settings.cull or not self.settings.occlusion
            view, _ = self.color_target(ctx)
            op = "clear" if clear else "load"
            return {
                "color_attachments": [
                    {
                        "view": view,
                        "clear_value": (*SKY_HORIZON, 1.0),
                        "load_op": op,
                        "store_op": "store",
                    }
                ],
                "depth_stencil_attachment": {
                    "view": self.graph.view("frame.depth"),
                    "depth_clear_value": 0.0,
                    "depth_load_op": op,
                    "depth_store_op": "store",
                },
            }

        return targets

    def _draw(self, region: int):
        def record(ctx, rpass) -> None:
            _, fmt = self.color_target(ctx)
            rpass.set_pipeline(self.mesh.main(fmt))
            self._bind_geometry(rpass)
            rpass.set_bind_group(2, self.shadow_group)
            self.gs.draw(rpass, region, 1, self.draw_group)
            lines = self._lines.get(fmt) if self.cull_camera is not None else None
            if region == 1 and lines is not None and self.show_frustum:
                lines.record(ctx, rpass)  # Main.Late: the last main pass

        return record

    def _rec_hiz(self, ctx, cpass) -> None:
        self.pyramid.record(cpass, self.graph.view("frame.depth"))

    def _post_targets(self, ctx) -> dict:
        return {
            "color_attachments": [
                {
                    "view": ctx.output,
                    "load_op": "clear",
                    "clear_value": (0, 0, 0, 1),
                    "store_op": "store",
                }
            ]
        }

    def _rec_post(self, ctx, rpass) -> None:
        rpass.set_pipeline(self.post.pipeline)
        rpass.set_bind_group(0, self.post_group)
        rpass.draw(3)

    # -- debugging / tests -------------------------------------------------------------------
    def record_ids(self, encoder, id_view, depth_view, regions=(0, 1)) -> None:
        """Draw ``regions`` of the last cull (0 early, 1 late, 2 shadow) into an ``r32uint``
        target: each pixel gets scene row + 1 of the nearest instance, 0 where none."""
        rpass = encoder.begin_render_pass(
            label="ids",
            color_attachments=[
                {
                    "view": id_view,
                    "clear_value": (0, 0, 0, 0),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ],
            depth_stencil_attachment={
                "view": depth_view,
                "depth_clear_value": 0.0,
                "depth_load_op": "clear",
                "depth_store_op": "store",
            },
        )
        rpass.set_pipeline(self.mesh.ids())
        self._bind_geometry(rpass)
        for r in regions:
            self.gs.draw(rpass, r, 1, self.draw_group)
        rpass.end()
