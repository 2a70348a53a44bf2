"""The standard frame: one engine-owned node that wires the passes of a GPU-driven frame with
two-phase occlusion culling, a sun shadow map, HDR lighting and a post chain.

Passes, in order (each an object in ``engine/passes/`` that owns its pipeline, targets,
``record`` and enable rule; names are what every table, trace and capture shows)::

    Cull.Reset   transfer  copy last frame's counters to the readback ring; reset indirect
                           args (template copy) and clear the eight counters; moved
                           instances' transforms in, their old ones kept as the previous
    Shadow.Cull  compute   casters vs each shadow cascade's volume, extended toward the sun
    Shadow.C0..3 render    depth-only sun shadow map of each cascade (indirect draws; one
                           cascade by default, ``cascades`` knob up to four)
    Cull.Early   compute   last frame's visible set, frustum only
    Lights.Reset transfer  last frame's light counters to the readback ring; counts cleared
    Lights.Cluster compute the local lights assigned to view-space clusters (froxels)
    Main.Early   render    draw it: reverse-Z depth32float (clear 0, compare greater), HDR
    HiZ          compute   depth pyramid from that depth
    Cull.Late    compute   everything: frustum, sub-pixel, Hi-Z; newly visible queued
    Main.Late    render    draw the newly visible (colour and depth loaded)
    Lights.Deferred render the deferred light path: the G-buffer lit by its cluster lights
    Sky          render    the sky model where nothing was drawn (depth still 0)
    Ambient      render    frame.ambient added to the colour (only while a pass reads it)
    Transparent.Sort compute BLEND instances Cull.Late kept, sorted back to front (GPU sort)
    Transparent  render    draw them alpha-blended, depth tested, not written
    Post.Luminance compute log2-luminance histogram of the HDR colour (auto exposure)
    Post.Exposure  compute exposure adapted from last frame's (history buffer; auto)
    Post.Bloom     compute energy-conserving downsample/upsample bloom chain
    Post.TAA       compute jittered frames resolved with reprojected, clamped history
    Post         render    bloom mix, exposure, ACES-fitted tone map to the output

Every pass is built as ``Pass(res, name)`` from ``STANDARD_PASSES`` and given the typed
``engine.passes.resources.FrameResources`` (scene buffers, counters, uniforms, bind groups,
shadow map, depth pyramid); resource names are in ``engine.passes.resources``. This module
builds those, uploads the per-frame uniforms and applies the knobs
(``engine.settings.FrameSettings``): disabled passes stay in the graph with
``enabled = False``. Without occlusion there is one phase:
Cull.Early, Main.Early and HiZ are off and Main.Late draws everything that passes the
frustum and sub-pixel tests. Without culling every instance is visible (Cull.Late only picks
LODs). Without post, Main renders straight to the output (no HDR target, flat sky colour,
no jitter).

Per frame only what changed is rebuilt: bind groups are cached on the resources they bind,
the render passes replay render bundles keyed on what they bind (``engine.passes.bundles``),
and the uniforms are packed as words at their dtype's offsets.
"""

from __future__ import annotations

import logging
import math
import struct
from dataclasses import replace

import numpy as np
import wgpu

from engine.culling.cull import (
    FLAG_CULL,
    FLAG_OCCLUSION,
    FLAG_RESET,
    FLAG_TWO_PHASE,
    MAX_INSTANCES,
    cull_uniform,
)
from engine.culling.frozen import FrozenCulling
from engine.culling.gpu_scene import GpuScene
from engine.culling.stats import CascadeStats, CullStats
from engine.gpu import GpuError
from engine.graph import Pass, RenderGraph, TextureDesc
from engine.knobs import Knob
from engine.lights.gpu import PATH_MODES, GpuLights, LightStats, cluster_view
from engine.materials.gpu import GpuMaterials
from engine.math3d import column_major, inverse4
from engine.passes.ambient import AmbientPass
from engine.passes.bloom import BloomPass
from engine.passes.cull import CullPass, CullResetPass, CullResources
from engine.passes.exposure import ExposurePass, LuminancePass
from engine.passes.frustum_lines import FrustumLines
from engine.passes.hiz import DepthPyramid, HiZPass
from engine.passes.lights import (
    DeferredLightsPass,
    LightClusterPass,
    LightsResetPass,
    check_gbuffer,
)
from engine.passes.mesh import MainPass, MeshPipelines
from engine.passes.post import PostPass
from engine.passes.resources import (
    DEPTH,
    DEPTH_FORMAT,
    EXPOSURE,
    FRAME_TARGETS,
    GEOMETRY,
    HDR,
    HDR_FORMAT,
    INSTANCES,
    LIGHTS,
    PYRAMID,
    SHADOW_MAP,
    SKY_HORIZON,
    TAA,
    VISIBILITY,
    FrameResources,
)
from engine.passes.shadow import BLEND_BAND, MAX_CASCADES, ShadowMap, ShadowPass, frustum_planes
from engine.passes.sky import SkyPass
from engine.passes.taa import JITTER, TaaPass, jittered_projection
from engine.passes.transparent import (
    TransparentPass,
    TransparentResources,
    TransparentSortPass,
)
from engine.settings import FRAME_KNOBS, FrameSettings, register_frame_commands

log = logging.getLogger("lantern")

#: The standard passes in recording order: ``(name, constructor(res, name))``. Adding a
#: standard pass is one line here (its class builds its own pipeline and graph resources).
STANDARD_PASSES = (
    ("Cull.Reset", CullResetPass),
    ("Shadow.Cull", CullPass),
    ("Shadow.C0", ShadowPass),
    ("Shadow.C1", ShadowPass),
    ("Shadow.C2", ShadowPass),
    ("Shadow.C3", ShadowPass),
    ("Cull.Early", CullPass),
    ("Lights.Reset", LightsResetPass),
    ("Lights.Cluster", LightClusterPass),
    ("Main.Early", MainPass),
    ("HiZ", HiZPass),
    ("Cull.Late", CullPass),
    ("Main.Late", MainPass),
    ("Lights.Deferred", DeferredLightsPass),
    ("Sky", SkyPass),
    ("Ambient", AmbientPass),
    ("Transparent.Sort", TransparentSortPass),
    ("Transparent", TransparentPass),
    ("Post.Luminance", LuminancePass),
    ("Post.Exposure", ExposurePass),
    ("Post.Bloom", BloomPass),
    ("Post.TAA", TaaPass),
    ("Post", PostPass),
)
PASS_NAMES = tuple(name for name, _ in STANDARD_PASSES)
SKY_ZENITH = (0.16, 0.32, 0.68)
GROUND = (0.30, 0.27, 0.23)
SUN_COLOR = (3.0, 2.8, 2.5)
#: The night knob's sky (zenith, horizon, ground; linear) and moon (in the sun's place).
NIGHT_SKY = ((0.0015, 0.003, 0.010), (0.010, 0.013, 0.024), (0.008, 0.007, 0.006))
MOON_COLOR = (0.03, 0.035, 0.05)
#: Bind groups the standard frame's lit pipelines use (WebGPU's default allows 4).
BIND_GROUPS = 5
#: Texture LOD bias with TAA on: log2(render / display resolution) - 1 = -1 at native
#: resolution, so the jittered frames resolve the next finer mip's detail (AMD FidelityFX
#: Super Resolution 2 documentation, "Mipmap biasing").
TAA_MIP_BIAS = -1.0

#: The WGSL ``View`` uniform (shaders/frame_common.wgsl), field by field; matrices
#: column-major (numpy's row-major matrices are stored transposed).
VIEW_DTYPE = np.dtype(
    [
        ("view_proj", "<f4", (4, 4)),  # world -> clip of the rendering camera (reverse-Z)
        ("inv_view_proj", "<f4", (4, 4)),  # clip -> world
        ("light_view_proj", "<f4", (4, 4)),  # world -> sun shadow clip (cascade 0)
        ("eye", "<f4", 4),  # camera position; w: fog density per world unit
        ("sun_dir", "<f4", 4),  # unit vector towards the sun; w: shadows on (1) / off (0)
        ("sun_color", "<f4", 4),  # linear sun radiance; w: shadow texel size, world units
        ("sky_zenith", "<f4", 4),  # linear; w: shadow map size in texels
        ("sky_horizon", "<f4", 4),  # linear; w: exposure
        ("ground", "<f4", 4),  # ground bounce colour; w: unused
        ("view", "<f4", (4, 4)),  # world -> view (right-handed, the camera looks down -z)
        ("proj", "<f4", (4, 4)),  # view -> clip, jittered (reverse-Z infinite perspective)
        ("inv_proj", "<f4", (4, 4)),  # clip -> view, jittered
        ("prev_view_proj", "<f4", (4, 4)),  # last frame's world -> clip, unjittered
        ("jitter", "<f4", 4),  # xy: sub-pixel offset (pixels, x right, y down); zw: last frame
        ("size", "<f4", 4),  # xy: output size in pixels; zw: 1 / size
        ("cascade_view_proj", "<f4", (MAX_CASCADES, 4, 4)),  # world -> cascade c's shadow clip
        ("cascade_split", "<f4", 4),  # view depth where cascade c ends (world units)
        ("cascade_texel", "<f4", 4),  # cascade c's shadow texel size (world units)
        ("cascade_params", "<f4", 4),  # cascades in use, blend band, 1 / map size, snapped
        ("cascade_depth", "<f4", 4),  # the fitted camera's view depth: dot(xyz, p) + w
    ]
)
_VIEW_PACK = struct.Struct("<" + "f" * (VIEW_DTYPE.itemsize // 4))  # every field is f32
_ZERO_MATRICES = [0.0] * (16 * MAX_CASCADES)
assert all(VIEW_DTYPE.fields[n][0].base == np.float32 for n in VIEW_DTYPE.names)


class StandardFrame:
    """Builds the standard passes into ``graph`` for ``scene`` and feeds them every frame.

    Call ``update(ctx, camera)`` once per frame before the graph executes (e.g. from
    ``Sample.update``); it never waits for the GPU and its cost does not depend on the
    instance count (only changed scene rows are uploaded). The cull counters' readback is
    registered with the graph (``graph.readbacks``): the frame loop collects them into the
    telemetry record.

    Args:
        gpu: ``engine.gpu.Gpu`` (uses ``indirect-first-instance`` when present).
        graph: the render graph; passes are appended in ``PASS_NAMES`` order.
        scene: an ``engine.scene.scene.Scene``.
        settings: the knobs.
        stats: where the counters are read back (a ``CullStats`` is made when None).

    Attributes:
        res: the ``FrameResources`` every pass is given.
        passes: the standard passes in ``PASS_NAMES`` order (``graph.pass_named`` finds one).
        jitter_sequence: TAA's sub-pixel projection offsets in pixels ``(x right, y down)``,
            cycled by frame index (default: 16 of Halton (2, 3)); tests may pin one.
        cut_distance: camera movement in one frame (world units; a tenth of the scene's
            diagonal) past which TAA restarts.

    Raises:
        ValueError: an empty scene or more than ``MAX_INSTANCES`` instances.
        GpuError: the adapter's backend cannot run the frame's shaders (OpenGL), or the
            device allows fewer than ``BIND_GROUPS`` bind groups.

    The scene's lights (``scene.lights``, also ``frame.lights``) are shaded on the path the
    ``light_path`` knob picks; add and change them at any time (only changed rows are
    uploaded, in the next ``update``).
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
        groups = gpu.device.limits.get("max-bind-groups", 4)
        if groups < BIND_GROUPS:
            raise GpuError(
                f"the standard frame's lit pipelines use {BIND_GROUPS} bind groups and "
                f"{gpu.summary} allows {groups}: use another adapter (--adapter)"
            )
        self.gpu, self.graph, self.scene = gpu, graph, scene
        self.device = d = gpu.device
        settings = settings or FrameSettings()
        gs = GpuScene(d, scene, first_instance="indirect-first-instance" in gpu.features,
                      cascades=settings.cascades)  # fmt: skip
        stats = stats if stats is not None else CullStats(d)
        graph.add_readback(stats)
        cascade_stats = tuple(CascadeStats(d, c) for c in range(MAX_CASCADES))
        for c in cascade_stats:
            graph.add_readback(c)
        graph.import_resource(INSTANCES, VISIBILITY, GEOMETRY, LIGHTS)
        tex = wgpu.TextureUsage
        graph.create_texture(
            DEPTH,
            TextureDesc(DEPTH_FORMAT, tex.RENDER_ATTACHMENT | tex.TEXTURE_BINDING | tex.COPY_SRC),
        )
        graph.create_texture(
            HDR, TextureDesc(HDR_FORMAT, tex.RENDER_ATTACHMENT | tex.TEXTURE_BINDING | tex.COPY_SRC)
        )
        for name, (fmt, _) in FRAME_TARGETS.items():  # memory only once a pass reads one
            graph.create_texture(name, TextureDesc(fmt, tex.RENDER_ATTACHMENT), lazy=True)
        u = wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        view_uniform = d.create_buffer(label="view", size=VIEW_DTYPE.itemsize, usage=u)
        # Anisotropic filtering (x8) for trilinear textures, except on a CPU adapter:
        # lavapipe's software anisotropic filtering took minutes for one 160x90 city frame.
        cpu = gpu.adapter.info.get("adapter_type") == "CPU"
        materials = GpuMaterials(
            d, scene, (SKY_ZENITH, SKY_HORIZON, GROUND), anisotropy=1 if cpu else 8
        )
        mesh = MeshPipelines(d, materials.shader_defines(settings.textures))
        self.res = FrameResources(
            device=d,
            graph=graph,
            settings=settings,
            gs=gs,
            mesh=mesh,
            view_uniform=view_uniform,
            view_group=mesh.view_group(view_uniform, gs),
            draw_group=mesh.draw_group(gs),
            cull=CullResources(d, gs),
            shadow=ShadowMap(d, mesh, settings.shadow_size, settings.cascades),
            pyramid=DepthPyramid(d, graph.size),
            stats=stats,
            frustum_lines=self.frustum_lines,
            cascade_stats=cascade_stats,
        )
        self.materials = self.res.materials = materials
        self.res.material_group = self.materials.group
        self.lights = scene.lights
        self.res.lights = GpuLights(d, scene.lights, mesh.layout_lights)
        self.res.light_stats = LightStats(d)
        graph.add_readback(self.res.light_stats)
        self._sky = (SKY_ZENITH, SKY_HORIZON, GROUND, SUN_COLOR)
        self._lights_written = False  # the light uniform last said there are lights
        if settings.night:
            self._set_sky(True)
        self.res.transparent = TransparentResources(self.res)
        self.gs, self.stats, self.pyramid = gs, stats, self.res.pyramid
        graph.import_texture(PYRAMID, lambda: self.res.pyramid.texture)  # readable by name
        graph.import_texture(SHADOW_MAP, lambda: self.res.shadow.texture)
        self.res.frozen = self.frozen = FrozenCulling(d, self.pyramid, gs.state)
        self._warming = False
        self._last_jitter = (0.0, 0.0)
        self.counters = self.res.cull.counters
        self.camera = None
        self.cull_camera = None  # frozen culling camera (F2) or None
        self.shadow_camera = None  # the camera the cascades are fitted to, if not the render one
        self.show_frustum = True  # draw the frozen culling frustum (while frozen)
        self._lines: dict[tuple, FrustumLines] = {}  # per attachment formats, made when drawn
        self._frustum: tuple | None = None  # (inverse frozen view-proj, view-proj) to draw
        self.jitter_sequence = JITTER  # sub-pixel offsets (pixels) cycled with TAA on
        self.cut_distance = 0.1 * float(np.linalg.norm(scene.extent[1] - scene.extent[0]))
        self.passes = [graph.add(make(self.res, name)) for name, make in STANDARD_PASSES]
        light_kinds = (LightsResetPass, LightClusterPass, DeferredLightsPass)
        self._light_passes = [p for p in self.passes if isinstance(p, light_kinds)]
        self.res.output_pass = self.passes[-1]  # Post
        self.added: list = []  # passes a sample put in (insert / replace)
        self.knobs = dict((k.attr, k) for k in FRAME_KNOBS)  # attr -> Knob, the sample's too
        self.extra: dict = {}  # values of the knobs a sample added (add_knob)
        self._commands = None
        self.configure(settings)
        graph.on_resize(self._on_resize)

    @property
    def settings(self) -> FrameSettings:
        """The current knobs (``configure`` / ``set_settings`` change them)."""
        return self.res.settings

    # -- knobs and resources ---------------------------------------------------------------
    def configure(self, settings: FrameSettings) -> None:
        """Apply new knobs: each pass's enable rule decides whether it runs; recreates what
        the knobs change (the shadow map); a temporal effect switched on starts afresh."""
        old = self.res.settings
        fmt = HDR_FORMAT if settings.post else self.graph.output_format
        check_gbuffer(self.device, settings, fmt)  # before anything changes
        if settings.taa and not old.taa:
            self.graph.reset_history(TAA)
        if settings.auto_exposure and not old.auto_exposure:
            self.graph.reset_history(EXPOSURE)
        self.res.settings = settings
        if settings.night != old.night:
            self._set_sky(settings.night)
        self._set_cascades(settings)
        self.materials.set_params(
            mip_bias=TAA_MIP_BIAS if settings.taa and settings.post else 0.0,
            textured=settings.textures,
        )
        self.res.mesh.set_textures(self.materials.shader_defines(settings.textures))
        for p in [*self.passes, *self.added]:
            if hasattr(p, "enabled_by"):
                p.enabled = p.enabled_by(settings)
        self.res.cull.reset = True

    def _set_sky(self, night: bool) -> None:
        """The day's or the night's sky, sun (moon) and ambient light."""
        zenith, horizon, ground = NIGHT_SKY if night else (SKY_ZENITH, SKY_HORIZON, GROUND)
        self._sky = (zenith, horizon, ground, MOON_COLOR if night else SUN_COLOR)
        self.res.sky_clear = (*horizon, 1.0)
        self.materials.set_sky((zenith, horizon, ground))

    def _set_cascades(self, settings: FrameSettings) -> None:
        """The map array's size and layers, a cull region per cascade (new region buffers:
        the bind groups over them made anew), and which cascades' counter blocks are read."""
        r, n = self.res, settings.cascades
        r.shadow.resize(settings.shadow_size, n)
        if self.gs.set_cascades(n):
            r.view_group = r.mesh.view_group(r.view_uniform, self.gs)
            r.draw_group = r.mesh.draw_group(self.gs)
        for c in r.cascade_stats:
            c.set_active(settings.shadows and c.cascade < n)

    def set_settings(self, **changes) -> FrameSettings:
        """``configure(replace(settings, **changes))``; returns the new settings.

        Raises:
            ValueError: from ``FrameSettings`` for a bad value.
        """
        self.configure(replace(self.settings, **changes))
        return self.settings

    def register_commands(self, commands, *, freeze=None) -> None:
        """Each knob's console and portal command (the sample's added ones too) and ``cull
        freeze [on|off]`` (``engine.settings.register_frame_commands``)."""
        register_frame_commands(commands, self, freeze=freeze)
        self._commands = commands
        for knob in self.knobs.values():
            if knob.attr in self.extra:
                self._register_knob(knob)

    # -- surgery: a technique inside the standard frame --------------------------------------
    def insert(self, p: Pass, *, before: str | None = None, after: str | None = None) -> Pass:
        """Put the sample's pass ``p`` right before or after a standard (or earlier inserted)
        pass; the graph checks the frame at once. A pass with ``enabled_by(settings)`` follows
        the knobs like the standard ones; every tool times, lists, dumps and reloads it as
        any pass.

        Raises:
            GraphError: one line naming the pass and the anchor or resource.
        """
        self.graph.insert(p, before=before, after=after)
        self.added.append(p)
        return p

    def replace(self, name: str, p: Pass) -> Pass:
        """Put ``p`` in place of the standard pass ``name`` (e.g. your own tone map for
        ``Post``); the HUD and debug views still come after it and a view turns it off as it
        did Post.

        Raises:
            GraphError: one line naming the pass and the resource.
        """
        old = self.graph.pass_named(name) if name in self.graph.pass_names() else None
        self.graph.replace(name, p)
        self.passes = [p if q is old else q for q in self.passes]
        self.added.append(p)
        if old is not None and old is self.res.output_pass:
            self.res.output_pass = p
        return p

    def remove(self, name: str) -> Pass:
        """Take the standard (or inserted) pass ``name`` out of the frame; returns it.

        Raises:
            GraphError: no such pass, or an enabled pass reads what only it writes.
        """
        p = self.graph.remove_named(name)
        self.passes = [q for q in self.passes if q is not p]
        self.added = [q for q in self.added if q is not p]
        return p

    # -- a sample's own knobs -------------------------------------------------------------------
    def add_knob(self, knob: Knob, value=None) -> None:
        """A knob of the sample's own (``engine.knobs.Knob``), beside the frame's: its console
        and portal command (registered with the frame's), its value read with ``knob`` and
        set with ``set_knob``. Declare it on the sample class too (``Sample.knobs``) so the
        command line has its flag; ``value`` is the parsed one (default: its default).

        Raises:
            ValueError: a knob of that name already exists.
        """
        if knob.attr in self.knobs or hasattr(self.settings, knob.attr):
            raise ValueError(f"knob {knob.name!r}: the frame already has a knob of that name")
        self.knobs[knob.attr] = knob
        self.extra[knob.attr] = knob.default if value is None else value
        if self._commands is not None:
            self._register_knob(knob)

    def add_knobs(self, knobs, args=None) -> None:
        """``add_knob`` for each of ``knobs`` with its value from the parsed command line
        ``args`` (a sample's ``Sample.knobs``: ``frame.add_knobs(self.knobs, app.args)``)."""
        for k in knobs:
            self.add_knob(k, getattr(args, k.attr, None))

    def knob(self, name: str):
        """The value of knob ``name`` (a ``FrameSettings`` field or an added knob; dashes or
        underscores)."""
        attr = name.replace("-", "_")
        return self.extra[attr] if attr in self.extra else getattr(self.settings, attr)

    def set_knob(self, name: str, value) -> None:
        """Set knob ``name`` (as its command does): a frame knob through ``set_settings``, an
        added one in place (its passes read it each frame)."""
        attr = name.replace("-", "_")
        if attr in self.extra:
            self.extra[attr] = value
        else:
            self.set_settings(**{attr: value})

    def _register_knob(self, knob: Knob) -> None:
        knob.register(
            self._commands,
            lambda: self.knob(knob.attr),
            lambda v: self.set_knob(knob.attr, v),
            self.knob,
        )

    def _on_resize(self, size) -> None:
        self.res.pyramid.resize(size)
        self.res.cull.reset = True  # a pyramid or visibility from another size is never used

    # -- per frame --------------------------------------------------------------------------
    def freeze_culling(self, frozen: bool | None = None, *, camera=None) -> bool:
        """Freeze (or release; None toggles) the culling camera at the current camera (or
        at ``camera``, e.g. ``--cull-camera``, which may be given before the first frame).

        While frozen, culling keeps the frozen camera's frustum, sub-pixel, LOD and Hi-Z
        decisions while rendering from the moving camera: occlusion is tested against a copy
        of the pyramid made from the frozen camera's depth (``engine.culling.frozen``; a
        camera other than the last frame's is rendered from for a couple of frames first).
        Returns whether culling is now frozen."""
        frozen = (self.cull_camera is None) if frozen is None else frozen
        at = camera if camera is not None else self.camera
        last = at is self.camera and self.camera is not None
        self.cull_camera = self.res.cull_camera = at if frozen else None
        s = self.settings
        if frozen:
            self.frozen.start(at, last_frame=last, occlusion=s.cull and s.occlusion)
        else:
            self.frozen.stop()
        self.res.cull.reset = True
        log.info(
            "culling camera %s",
            "FROZEN: culled as seen from it (F2 or 'cull freeze off' releases)"
            if frozen
            else "released",
        )
        return frozen

    def update(self, ctx, camera) -> None:
        """Upload changed rows and this frame's uniforms.

        With TAA on, the rendering projection is offset by ``jitter_sequence[frame_index %
        len]`` pixels (culling judges the jittered image); a camera that moved more than
        ``cut_distance`` world units since the last frame is a cut (TAA restarts).

        Args:
            ctx: the ``FrameContext`` of the frame about to be recorded.
            camera: ``engine.scene.camera.Camera`` to render from.
        """
        r = self.res
        self.gs.upload_dirty()
        self._warming = self.frozen.warming  # the frozen camera's own frames first
        if self._warming:
            camera = self.frozen.camera
        self.frozen.step()
        last = r.camera
        self.camera = r.camera = camera
        aspect = ctx.size[0] / ctx.size[1]
        view, proj = camera.view(), camera.proj(aspect)
        view_proj = proj @ view
        if self.settings.taa and self.settings.post:
            seq = self.jitter_sequence
            r.jitter = seq[ctx.frame_index % len(seq)]
        else:
            r.jitter = (0.0, 0.0)
        jproj = jittered_projection(proj, r.jitter, ctx.size)
        jittered = view_proj if jproj is proj else jproj @ view
        r.prev_view_proj, r.view_proj = r.view_proj, view_proj.astype(np.float64)
        r.prev_jitter, r.size = self._last_jitter, tuple(ctx.size)
        self._last_jitter = r.jitter
        r.inv_view_proj = np.array(inverse4(jittered))  # float64
        if last is None:
            r.camera_cut = False
        else:
            d = [a - b for a, b in zip(camera.eye.tolist(), last.eye.tolist(), strict=True)]
            r.camera_cut = math.sqrt(sum(x * x for x in d)) > self.cut_distance
        fit = r.cascade_fit = self._fit_sun(view_proj, aspect)
        r.sun_view_proj = fit.view_proj
        self._update_lights(camera, view, jproj, ctx.size)
        self._update_frustum_lines(jittered, aspect)
        q = self.device.queue
        q.write_buffer(r.view_uniform, 0, self._view_bytes(camera, jittered, fit, view, jproj))
        q.write_buffer(r.cull.uniform, 0, self._cull_bytes(ctx.size, aspect, fit, view, jproj))

    def _update_lights(self, camera, view, proj, size) -> None:
        """Upload the changed lights, this frame's grid (slices from the near plane to the
        scene's farthest corner) and turn the light passes on or off with the count."""
        g = self.res.lights
        g.upload()
        self.res.mesh.set_lights(g.count > 0)
        for p in self._light_passes:
            p.enabled = p.enabled_by(self.settings)
        if not g.count and not self._lights_written:  # nothing to say (again): no write
            return
        self._lights_written = g.count > 0
        lo, hi = self.scene.extent
        pairs = zip(lo.tolist(), hi.tolist(), camera.eye.tolist(), strict=True)
        corner = [max(abs(a - x), abs(b - x)) for a, b, x in pairs]
        far = math.sqrt(sum(c * c for c in corner))  # the farthest corner of the extent
        cv = cluster_view(view, proj, size, float(camera.near), far)
        self.res.cluster_view = cv
        g.write_params(cv, PATH_MODES[self.settings.light_path])

    def _view_bytes(self, camera, view_proj, fit, view, proj) -> bytes:
        """The ``View`` uniform (``VIEW_DTYPE``) in one ``struct.pack`` of plain numbers in
        its field order (cheaper, every frame, than assigning the fields of a structured
        array); matrices column-major."""
        s, r = self.settings, self.res
        return _VIEW_PACK.pack(
            *column_major(view_proj),
            *column_major(self.res.inv_view_proj),
            *column_major(fit.view_proj),
            *camera.eye.tolist(),
            s.fog_density,
            *np.asarray(self.scene.sun_direction).tolist(),
            1.0 if s.shadows else 0.0,
            *self._sky[3],  # the sun (the moon at night)
            fit.texel_world,
            *self._sky[0],
            s.shadow_size,
            *self._sky[1],
            1.0 if s.auto_exposure else s.exposure,
            *self._sky[2],
            0.0,
            *column_major(view),
            *column_major(proj),
            *column_major(inverse4(proj)),
            *column_major(r.view_proj if r.prev_view_proj is None else r.prev_view_proj),
            *r.jitter,
            *r.prev_jitter,
            *r.size,
            1.0 / r.size[0],
            1.0 / r.size[1],
            *self._cascade_floats(fit),
            *self._cascade_depth(view),
        )  # eye, sun_dir, sun_color, sky_zenith, sky_horizon, ground: consecutive vec4f

    def _cascade_floats(self, fit) -> list[float]:
        """The ``View`` uniform's cascade fields: each cascade's matrix (unused ones 0), the
        splits, the texel sizes, (count, blend band, 1 / map size, snapped)."""
        s, n = self.settings, len(fit.cascades)
        out = []
        for f in fit.cascades:
            out += column_major(f.view_proj)
        out += _ZERO_MATRICES[: 16 * (MAX_CASCADES - n)]
        pad = [0.0] * (MAX_CASCADES - n)
        out += [*fit.splits[1:], *pad, *(f.texel_world for f in fit.cascades), *pad]
        out += [float(n), BLEND_BAND, 1.0 / s.shadow_size, 1.0 if s.shadow_snap else 0.0]
        return out

    def _cascade_depth(self, view) -> list[float]:
        """The ``View`` uniform's ``cascade_depth``: the row giving the view depth (world
        units, along the look direction) of a world point for the camera the cascades are
        fitted to (``view``, the rendering camera's, unless ``fit_shadows_to`` set another),
        so a pixel picks its cascade by the depth the splits were cut on."""
        cam = self.shadow_camera
        row = (view if cam is None else cam.view())[2]
        return [-float(v) for v in row]

    def _update_frustum_lines(self, view_proj, aspect) -> None:
        if self.cull_camera is None or not self.show_frustum:
            self._frustum = None
            return
        frozen = self.cull_camera.proj(aspect) @ self.cull_camera.view()
        self._frustum = (np.linalg.inv(frozen.astype(np.float64)), view_proj)

    def frustum_lines(self, formats: tuple[str, ...]) -> FrustumLines | None:
        """The frozen culling frustum's lines for a pass with colour attachments of
        ``formats`` (the first drawn into), while frozen (``Main.Late`` draws them last),
        else None."""
        if self._frustum is None:
            return None
        lines = self._lines.get(formats)
        if lines is None:
            lines = self._lines[formats] = FrustumLines(
                self.device, formats[0], DEPTH_FORMAT, extra_formats=formats[1:]
            )
        lines.set_frustum(self._frustum[0])
        lines.set_view(self._frustum[1])
        return lines

    def _fit_sun(self, view_proj, aspect: float):
        """The cascades fitted to the rendering camera's ``view_proj`` (unjittered), or to
        ``shadow_camera``'s at the same ``aspect`` (``fit_shadows_to``)."""
        s, cam = self.settings, self.shadow_camera
        if cam is not None:
            view_proj = cam.proj(aspect) @ cam.view()
        return self.res.shadow.fit(view_proj, self.scene, s.shadow_radius, cascades=s.cascades,
                                   lam=s.cascade_lambda, snap=s.shadow_snap)  # fmt: skip

    def fit_shadows_to(self, camera) -> None:
        """Fit the shadow cascades to ``camera`` (an ``engine.scene.camera.Camera``) while
        rendering from the frame's camera; None: to the rendering camera again. The hook the
        shimmer measure uses (``engine.devtools.shimmer``: the picture's camera fixed, only
        the fitted one moving) and a way to look at one camera's cascades from elsewhere
        (the ``cascades`` debug view, ``lines``), as ``freeze_culling`` does for the cull."""
        self.shadow_camera = self.res.shadow_camera = camera

    def _cull_bytes(self, size, aspect, fit, view, proj) -> bytes:
        """The cull uniform; ``view`` and ``proj`` (jittered) are the rendering camera's,
        used unless culling is frozen at another camera (then without jitter)."""
        s, frozen = self.settings, self.frozen
        at = None if self._warming else self.cull_camera  # warming: an ordinary frame
        cam = at or self.camera
        jitter = self.res.jitter if at is None else (0.0, 0.0)
        if at is not None:
            view, proj = cam.view(), cam.proj(aspect)
        flags = 0
        pyramid = (frozen.base, frozen.levels) if frozen.active else None
        if s.cull:
            flags |= FLAG_CULL
            if s.occlusion:
                flags |= FLAG_TWO_PHASE
                if at is None or pyramid is not None:
                    flags |= FLAG_OCCLUSION
        if self.res.cull.reset:
            flags |= FLAG_RESET
        return cull_uniform(
            view=view,
            planes=frustum_planes(proj @ view),
            light_planes=[c.planes for c in fit.cascades],
            eye=cam.eye,
            p00=float(proj[0, 0]),
            p11=float(proj[1, 1]),
            near=float(cam.near),
            screen=size,
            pyramid=pyramid[0] if pyramid else self.pyramid.base,
            levels=pyramid[1] if pyramid else self.pyramid.levels,
            count=self.gs.count,
            flags=flags,
            batches=self.gs.batch_count,
            region_slots=self.gs.region_slots,
            lod_base_px=s.lod_base_px * size[1] / 720.0,
            jitter=jitter,
        )

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
        rpass.set_pipeline(self.res.mesh.ids())
        self.res.bind_geometry(rpass)
        rpass.set_bind_group(2, self.res.material_group)
        for r in regions:
            self.gs.draw(rpass, r, 1, self.res.draw_group)
        rpass.end()
