"""What the standard frame's passes are given: the graph resource names (this is the one
place they are spelled) and ``FrameResources``, the typed set of shared GPU objects.

A pass of the standard frame is constructed as ``PassClass(res, name)`` and keeps ``res``;
it reads only the fields below, never the frame that built it, and never another pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import wgpu

from engine.graph import OUTPUT, RenderGraph  # OUTPUT: the imported output, named here too

if TYPE_CHECKING:
    from engine.culling.gpu_scene import GpuScene
    from engine.culling.stats import CullStats
    from engine.passes.cull import CullResources
    from engine.passes.frustum_lines import FrustumLines
    from engine.passes.hiz import DepthPyramid
    from engine.passes.mesh import MeshPipelines
    from engine.passes.shadow import ShadowMap
    from engine.settings import FrameSettings

# -- graph resource names (declared reads/writes; the graph checks the order) ----------------
INSTANCES = "scene.instances"  # transforms, bounds, mesh ids: CPU uploads (imported)
VISIBILITY = "cull.visibility"  # per-instance state kept from the last frame (imported)
GEOMETRY = "scene.geometry"  # vertex and index buffers (imported)
ARGS = "cull.args"  # indirect draw arguments, per region and batch
REMAP = "cull.remap"  # instance remap lists the draws read
COUNTERS = "cull.counters"  # the eight atomic counters
PYRAMID = "hiz.pyramid"  # the depth pyramid (Hi-Z)
SHADOW_MAP = "shadow.map"  # the sun's depth maps: one array layer per cascade
DEPTH = "frame.depth"  # reverse-Z depth32float at the output size
HDR = "frame.hdr"  # linear HDR colour (rgba16float) Main draws into
# on-demand targets (``Pass.on_demand``): the Main passes write each only while a pass reads it
NORMALS = "frame.normals"  # oct view-space normal (xy), roughness, metallic (rgba16float)
MOTION = "frame.motion"  # pixels to where the surface was last frame (rg16float)
AMBIENT = "frame.ambient"  # the ambient (indirect) light, out of frame.hdr (rgba16float)
ALBEDO = "frame.albedo"  # linear base colour (rgba8unorm-srgb): the deferred G-buffer's
LIGHTS = "lights.buffer"  # the local lights: CPU uploads of changed rows (imported)
CLUSTERS = "lights.clusters"  # per cluster: its light count and sorted light list
LIGHT_COUNTERS = "lights.counters"  # the counter block ``lights``
HISTOGRAM = "post.histogram"  # luminance histogram (storage buffer of u32 bins)
EXPOSURE = "post.exposure"  # adapted exposure (history pair: read as EXPOSURE@prev)
BLOOM = "post.bloom"  # the bloom chain's result (half size, mip 0 of the up chain)
TAA = "post.taa"  # the resolved anti-aliased HDR colour (history pair: TAA@prev)
TRANSPARENT_ORDER = "transparent.order"  # BLEND instances' sorted indirect draws and rows
VIEW_IDS = "view.ids"  # geometry debug views: scene row + 1, LOD + 1 per pixel (rg32uint)
VIEW_DEPTH = "view.depth"  # ... and their own depth (made on first use)
VIEW_MATERIAL = "view.material"  # material views: the input a view shows (rgba16float)
VIEW_OVERDRAW = "view.overdraw"  # fragments per pixel before / after the depth test (rg16float)

DEPTH_FORMAT = "depth32float"
SHADOW_FORMAT = "depth32float"
HDR_FORMAT = "rgba16float"
#: The on-demand targets in their fixed order (the Main passes' colour outputs 1, 2, 3, 4 when
#: all are wanted; the ones wanted take consecutive locations), format and clear value: the
#: sky's (normal facing the camera, roughness 1, metallic 0; no motion, no ambient light, no
#: base colour).
FRAME_TARGETS = {
    NORMALS: ("rgba16float", (0.0, 0.0, 1.0, 0.0)),
    MOTION: ("rg16float", (0.0, 0.0, 0.0, 0.0)),
    AMBIENT: ("rgba16float", (0.0, 0.0, 0.0, 0.0)),
    ALBEDO: ("rgba8unorm-srgb", (0.0, 0.0, 0.0, 0.0)),
}

#: Main's clear colour: the sky's horizon, linear (Post draws the sky where depth is 0).
SKY_HORIZON = (0.62, 0.72, 0.84)

#: What one indirect mesh draw of the scene reads.
DRAW_INPUTS = (GEOMETRY, INSTANCES, ARGS, REMAP)


@dataclass(eq=False)
class FrameResources:
    """The standard frame's shared objects, built once by ``engine.frame.StandardFrame``.

    Attributes:
        device: the ``wgpu.GPUDevice``. ``graph``: the ``RenderGraph`` (named textures and
            buffers: ``graph.view(HDR)``, ``graph.buffer(EXPOSURE)``).
        settings: the current ``FrameSettings`` (replaced by ``StandardFrame.configure``).
        gs: the ``GpuScene`` (scene buffers, indirect args, remap, draws).
        mesh: the ``MeshPipelines``; ``view_group`` / ``draw_group`` its bind groups 0 and 1.
        materials: the ``GpuMaterials`` (texture arrays, material table); ``material_group``
            its bind group, group 2 of the mesh pipelines.
        view_uniform: the ``View`` uniform buffer (``engine.frame.VIEW_DTYPE``).
        cull: the cull's uniform, counters, layout and bind group (``CullResources``).
        shadow: the sun's shadow map array and fit (``ShadowMap``).
        pyramid: the Hi-Z ``DepthPyramid`` (resized with the graph).
        stats: the ``CullStats`` readback of the counters; ``cascade_stats``: each shadow
            cascade's block (``CascadeStats``, active while the frame has that cascade).
        frustum_lines: ``formats -> FrustumLines | None``: the frozen culling frustum to draw
            over the last main pass into a pass with those colour attachments, or None.
        prev_jitter: last frame's ``jitter``; size: the output size in pixels.
        jitter: this frame's sub-pixel offset of the projection in pixels ``(x right,
            y down)``, (0, 0) without TAA.
        view_proj, prev_view_proj: ``(4, 4)`` float64 world -> clip of the rendering camera,
            unjittered, this frame and the last (None before the second frame).
        inv_view_proj: ``(4, 4)`` float64 clip -> world of this frame's jittered projection.
        camera_cut: the camera jumped this frame (TAA takes the current frame alone).
        cull_camera: the frozen culling camera while culling is frozen (F2), else None.
        frozen: the ``FrozenCulling`` (the frozen camera's pyramid copy and the culler's
            classes for it; ``engine.culling.frozen``), or None.
        lights: the ``engine.lights.gpu.GpuLights`` (light buffer, cluster lists, the
            lights' bind group); light_stats: its counter block's readback (``LightStats``).
        sun_view_proj: ``(4, 4)`` world -> sun shadow clip of this frame's fit (cascade 0).
        cascade_fit: this frame's ``engine.passes.shadow.CascadeFit`` (every cascade's
            projection, planes and texel size, and the splits).
        shadow_camera: the camera the cascades are fitted to when it is not the rendering
            camera (``StandardFrame.fit_shadows_to``), else None.
        sky_clear: the colour target's clear value (linear RGBA): the horizon of the day's or
            the night's sky, the sky itself where no ``Sky`` pass draws (no post chain).
        output_pass: the pass that draws the picture into the output: ``Post``, or what a
            sample put in its place (``StandardFrame.replace``); a debug view turns it off.
    """

    device: wgpu.GPUDevice
    graph: RenderGraph
    settings: FrameSettings
    gs: GpuScene
    mesh: MeshPipelines
    view_uniform: wgpu.GPUBuffer
    view_group: wgpu.GPUBindGroup
    draw_group: wgpu.GPUBindGroup
    cull: CullResources
    shadow: ShadowMap
    pyramid: DepthPyramid
    stats: CullStats
    frustum_lines: Callable[[tuple[str, ...]], FrustumLines | None]
    materials: Any = None  # engine.materials.gpu.GpuMaterials
    material_group: Any = None  # its bind group (group 2 of the mesh pipelines)
    transparent: Any = None  # engine.passes.transparent.TransparentResources
    jitter: tuple[float, float] = (0.0, 0.0)
    prev_jitter: tuple[float, float] = (0.0, 0.0)
    size: tuple[int, int] = (1, 1)
    camera: Any = None  # the camera of the frame being recorded
    view_proj: Any = None
    prev_view_proj: Any = None
    inv_view_proj: Any = None
    camera_cut: bool = False
    cull_camera: Any = None  # the frozen culling camera (F2), or None
    output_pass: Any = None  # the pass drawing the picture to the output (Post, or its stand-in)
    sky_clear: tuple = (*SKY_HORIZON, 1.0)  # the colour's clear: the day's or night's horizon
    sun_view_proj: Any = None  # (4, 4) world -> sun shadow clip of this frame's fit
    cascade_fit: Any = None  # engine.passes.shadow.CascadeFit of this frame
    cascade_stats: tuple = ()  # engine.culling.stats.CascadeStats, one per possible cascade
    shadow_camera: Any = None  # the camera the cascades are fitted to, if not the render one
    frozen: Any = None  # engine.culling.frozen.FrozenCulling
    lights: Any = None  # engine.lights.gpu.GpuLights
    light_stats: Any = None  # engine.lights.gpu.LightStats
    cluster_view: Any = None  # this frame's engine.lights.gpu.ClusterView (with lights)

    def cull_pyramid(self):
        """The pyramid view the culler tests occlusion against: the frozen camera's copy
        while culling is frozen with one, else the frame's own."""
        f = self.frozen
        return f.view if f is not None and f.active else self.pyramid.view

    def bind_geometry(self, rpass, view_group=None) -> None:
        """Bind group 0 (``view_group`` or the frame's) and the scene's vertex (positions and
        normals; tangents and UVs) and index buffers."""
        rpass.set_bind_group(0, view_group or self.view_group)
        rpass.set_vertex_buffer(0, self.gs.vertices)
        rpass.set_vertex_buffer(1, self.gs.attributes)
        rpass.set_index_buffer(self.gs.indices, "uint32")

    def geometry_key(self) -> tuple:
        """What ``bind_geometry`` and the scene's indirect draws bind (a render bundle's
        key): groups 0 and 1, the vertex, index and indirect-argument buffers."""
        gs = self.gs
        return (self.view_group, self.draw_group, gs.vertices, gs.attributes, gs.indices, gs.args)

    def frame_outputs(self) -> tuple[str, ...]:
        """The on-demand targets (``FRAME_TARGETS`` order) some enabled pass reads now: what
        the Main passes write beside the colour."""
        g = self.graph
        return tuple(n for n in FRAME_TARGETS if g.wanted(n))

    def color_name(self) -> str:
        """The resource Main draws into: ``HDR``, or ``OUTPUT`` without post."""
        return HDR if self.settings.post else OUTPUT

    def color_target(self, ctx) -> tuple[Any, str]:
        """``(view, format)`` Main renders to: the HDR texture, or the output without post."""
        if self.settings.post:
            return self.graph.view(HDR), HDR_FORMAT
        return ctx.output, self.graph.output_format


class BindGroupCache:
    """Bind groups keyed on what they bind (e.g. the graph's ``resource_key()``: its size
    generation and history parity, plus any knob that changes an entry): each built once
    per key, the oldest dropped past ``size`` keys, so a steady frame builds none and
    alternating history parities reuse theirs. ``clear()`` after a hot reload of an
    ``"auto"``-layout pipeline (its bind group layout is new)."""

    def __init__(self, size: int = 8):
        self.size = size
        self._groups: dict = {}

    def get(self, key, build: Callable[[], wgpu.GPUBindGroup]) -> wgpu.GPUBindGroup:
        """The group of ``key``, made by ``build()`` the first time."""
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) >= self.size:
                del self._groups[next(iter(self._groups))]  # the oldest
            group = self._groups[key] = build()
        return group

    def clear(self) -> None:
        self._groups.clear()


def clear_output(ctx) -> dict:
    """``targets()`` of a fullscreen pass that writes every pixel of the frame's output
    (Post's tone map, a debug view): cleared to opaque black first."""
    color = {
        "view": ctx.output,
        "load_op": "clear",
        "clear_value": (0, 0, 0, 1),
        "store_op": "store",
    }
    return {"color_attachments": [color]}


def frame_resources(graph) -> FrameResources | None:
    """The standard frame's ``FrameResources`` in ``graph`` (through its passes), or None."""
    for p in graph.passes:
        res = getattr(p, "res", None)
        if isinstance(res, FrameResources):
            return res
    return None
