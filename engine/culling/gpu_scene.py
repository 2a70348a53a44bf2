"""The scene on the GPU: instance arrays in storage buffers, one shared vertex/index buffer,
and the batch tables that turn cull results into indexed indirect draws.

Draw groups: instances are grouped by (pipeline class, shadow casting, mesh), the pipeline
class being their material's (alpha mode, double-sided) pair (``Material.pipeline_class``) and
shadow casting its ``casts_shadows``; the cull sees each group as a mesh of its own
(``mesh_ids`` holds the group per instance), so its batches are (mesh, LOD, pipeline) and each
pipeline's batches are one contiguous range (``class_ranges``): a pass sets a pipeline and
draws its range with one multi-draw. A group of non-casters is never emitted into a shadow
region (its batches there draw nothing).

Buffers (N instances, B batches = one per (group, LOD), T remap slots per region):

* ``transforms`` ``(N, 4, 4)`` float32, column-major per WGSL ``mat4x4f`` (64 B/row);
  ``prev_transforms`` the same as they were last frame (motion vectors)
* ``bounds`` ``(N, 4)`` float32 world spheres (centre, radius) from ``Scene.bounds()``
* ``mesh_ids`` ``(N,)`` uint32 draw group per instance, ``colors`` ``(N, 4)`` float32 linear RGBA
* ``vertices`` (position, normal: 24 B) and ``attributes`` (tangent, uv0, uv1: 32 B) per vertex
* ``meshes``: per group ``(first_batch, lod_count | no_shadow << 8, remap_base, capacity)``
  uint32
* ``args``: R regions (early, late, then one per shadow cascade: ``regions``) x B indexed
  indirect draws of 20 bytes ``(index_count, instance_count, first_index, base_vertex,
  first_instance)``; ``args_template`` is the same with ``instance_count = 0``, copied over
  ``args`` by ``Cull.Reset``
* ``remap``: R regions of T uint32 scene rows; LOD batch ``l`` of mesh ``m`` owns
  ``capacity[m]`` slots (every instance of the mesh fits in any one of its LODs), so T <= 4 N.
* ``draw_uniform``: one 256-byte ``Draw`` entry ``(remap base, cascade)`` per region (per
  (region, batch) without ``indirect-first-instance``), bound with a dynamic offset.

The region count follows the frame's cascades (``set_cascades``): a change makes new
``args``, ``remap`` and ``draw_uniform`` buffers (bind groups and bundles over them are keyed
on the buffer objects), so one cascade costs what the single shadow map did.

Only row ranges from ``scene.take_dirty()`` are re-uploaded (``upload_dirty``): per-frame CPU
cost follows the number of changed rows, not N. New transforms go to a staging buffer and
reach ``transforms`` in the frame's own commands (``record_moves``, from ``Cull.Reset``),
right after the rows they replace were copied to ``prev_transforms``: the previous transform
of every instance stays on the GPU at the cost of the rows that moved (a row moved last
frame but not in this one gets its current transform as its previous).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import wgpu

from engine.materials.model import CLASS_NAMES, AlphaMode

BASE_REGIONS = ("early", "late")  # then "shadow.c0", "shadow.c1", ...: one per cascade
ARGS_STRIDE = 20  # bytes of one indexed indirect draw
DRAW_UNIFORM_STRIDE = 256  # dynamic-offset alignment of the per-batch Draw uniform

_STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST


@dataclass(frozen=True)
class Batch:
    """One (mesh, LOD, pipeline class) indexed draw: counts in indices, offsets in elements."""

    mesh: int
    lod: int
    index_count: int
    first_index: int
    base_vertex: int
    pipeline_class: int = 0
    casts_shadows: bool = True


class GpuScene:
    """Upload a ``Scene`` (engine.scene.scene.Scene API) and keep it current.

    Args:
        device: the ``wgpu.GPUDevice``.
        scene: the scene; its meshes and mesh ids are fixed, transforms may change.
        first_instance: True when the device has ``indirect-first-instance``; False selects
            the fallback where ``first_instance`` is 0 and a dynamic-offset uniform carries
            each batch's remap base.
        cascades: shadow cascades, each a cull region of its own (``set_cascades``).

    Raises:
        ValueError: a scene without meshes or instances.
    """

    def __init__(self, device: wgpu.GPUDevice, scene, *, first_instance: bool, cascades: int = 1):
        if not scene.meshes:
            raise ValueError("scene has no meshes: add at least one mesh")
        if scene.count < 1:
            raise ValueError("scene has no instances: add at least one instance")
        self.device = device
        self.scene = scene
        self.count = scene.count
        self.first_instance = first_instance
        self._labels: list[str] | None = None
        self._groups()
        self._geometry()
        self._tables()
        self._regions(cascades)
        self._instances()

    # -- draw groups: (pipeline class, mesh) pairs in use, sorted by class -----------------
    def _groups(self) -> None:
        s, nm = self.scene, len(self.scene.meshes)
        cls = np.array([m.pipeline_class for m in s.materials], np.int64)[s.material_ids]
        quiet = np.array([not m.casts_shadows for m in s.materials], np.int64)[s.material_ids]
        keys, inverse = np.unique((cls * 2 + quiet) * nm + s.mesh_ids, return_inverse=True)
        #: (class, mesh, casts shadows) per group, in class order
        self.groups = [(int(k // nm // 2), int(k % nm), k // nm % 2 == 0) for k in keys]
        self.draw_ids = inverse.reshape(-1).astype(np.uint32)
        #: scene rows of BLEND instances (the Transparent pass sorts them)
        self.blend_rows = np.flatnonzero(cls >= 2 * AlphaMode.BLEND).astype(np.uint32)

    # -- geometry: every LOD of every mesh in one vertex and one index buffer ---------------
    def _geometry(self) -> None:
        verts, attrs, idx, placed = [], [], [], {}
        nv = ni = 0
        for m, mesh in enumerate(self.scene.meshes):
            for lod_i, lod in enumerate(mesh.lods):
                placed[m, lod_i] = (len(lod.indices), ni, nv)
                verts.append(np.asarray(lod.vertices, np.float32))
                attrs.append(lod.attributes())
                idx.append(np.asarray(lod.indices, np.uint32))
                nv += len(lod.vertices)
                ni += len(lod.indices)
        self.batches, self.group_first_batch = [], []
        self.first_batch = [0] * len(self.scene.meshes)  # per scene mesh: its first group's
        seen = set()
        for c, m, casts in self.groups:
            self.group_first_batch.append(len(self.batches))
            if m not in seen:
                self.first_batch[m] = len(self.batches)
                seen.add(m)
            for lod_i in range(len(self.scene.meshes[m].lods)):
                self.batches.append(Batch(m, lod_i, *placed[m, lod_i], c, casts))
        self.class_ranges = {}
        for b, bt in enumerate(self.batches):
            lo, _ = self.class_ranges.get(bt.pipeline_class, (b, b))
            self.class_ranges[bt.pipeline_class] = (lo, b + 1)
        d = self.device
        self.vertices = d.create_buffer_with_data(
            label="scene vertices", data=np.concatenate(verts).tobytes(), usage="VERTEX"
        )
        self.attributes = d.create_buffer_with_data(
            label="scene vertex attributes", data=np.concatenate(attrs).tobytes(), usage="VERTEX"
        )
        self.indices = d.create_buffer_with_data(
            label="scene indices", data=np.concatenate(idx).tobytes(), usage="INDEX"
        )

    def batch_range(self, classes) -> tuple[int, int] | None:
        """``(first, stop)`` batches of the pipeline ``classes`` (contiguous: they must be
        neighbours in class order), or None when no instance has them."""
        spans = [self.class_ranges[c] for c in classes if c in self.class_ranges]
        if not spans:
            return None
        return min(a for a, _ in spans), max(b for _, b in spans)

    # -- batch tables, indirect args template, remap regions --------------------------------
    def _tables(self) -> None:
        meshes = self.scene.meshes
        lods = np.array([len(meshes[m].lods) for _, m, _ in self.groups], np.int64)
        quiet = np.array([not casts for _, _, casts in self.groups], np.int64)
        cap = np.bincount(self.draw_ids, minlength=len(self.groups)).astype(np.int64)
        base = np.concatenate(([0], np.cumsum(cap * lods)[:-1]))
        self.region_slots = int(max(1, (cap * lods).sum()))  # T
        first = np.array(self.group_first_batch)
        info = np.stack([first, lods | quiet << 8, base, cap], axis=1).astype(np.uint32)
        self.mesh_table = self.device.create_buffer_with_data(
            label="cull meshes", data=info.tobytes(), usage="STORAGE"
        )
        self._lods, self._cap, self._base = lods, cap, base

    def _regions(self, cascades: int) -> None:
        """The per-region buffers for early, late and ``cascades`` shadow regions."""
        lods, cap, base = self._lods, self._cap, self._base
        self.cascades = cascades
        self.regions = (*BASE_REGIONS, *(f"shadow.c{c}" for c in range(cascades)))
        nr, nb = len(self.regions), len(self.batches)
        bases = np.zeros((nr, nb), np.uint32)  # remap index of each batch's slot 0
        template = np.zeros((nr, nb, 5), np.uint32)
        group_of = np.repeat(np.arange(len(self.groups)), lods)  # batch -> group
        for r in range(nr):
            for b, bt in enumerate(self.batches):
                g = group_of[b]
                bases[r, b] = r * self.region_slots + base[g] + bt.lod * cap[g]
                template[r, b] = (bt.index_count, 0, bt.first_index, bt.base_vertex, 0)
        if self.first_instance:
            template[:, :, 4] = bases
        self.batch_bases = bases
        self.args_template = self.device.create_buffer_with_data(
            label="cull args template", data=template.tobytes(), usage="COPY_SRC"
        )
        self.args = self.device.create_buffer(
            label="cull args",
            size=template.nbytes,
            usage=wgpu.BufferUsage.INDIRECT | _STORAGE | wgpu.BufferUsage.COPY_SRC,
        )
        self.remap = self.device.create_buffer(
            label="cull remap",
            size=nr * self.region_slots * 4,
            usage=_STORAGE | wgpu.BufferUsage.COPY_SRC,
        )
        # Draw uniform: (remap base, cascade) per region, or per (region, batch) in the
        # fallback (the base there); the shadow regions' cascade picks the light's matrix.
        cascade = np.maximum(np.arange(nr) - len(BASE_REGIONS), 0).astype(np.uint32)
        if self.first_instance:
            entries, of = np.zeros(nr, np.uint32), cascade
        else:
            entries, of = bases.reshape(-1), np.repeat(cascade, nb)
        draw = np.zeros((len(entries), DRAW_UNIFORM_STRIDE // 4), np.uint32)
        draw[:, 0], draw[:, 1] = entries, of
        self.draw_uniform = self.device.create_buffer_with_data(
            label="draw bases", data=draw.tobytes(), usage="UNIFORM"
        )

    def set_cascades(self, cascades: int) -> bool:
        """Give the shadow ``cascades`` a cull region each; returns True when that made new
        ``args``, ``remap`` and ``draw_uniform`` buffers (what binds them must bind anew)."""
        if cascades == self.cascades:
            return False
        self._regions(cascades)
        return True

    def shadow_region(self, cascade: int) -> int:
        """The region index of ``cascade``'s casters."""
        return len(BASE_REGIONS) + cascade

    @property
    def batch_count(self) -> int:
        return len(self.batches)

    # -- instance arrays --------------------------------------------------------------------
    def _instances(self) -> None:
        n, d = self.count, self.device
        copy = _STORAGE | wgpu.BufferUsage.COPY_SRC
        self.transforms = d.create_buffer(label="transforms", size=n * 64, usage=copy)
        self.prev_transforms = d.create_buffer(label="prev transforms", size=n * 64, usage=copy)
        self._staging = d.create_buffer(
            label="new transforms",
            size=n * 64,
            usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST,
        )
        self._moved: list[tuple[int, int]] = []  # uploaded to staging, not yet in transforms
        self._moved_last: list[tuple[int, int]] = []  # moved in the last recorded frame
        self.bounds = d.create_buffer(
            label="bounds", size=n * 16, usage=_STORAGE | wgpu.BufferUsage.COPY_SRC
        )
        self.mesh_ids = d.create_buffer_with_data(
            label="draw group ids", data=self.draw_ids.tobytes(), usage="STORAGE"
        )
        self.colors = d.create_buffer_with_data(
            label="colors",
            data=np.ascontiguousarray(self.scene.colors, np.float32).tobytes(),
            usage="STORAGE",
        )
        # Per instance: cull class | lod << 2 (last frame's visibility lives here).
        self.state = d.create_buffer(
            label="cull state", size=n * 4, usage=_STORAGE | wgpu.BufferUsage.COPY_SRC
        )
        self.scene.take_dirty()  # everything is uploaded now, whoever consumed the dirt before
        for buffer in (self.transforms, self.prev_transforms):
            self._write_rows(0, n, buffer)

    def _write_rows(self, start: int, stop: int, transforms: wgpu.GPUBuffer) -> None:
        q, s = self.device.queue, self.scene
        t = np.ascontiguousarray(s.transforms[start:stop].transpose(0, 2, 1), np.float32)
        q.write_buffer(transforms, start * 64, t)
        q.write_buffer(self.bounds, start * 16, np.ascontiguousarray(s.bounds()[start:stop]))

    def upload_dirty(self) -> int:
        """Write the rows changed since the last call (bounds at once, transforms to staging
        until ``record_moves``); return how many rows were written."""
        rows = 0
        for start, stop in self.scene.take_dirty():
            self._write_rows(start, stop, self._staging)
            self._moved.append((start, stop))
            rows += stop - start
        return rows

    def record_moves(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """Record, first in the frame: the rows that move now or moved last frame copied
        from ``transforms`` to ``prev_transforms``, then the new rows from staging into
        ``transforms``. Nothing when nothing moved in either frame."""
        moved = self._moved
        if not moved and not self._moved_last:
            return
        for start, stop in _merged(moved + self._moved_last):
            size = (stop - start) * 64
            encoder.copy_buffer_to_buffer(
                self.transforms, start * 64, self.prev_transforms, start * 64, size
            )
        for start, stop in moved:
            size = (stop - start) * 64
            encoder.copy_buffer_to_buffer(
                self._staging, start * 64, self.transforms, start * 64, size
            )
        self._moved_last, self._moved = moved, []

    def reset_args(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """Record the copy of the args template (instance counts 0) over ``args``."""
        encoder.copy_buffer_to_buffer(self.args_template, 0, self.args, 0, self.args.size)

    @property
    def batch_labels(self) -> list[str]:
        """``"<mesh name> LOD<l>"`` per batch: what per-draw timing shows under a pass."""
        meshes = self.scene.meshes
        return [
            f"{meshes[b.mesh].name} LOD{b.lod}"
            + (f" {CLASS_NAMES[b.pipeline_class]}" if b.pipeline_class else "")
            + ("" if b.casts_shadows else " no shadow")
            for b in self.batches
        ]

    def draw(
        self,
        rpass,
        region: int,
        draw_group: int,
        bind_group,
        batches: tuple[int, int] | None = None,
        label: str = "",
        alone: bool = True,
    ) -> None:
        """Record the indexed indirect draws of ``region`` (0 early, 1 late, 2 + c shadow
        cascade c),
        batches ``batches`` (``(first, stop)``; default all B): one multi-draw with
        ``indirect-first-instance`` (one draw per batch into a render bundle encoder, which
        has no multi-draw), else one draw per batch. When the pass encoder times draws
        (``--gpu-profile draws``: ``rpass.timing_draws``), always one labelled draw per
        batch, so that each (mesh, LOD, pipeline) batch gets its own time; ``label``
        prefixes those labels (``"depth "``: the depth prepass's draws of the same batches);
        ``alone=False``: the draws mean nothing replayed alone (``TimedPass.draw_label``)."""
        nb = self.batch_count
        first, stop = batches if batches is not None else (0, nb)
        if stop <= first:
            return
        timing = getattr(rpass, "timing_draws", False)
        if timing:
            self._draw_labelled(rpass, region, draw_group, bind_group, first, stop, label, alone)
            return
        bundle = isinstance(rpass, wgpu.GPURenderBundleEncoder)  # no multi-draw in bundles
        if self.first_instance and not bundle:
            from wgpu.backends.wgpu_native.extras import multi_draw_indexed_indirect

            rpass.set_bind_group(draw_group, bind_group, [region * DRAW_UNIFORM_STRIDE])
            multi_draw_indexed_indirect(
                rpass, self.args, offset=(region * nb + first) * ARGS_STRIDE, count=stop - first
            )
            return
        if self.first_instance:
            rpass.set_bind_group(draw_group, bind_group, [region * DRAW_UNIFORM_STRIDE])
        for b in range(first, stop):
            k = region * nb + b
            if not self.first_instance:
                rpass.set_bind_group(draw_group, bind_group, [k * DRAW_UNIFORM_STRIDE])
            rpass.draw_indexed_indirect(self.args, k * ARGS_STRIDE)

    def _draw_labelled(self, rpass, region, draw_group, bind_group, first, stop, prefix,
                       alone):  # fmt: skip
        nb = self.batch_count
        if self._labels is None:
            self._labels = self.batch_labels
        if self.first_instance:
            rpass.set_bind_group(draw_group, bind_group, [region * DRAW_UNIFORM_STRIDE])
        for b in range(first, stop):
            k = region * nb + b
            if not self.first_instance:
                rpass.set_bind_group(draw_group, bind_group, [k * DRAW_UNIFORM_STRIDE])
            rpass.draw_label(prefix + self._labels[b], alone=alone)
            rpass.draw_indexed_indirect(self.args, k * ARGS_STRIDE)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Row ranges ``[start, stop)`` sorted, with overlapping and touching ones joined."""
    out: list[list[int]] = []
    for start, stop in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], stop)
        else:
            out.append([start, stop])
    return [(a, b) for a, b in out]
