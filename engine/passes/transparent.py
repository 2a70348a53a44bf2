"""BLEND materials: ``Transparent.Sort`` orders the visible BLEND instances back to front on
the GPU and ``Transparent`` draws them over the opaque frame and the sky.

``Transparent.Sort`` (compute): after ``Cull.Late`` has classified every instance (BLEND ones
are culled like the rest: frustum, sub-pixel, Hi-Z), one thread per BLEND instance writes its
sort key (distance from the eye to its bounding sphere's centre; 0 when culled),
``engine.gpu_sort`` sorts them descending, and one thread per slot writes an indexed indirect
draw (the instance's mesh and the LOD the cull chose; instance count 0 for culled ones) and
the slot's scene row. ``Transparent`` (render) draws those K draws in order with alpha
blending, depth tested against the opaque depth but not written: BLEND instances are no
occluders (the Main passes, so the Hi-Z pyramid, never draw them), write no normals, motion or
AO inputs, and cast no shadow; they are lit and shadowed like the rest. Per-instance order is
exact for non-intersecting convex instances; their own triangles are not sorted.

The CPU records the same commands every frame (a render bundle of K draws, the sort's fixed
dispatch list): K is the scene's BLEND instance count.

A technique that draws the BLEND instances its own way (order-independent transparency: a
weighted accumulation, per-pixel lists) replaces ``Transparent`` with a pass of its own that
records the same K draws with its pipeline through ``TransparentResources.record_draws``
(its WGSL includes ``mesh.wgsl`` for the vertex stage and the material and lighting
functions; ``MeshPipelines.technique`` builds the pipeline).
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.gpu_sort import GpuSort
from engine.graph import ComputePass, RenderPass
from engine.passes.bundles import BundleCache
from engine.passes.lights import light_reads
from engine.passes.resources import (
    DEPTH,
    DEPTH_FORMAT,
    DRAW_INPUTS,
    INSTANCES,
    TRANSPARENT_ORDER,
    VISIBILITY,
)
from engine.shader_registry import compute_pipelines, shader_pipeline

_STORAGE = wgpu.BufferUsage.STORAGE
_WG = 64
_DRAW_STRIDE = 256


class TransparentResources:
    """The BLEND instances' sort and draw buffers (made once per scene).

    Args:
        res: the frame's ``FrameResources`` (``gs`` with ``blend_rows``).

    Attributes:
        count: K, BLEND instances; ``sort``: the ``GpuSort``; ``args``: K indexed indirect
        draws; ``order``: slot -> scene row; ``view_group``: group 0 with ``order`` as remap.
    """

    def __init__(self, res):
        d, gs = res.device, res.gs
        self.device, self.res = d, res
        self.count = len(gs.blend_rows)
        k = max(self.count, 1)
        self.sort = GpuSort(d, k, descending=True)
        self.rows = d.create_buffer_with_data(
            label="blend rows", data=np.append(gs.blend_rows, 0).astype(np.uint32), usage="STORAGE"
        )
        geo = np.array(
            [(b.index_count, b.first_index, b.base_vertex, 0) for b in gs.batches], np.uint32
        )
        self.geometry = d.create_buffer_with_data(
            label="batch geometry", data=geo.tobytes(), usage="STORAGE"
        )
        self.args = d.create_buffer(
            label="blend args", size=20 * k, usage=wgpu.BufferUsage.INDIRECT | _STORAGE
        )
        self.order = d.create_buffer(label="blend order", size=4 * k, usage=_STORAGE)
        params = np.array([self.count, int(gs.first_instance), 0, 0], np.uint32)
        self.params = d.create_buffer_with_data(
            label="blend params", data=params.tobytes(), usage="UNIFORM"
        )
        # Without indirect-first-instance each slot's draw reads its slot from a uniform.
        bases = np.zeros((k if not gs.first_instance else 1, _DRAW_STRIDE // 4), np.uint32)
        bases[:, 0] = np.arange(len(bases))
        self.draw_uniform = d.create_buffer_with_data(
            label="blend draw bases", data=bases.tobytes(), usage="UNIFORM"
        )
        self.draw_group = d.create_bind_group(
            label="blend draw",
            layout=res.mesh.layout_draw,
            entries=[{"binding": 0, "resource": {"buffer": self.draw_uniform, "size": 16}}],
        )
        self.view_group = res.mesh.view_group(res.view_uniform, gs, remap=self.order)

    def draw_binding(self) -> dict:
        """Binding 0 of a group 1 of one's own (``MeshPipelines.layout_draw``'s entry): the
        ``Draw`` uniform ``record_draws`` offsets per slot where ``indirect-first-instance``
        is missing; a technique adds its own bindings after it."""
        return {"binding": 0, "resource": {"buffer": self.draw_uniform, "size": 16}}

    def record_draws(self, enc, pipeline, draw_group=None) -> None:
        """Record the K sorted BLEND draws (``Transparent.Sort``'s indirect args, back to
        front; culled ones draw nothing) with ``pipeline``, a pipeline over the mesh layouts
        (groups 0 to 4; ``MeshPipelines.technique``), into a render pass or bundle encoder.

        Args:
            enc: the render pass or render bundle encoder.
            pipeline: the ``wgpu.GPURenderPipeline`` to draw with.
            draw_group: group 1 (default: the frame's ``Draw`` uniform alone); one's own
                must have ``draw_binding()`` as its binding 0 (a dynamic offset).
        """
        r, group = self.res, draw_group or self.draw_group
        r.bind_geometry(enc, self.view_group)
        enc.set_bind_group(2, r.material_group)
        enc.set_bind_group(3, r.shadow.group)
        enc.set_bind_group(4, r.lights.group)
        enc.set_pipeline(pipeline)
        first_instance = r.gs.first_instance
        if first_instance:
            enc.set_bind_group(1, group, [0])
        for s in range(self.count):
            if not first_instance:
                enc.set_bind_group(1, group, [s * _DRAW_STRIDE])
            enc.draw_indexed_indirect(self.args, 20 * s)

    def bundle_key(self, *extra) -> tuple:
        """What the draws ``record_draws`` records depend on (the bind groups and vertex
        buffers it sets), plus ``extra`` (the caller's pipeline, its own groups): a render
        bundle cache key that changes whenever the recorded bundle would."""
        r = self.res
        groups = (self.view_group, r.material_group, r.shadow.group, r.lights.group)
        return (*groups, r.gs.vertices, *extra)


class TransparentSortPass(ComputePass):
    """``Transparent.Sort``: keys, GPU sort, indirect draws of the BLEND instances."""

    reads = (INSTANCES, VISIBILITY)
    writes = (TRANSPARENT_ORDER,)

    def __init__(self, res, name: str = "Transparent.Sort"):
        super().__init__(name)
        self.res = res
        d = res.device
        entries = ("blend_keys", "blend_args")
        self.shader = shader_pipeline(
            d, "transparent.wgsl", lambda m: compute_pipelines(d, m, entries, label=name)
        )
        self.shader.on_reload(self._bind)
        self._groups = None

    def enabled_by(self, settings) -> bool:
        return len(self.res.gs.blend_rows) > 0

    def _bind(self) -> None:
        t, gs, r = self.res.transparent, self.res.gs, self.res
        buffers = {0: r.view_uniform, 1: t.params, 2: gs.bounds, 3: gs.state, 4: t.rows,
                   5: t.sort.keys, 6: t.sort.values, 7: gs.mesh_ids, 8: gs.mesh_table,
                   9: t.geometry, 10: t.args, 11: t.order}  # fmt: skip
        used = {"blend_keys": (0, 1, 2, 3, 4, 5, 6), "blend_args": (1, 3, 5, 6, 7, 8, 9, 10, 11)}
        pipes = self.shader.get()
        self._groups = {
            e: r.device.create_bind_group(
                layout=pipes[e].get_bind_group_layout(0),
                entries=[{"binding": b, "resource": {"buffer": buffers[b]}} for b in used[e]],
            )
            for e in used
        }

    def record(self, ctx, cpass) -> None:
        t = self.res.transparent
        if self._groups is None:
            self._bind()
        pipes = self.shader.get()
        cpass.set_pipeline(pipes["blend_keys"])
        cpass.set_bind_group(0, self._groups["blend_keys"])
        cpass.dispatch_workgroups(-(-t.sort.size // _WG), 1, 1)
        t.sort.record(cpass)
        cpass.set_pipeline(pipes["blend_args"])
        cpass.set_bind_group(0, self._groups["blend_args"])
        cpass.dispatch_workgroups(-(-t.count // _WG), 1, 1)


class TransparentPass(RenderPass):
    """``Transparent``: the sorted BLEND instances, alpha-blended into the frame's colour
    (the HDR target, or the output without post), depth tested read-only."""

    def __init__(self, res, name: str = "Transparent"):
        super().__init__(name)
        self.res = res
        self.bundles = BundleCache(res.device, name, depth_read_only=True)

    def enabled_by(self, settings) -> bool:
        return len(self.res.gs.blend_rows) > 0

    @property
    def reads(self) -> tuple[str, ...]:
        return (*DRAW_INPUTS, TRANSPARENT_ORDER, DEPTH, self.res.color_name(),
                *light_reads(self.res, blend=True))  # fmt: skip

    @property
    def writes(self) -> tuple[str, ...]:
        return (self.res.color_name(),)

    def targets(self, ctx) -> dict:
        view, _ = self.res.color_target(ctx)
        return {
            "color_attachments": [{"view": view, "load_op": "load", "store_op": "store"}],
            "depth_stencil_attachment": {
                "view": self.res.graph.view(DEPTH),
                "depth_read_only": True,
            },
        }

    def record(self, ctx, rpass) -> None:
        r, t = self.res, self.res.transparent
        _, fmt = r.color_target(ctx)
        pipe = r.mesh.blend(fmt)

        def commands(enc) -> None:
            t.record_draws(enc, pipe)

        key = t.bundle_key(pipe)
        self.bundles.record(rpass, key, commands, color_formats=(fmt,), depth_format=DEPTH_FORMAT)
