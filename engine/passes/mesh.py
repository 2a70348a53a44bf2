"""Pipelines that draw the scene's instances through the cull's indirect args and remap list.

Bind groups: 0 = view uniform + transforms + colours + remap + last frame's transforms
(vertex/fragment), 1 = the
per-batch ``Draw`` uniform (dynamic offset; the remap base when ``indirect-first-instance`` is
missing), 2 = the materials (``engine.materials.gpu``: material ids and table, shading
uniform, texture arrays, samplers), 3 = the shadow map array (one layer per cascade) +
comparison sampler (colour pipelines only, so the Shadow passes can render into the map
without also binding it).

Pipelines by material class (``Material.pipeline_class``: alpha mode x double-sided): OPAQUE
and MASK each single- and double-sided (back-face culling on or off), MASK with an alpha
test (a separate pipeline so OPAQUE keeps early depth testing); BLEND in one pipeline
without culling (the Transparent pass; single-sided back faces are discarded in the shader);
the shadow map's opaque casters depth-only, its MASK casters alpha-tested.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import wgpu

from engine.graph import RenderPass
from engine.lights.gpu import light_layout
from engine.materials.gpu import material_layout
from engine.materials.model import AlphaMode
from engine.passes.bundles import BundleCache
from engine.passes.lights import light_reads
from engine.passes.resources import (
    ALBEDO,
    AMBIENT,
    DEPTH,
    DEPTH_FORMAT,
    DRAW_INPUTS,
    FRAME_TARGETS,
    MOTION,
    NORMALS,
    SHADOW_FORMAT,
    SHADOW_MAP,
)
from engine.scene.meshes import ATTRIBUTE_LAYOUT, VERTEX_LAYOUT
from engine.shader_registry import shader_pipeline

if TYPE_CHECKING:
    from engine.passes.resources import FrameResources


_V, _F = wgpu.ShaderStage.VERTEX, wgpu.ShaderStage.FRAGMENT
_OUT_DEFINE = {
    NORMALS: "OUT_NORMALS",
    MOTION: "OUT_MOTION",
    AMBIENT: "OUT_AMBIENT",
    ALBEDO: "OUT_ALBEDO",
}
#: Classes the Main passes draw, in batch order (BLEND is the Transparent pass's).
OPAQUE_CLASSES = (0, 1, 2, 3)
BLEND_CLASSES = (4, 5)
_ALPHA_BLEND = {
    "color": {"src_factor": "src-alpha", "dst_factor": "one-minus-src-alpha", "operation": "add"},
    "alpha": {"src_factor": "one", "dst_factor": "one-minus-src-alpha", "operation": "add"},
}


class _FollowingShader:
    """``MeshPipelines.technique_shader``: one ``shader_pipeline`` per set of the scene's
    defines, picked by the set of now."""

    def __init__(self, mesh: MeshPipelines, path, make, label: str, defines: dict):
        self._mesh, self._args, self._by_set = mesh, (path, make, label, defines), {}
        self.get()

    def get(self) -> wgpu.GPURenderPipeline:
        key = self._mesh._tex
        if key not in self._by_set:
            path, make, label, extra = self._args
            self._by_set[key] = shader_pipeline(self._mesh.device, path, make, label=label,
                                                defines={**dict(key), **extra})  # fmt: skip
        return self._by_set[key].get()


class MeshPipelines:
    """Main (any colour format, per material class), Transparent, shadow (depth only, plus
    alpha-tested) and ID (``r32uint``) pipelines.

    Args:
        device: the ``wgpu.GPUDevice``.
        textures: material.wgsl's defines for the scene's textures
            (``GpuMaterials.shader_defines``); ``set_textures`` changes them.
    """

    def __init__(self, device: wgpu.GPUDevice, textures: dict | None = None):
        self.device = device
        self._textures, self._lights = dict(textures or {}), False
        self._tex = self._defines()
        self._made: dict[tuple, wgpu.GPURenderPipeline] = {}
        ro = {"type": "read-only-storage"}
        self.layout_view = device.create_bind_group_layout(
            label="mesh view",
            entries=[
                {"binding": 0, "visibility": _V | _F, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": _V, "buffer": ro},
                {"binding": 2, "visibility": _V, "buffer": ro},
                {"binding": 3, "visibility": _V, "buffer": ro},
                {"binding": 4, "visibility": _V, "buffer": ro},
            ],
        )
        self.layout_draw = device.create_bind_group_layout(
            label="mesh draw",
            entries=[
                {
                    "binding": 0,
                    "visibility": _V,
                    "buffer": {
                        "type": "uniform",
                        "has_dynamic_offset": True,
                        "min_binding_size": 16,
                    },
                }
            ],
        )
        self.layout_material = material_layout(device)
        self.layout_lights = light_layout(device)  # group 4 of Main and Transparent
        self.layout_shadow = device.create_bind_group_layout(
            label="mesh shadow map",
            entries=[
                {
                    "binding": 0,
                    "visibility": _F,
                    "texture": {"sample_type": "depth", "view_dimension": "2d-array"},
                },
                {"binding": 1, "visibility": _F, "sampler": {"type": "comparison"}},
            ],
        )
        self._shaders: dict[tuple, object] = {}  # per (on-demand outputs, texture defines)
        self.shader = self._variant((), self._tex)  # compiled now: a broken shader fails here
        self.sampler = device.create_sampler(
            label="shadow pcf",
            compare="greater-equal",  # reverse-Z: lit when the receiver is nearer the sun
            mag_filter="linear",
            min_filter="linear",
        )

    @property
    def module(self) -> wgpu.GPUShaderModule:
        return self.shader.get()

    @property
    def texture_defines(self) -> dict[str, bool]:
        """The defines the scene's pipelines are built with now: material.wgsl's textures
        (``GpuMaterials.shader_defines``) and ``LOCAL_LIGHTS``: a technique's own WGSL that
        includes ``mesh.wgsl`` is built with them by ``technique_shader``, to sample the same
        textures and shade the same lights as they change."""
        return dict(self._tex)

    def technique_shader(self, path, make, *, label: str = "", defines: dict | None = None):
        """A technique's own ``shader_pipeline`` over ``mesh.wgsl`` that follows the scene's
        defines (``texture_defines``: the ``textures`` knob, local lights on or off) as the
        frame's pipelines do: ``get()`` returns ``make(module)``'s pipeline for the defines
        of now, built once per set (a hot reload rebuilds each). ``defines``: the
        technique's own, added to them. Built for the current set now (a broken shader
        fails here)."""
        return _FollowingShader(self, path, make, label, dict(defines or {}))

    def set_textures(self, textures: dict) -> None:
        """Build pipelines from now on for the texture defines ``textures`` (the
        ``textures`` knob switched; pipelines of both sets stay cached)."""
        self._textures = dict(textures)
        self._tex = self._defines()
        self.shader = self._variant((), self._tex)

    def set_lights(self, on: bool) -> None:
        """Build the lit pipelines with the local lights' shading (``LOCAL_LIGHTS``) or
        without it (a scene with none: the sun-only frame does not pay the loop's
        registers); both variants stay cached, so switching is a lookup."""
        if on != self._lights:
            self._lights = on
            self._tex = self._defines()
            self.shader = self._variant((), self._tex)

    def _defines(self) -> tuple:
        return tuple(sorted({**self._textures, "LOCAL_LIGHTS": self._lights}.items()))

    def _variant(self, outputs: tuple[str, ...], tex: tuple):
        """mesh.wgsl built with the on-demand ``outputs`` (``FRAME_TARGETS`` names) at
        locations 1, 2, ... in that order, and the texture defines ``tex``."""
        key = (outputs, tex)
        if key not in self._shaders:
            defines = {**dict(tex), **{_OUT_DEFINE[n]: i for i, n in enumerate(outputs, 1)}}
            self._shaders[key] = shader_pipeline(
                self.device, "mesh.wgsl", lambda m: self._rebuild(m, key), defines=defines
            )
        return self._shaders[key]

    def _rebuild(self, module: wgpu.GPUShaderModule, variant: tuple) -> wgpu.GPUShaderModule:
        """Hot reload: every pipeline made so far from ``variant`` (outputs, texture
        defines) again from ``module`` (explicit layouts: the bind groups stay); nothing is
        replaced unless all of them build."""
        self._building = module
        try:
            made = {key: self._make(*key) for key in self._made if key[3:] == variant}
        finally:
            self._building = None
        self._made.update(made)
        return module

    def _get(self, kind: str, fmt: str | None, cls: int, outputs: tuple):
        key = (kind, fmt, cls, outputs, self._tex)
        if key not in self._made:
            self._made[key] = self._make(*key)
        return self._made[key]

    def _make(self, kind: str, fmt: str | None, cls: int, outputs: tuple, tex: tuple):
        v, d, m, sh = self.layout_view, self.layout_draw, self.layout_material, self.layout_shadow
        lit = self.layout_lights
        two_sided = cls % 2 == 1
        mask = cls // 2 == AlphaMode.MASK
        cull = "none" if two_sided else "back"
        # main; main_equal after the depth prepass; depth, the prepass (the Main pass's
        # targets, none written)
        main = {"main": "fs_mask" if mask else "fs_main", "main_equal": "fs_main",
                "depth": "fs_alpha_test" if mask else "fs_depth"}  # fmt: skip
        if kind in main:
            label = " ".join(("mesh", kind, fmt, f"class {cls}", *outputs))
            return self._pipeline(label, [v, d, m, sh, lit], "vs_main", main[kind], fmt,
                                  DEPTH_FORMAT, cull, outputs=outputs, tex=tex,
                                  equal=kind == "main_equal",
                                  write_mask=0 if kind == "depth" else None)  # fmt: skip
        if kind == "material_view":  # the material debug views (View.Geometry)
            fs = "fs_material_view_mask" if mask else "fs_material_view"
            label = f"mesh material view class {cls}"
            return self._pipeline(label, [v, d, m, sh], "vs_main", fs, fmt, DEPTH_FORMAT, cull,
                                  tex=tex)  # fmt: skip
        if kind == "blend":
            return self._pipeline(f"mesh blend {fmt}", [v, d, m, sh, lit], "vs_main", "fs_blend",
                                  fmt, DEPTH_FORMAT, "none", blend=True, tex=tex)  # fmt: skip
        if kind == "shadow":  # back faces culled for single-sided casters: half the fill
            return self._pipeline(f"mesh shadow class {cls}", [v, d], "vs_shadow", None, None,
                                  SHADOW_FORMAT, cull, attributes=False, tex=tex)  # fmt: skip
        if kind == "shadow_mask":
            return self._pipeline("mesh shadow mask", [v, d, m], "vs_shadow_mask",
                                  "fs_alpha_test", None, SHADOW_FORMAT, "none",
                                  tex=tex)  # fmt: skip
        return self._pipeline("mesh ids", [v, d, m], "vs_main", "fs_id", "r32uint", DEPTH_FORMAT,
                              tex=tex)  # fmt: skip

    def _pipeline(self, label, layouts, vs, fs, fmt, depth_format, cull_mode="back", *,
                  blend=False, attributes=True, outputs=(), tex=(), equal=False,
                  write_mask=None):  # fmt: skip
        layout = self.device.create_pipeline_layout(bind_group_layouts=layouts)
        module = getattr(self, "_building", None) or self._variant(outputs, tex).get()
        buffers = [VERTEX_LAYOUT, ATTRIBUTE_LAYOUT] if attributes else [VERTEX_LAYOUT]
        desc = {
            "label": label,
            "layout": layout,
            "vertex": {"module": module, "entry_point": vs, "buffers": buffers},
            "primitive": {"topology": "triangle-list", "cull_mode": cull_mode},
            "depth_stencil": {
                "format": depth_format,
                # transparent surfaces are no occluders; after the prepass the depth is final
                "depth_write_enabled": not (blend or equal),
                "depth_compare": "equal" if equal else "greater",  # reverse-Z
            },
        }
        if fs is not None:
            mask = {} if write_mask is None else {"write_mask": write_mask}
            target = {"format": fmt, **mask} if fmt is not None else None
            if blend:
                target["blend"] = _ALPHA_BLEND
            extra = [{"format": FRAME_TARGETS[n][0], **mask} for n in outputs]
            desc["fragment"] = {
                "module": module,
                "entry_point": fs,
                "targets": [target, *extra] if target else [],
            }
        return self.device.create_render_pipeline(**desc)

    def main(self, color_format: str, cls: int = 0, outputs: tuple[str, ...] = (), *,
             after_prepass: bool = False):  # fmt: skip
        """Lit colour pipeline of material class ``cls`` (0..3: OPAQUE / MASK, single / double
        sided) writing linear colour to ``color_format`` (location 0), depth32float, and the
        on-demand targets ``outputs`` (``FRAME_TARGETS`` names, in that order) at 1, 2, ...

        ``after_prepass``: the depth is already final (``depth_prepass``): depth compared
        ``equal`` and not written, so each pixel is shaded once, and MASK needs no alpha
        test (the prepass's, at the same cutoff, decided the depth)."""
        kind = "main_equal" if after_prepass else "main"
        return self._get(kind, color_format, cls, tuple(outputs))

    def depth(self, color_format: str, cls: int = 0, outputs: tuple[str, ...] = ()):
        """The depth prepass's pipeline for material class ``cls`` in a Main pass with
        ``main``'s targets: ``vs_main`` (bit-identical depth: its position is
        ``@invariant``), depth written with ``greater``, no colour written (write mask 0);
        MASK alpha-tested at its cutoff."""
        return self._get("depth", color_format, cls, tuple(outputs))

    def material_view(self, color_format: str, cls: int) -> wgpu.GPURenderPipeline:
        """Writes the material input the shading uniform's view mode picks (debug views)."""
        return self._get("material_view", color_format, cls, ())

    def blend(self, color_format: str) -> wgpu.GPURenderPipeline:
        """The Transparent pass's pipeline: alpha blending, depth tested but not written."""
        return self._get("blend", color_format, 0, ())

    def technique(self, module: wgpu.GPUShaderModule, entry: str, targets: list[dict], *,
                  draw_layout: wgpu.GPUBindGroupLayout | None = None,
                  label: str = "") -> wgpu.GPURenderPipeline:  # fmt: skip
        """A technique's own fragment stage over the scene's vertex stage, for the BLEND
        instances (``TransparentResources.record_draws``): ``module`` includes
        ``mesh.wgsl`` (``vs_main``, ``surface``, ``shade``) and defines fragment ``entry``;
        no face culling (single-sided back faces are the shader's to drop, as ``fs_blend``
        does), depth tested against ``frame.depth`` (reverse-Z ``greater``), never written.

        Args:
            module: the shader module (built by the caller's ``shader_pipeline``: it
                hot-reloads with the caller's file and ``mesh.wgsl``).
            entry: the fragment entry point.
            targets: the fragment's colour target states (``[]``: none, e.g. a shader that
                only writes storage buffers).
            draw_layout: group 1's layout when the technique adds bindings after the
                ``Draw`` uniform (``TransparentResources.draw_binding``); default
                ``layout_draw``.
            label: the pipeline's label.

        Raises:
            wgpu.GPUValidationError: the module does not fit the layouts or targets.
        """
        groups = [self.layout_view, draw_layout or self.layout_draw, self.layout_material,
                  self.layout_shadow, self.layout_lights]  # fmt: skip
        return self.device.create_render_pipeline(
            label=label or f"technique {entry}",
            layout=self.device.create_pipeline_layout(bind_group_layouts=groups),
            vertex={"module": module, "entry_point": "vs_main",
                    "buffers": [VERTEX_LAYOUT, ATTRIBUTE_LAYOUT]},
            primitive={"topology": "triangle-list", "cull_mode": "none"},
            depth_stencil={"format": DEPTH_FORMAT, "depth_write_enabled": False,
                           "depth_compare": "greater"},
            fragment={"module": module, "entry_point": entry, "targets": targets},
        )  # fmt: skip

    def shadow(self, two_sided: bool = False) -> wgpu.GPURenderPipeline:
        """Depth-only pipeline for a cascade of the sun's shadow map; the ``Draw`` uniform's
        ``cascade`` picks the light's matrix. Single-sided casters cull their back faces,
        as the Main passes do: for a closed mesh the faces toward the sun are the nearest to
        it anyway, so the map is the same at half the fill (a 2048² map is fill-bound: 2.1
        ms on an H200 with both sides drawn). ``two_sided``: glTF ``doubleSided`` opaque
        casters, both sides drawn."""
        return self._get("shadow", None, 1 if two_sided else 0, ())

    def shadow_mask(self) -> wgpu.GPURenderPipeline:
        """The shadow map's MASK casters: alpha-tested at their material's cutoff."""
        return self._get("shadow_mask", None, 0, ())

    def ids(self) -> wgpu.GPURenderPipeline:
        """Writes the scene row of each instance to an ``r32uint`` target (debug, tests)."""
        return self._get("ids", "r32uint", 0, ())

    def view_group(self, view_uniform, gs, remap=None) -> wgpu.GPUBindGroup:
        """Group 0 over ``gs``'s buffers; ``remap``: another remap list (the Transparent
        pass's sorted one) instead of the cull's."""
        return self.device.create_bind_group(
            label="mesh view",
            layout=self.layout_view,
            entries=[
                {"binding": 0, "resource": {"buffer": view_uniform}},
                {"binding": 1, "resource": {"buffer": gs.transforms}},
                {"binding": 2, "resource": {"buffer": gs.colors}},
                {"binding": 3, "resource": {"buffer": remap or gs.remap}},
                {"binding": 4, "resource": {"buffer": gs.prev_transforms}},
            ],
        )

    def draw_group(self, gs) -> wgpu.GPUBindGroup:
        return self.device.create_bind_group(
            label="mesh draw",
            layout=self.layout_draw,
            entries=[{"binding": 0, "resource": {"buffer": gs.draw_uniform, "size": 16}}],
        )

    def shadow_group(self, shadow_view) -> wgpu.GPUBindGroup:
        return self.device.create_bind_group(
            label="mesh shadow map",
            layout=self.layout_shadow,
            entries=[
                {"binding": 0, "resource": shadow_view},
                {"binding": 1, "resource": self.sampler},
            ],
        )


# -- the standard frame's main passes --------------------------------------------------------
class MainPass(RenderPass):
    """``Main.Early`` (region 0: last frame's visible set; clears colour and depth) or
    ``Main.Late`` (region 1: the newly visible; loads them, or clears in one-phase mode).
    Lit colour into the HDR target (the output without post), reverse-Z ``depth32float``
    compared with ``greater``; and, while some pass reads them, the on-demand targets
    (``FRAME_TARGETS``: normals, motion, ambient), cleared to the sky's values.

    The pass that clears starts with a depth prepass (the ``depth_prepass`` knob): the same
    draws with depth only, then the shading pipelines with depth ``equal``, so a pixel is
    shaded once however many instances cover it (the city at street level covers each pixel
    about six times: the cull's instance order is no front-to-back order).

    Args:
        res: the frame's ``FrameResources``; ``name``: ``"Main.Early"`` or ``"Main.Late"``.
    """

    def __init__(self, res: FrameResources, name: str):
        super().__init__(name)
        self.res, self.early = res, name == "Main.Early"
        self.region = 0 if self.early else 1
        self.bundles = BundleCache(res.device, name)

    on_demand = tuple(FRAME_TARGETS)

    def enabled_by(self, settings) -> bool:
        return (settings.cull and settings.occlusion) if self.early else True

    def _clears(self) -> bool:
        s = self.res.settings
        return self.early or not (s.cull and s.occlusion)

    @property
    def reads(self) -> tuple[str, ...]:
        r = DRAW_INPUTS + light_reads(self.res)
        if self.res.settings.shadows:
            r += (SHADOW_MAP,)
        if not self._clears():
            r += (DEPTH, self.res.color_name(), *self.res.frame_outputs())
        return r

    @property
    def writes(self) -> tuple[str, ...]:
        return (DEPTH, self.res.color_name(), *self.res.frame_outputs())

    def targets(self, ctx) -> dict:
        op = "clear" if self._clears() else "load"
        view, _ = self.res.color_target(ctx)
        g = self.res.graph
        skip = self._sky_overwrites if op == "clear" else lambda name: False
        extra = [
            {
                "view": g.view(n),
                "clear_value": FRAME_TARGETS[n][1],
                "load_op": "load" if n == MOTION and skip(n) else op,
                "store_op": "store",
            }
            for n in self.res.frame_outputs()
        ]
        return {
            "color_attachments": [
                {
                    "view": view,
                    "clear_value": self.res.sky_clear,
                    "load_op": "load" if skip(self.res.color_name()) else op,
                    "store_op": "store",
                },
                *extra,
            ],
            "depth_stencil_attachment": {
                "view": self.res.graph.view(DEPTH),
                "depth_clear_value": 0.0,
                "depth_load_op": op,
                "depth_store_op": "store",
            },
        }

    def _sky_overwrites(self, name: str) -> bool:
        """Whether the clear of ``name`` (``frame.hdr``, ``frame.motion``) can be skipped.
        With the post chain, Sky writes both wherever the depth is still 0 and the Main
        passes write every other pixel, and clears are not free (on the H200 at 1080p an
        empty Main.Early took 0.62 ms clearing hdr, motion and depth, 0.18 ms without the
        two); not while a snapshot shows them before Sky: then no pixel may hold last
        frame's."""
        return self.res.settings.post and not self.res.graph.snapshotted(name)

    def prepass(self) -> bool:
        """Whether this pass starts with the depth prepass: the ``depth_prepass`` knob, in
        the pass that clears (the bulk of the frame; ``Main.Late`` adds the few newly
        visible instances over a final-enough depth)."""
        return self.res.settings.depth_prepass and self._clears()

    def record(self, ctx, rpass) -> None:
        r = self.res
        _, fmt = r.color_target(ctx)  # hot reload replaces the pipelines: a new key, a bundle
        outputs, prepass = r.frame_outputs(), self.prepass()
        spans = [(c, s) for c in OPAQUE_CLASSES if (s := r.gs.class_ranges.get(c)) is not None]
        depth = [(r.mesh.depth(fmt, c, outputs), s) for c, s in spans] if prepass else []
        pipes = [(r.mesh.main(fmt, c, outputs, after_prepass=prepass), s) for c, s in spans]

        def commands(enc) -> None:
            r.bind_geometry(enc)
            enc.set_bind_group(2, r.material_group)
            enc.set_bind_group(3, r.shadow.group)
            enc.set_bind_group(4, r.lights.group)
            for p, span in depth:  # the depth first: each pixel is then shaded once
                enc.set_pipeline(p)
                r.gs.draw(enc, self.region, 1, r.draw_group, span, label="depth ")
            for p, span in pipes:  # one pipeline per material class, its batches in one go
                enc.set_pipeline(p)
                r.gs.draw(enc, self.region, 1, r.draw_group, span, alone=not prepass)

        key = (*(p for p, _ in depth + pipes), r.material_group, r.shadow.group,
               r.lights.group, *r.geometry_key())  # fmt: skip
        formats = (fmt, *(FRAME_TARGETS[n][0] for n in outputs))
        self.bundles.record(rpass, key, commands, color_formats=formats, depth_format=DEPTH_FORMAT)
        lines = None if self.early else r.frustum_lines(formats)
        if lines is not None:  # F2: the frozen culling frustum, over the last main pass
            lines.record(ctx, rpass)
