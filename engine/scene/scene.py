"""Scene: meshes with LODs, and instances stored as numpy structure-of-arrays.

Each instance row ``i`` has a model→world transform ``transforms[i]`` ``(4, 4)`` float32 (column
vectors, ``world = M @ [x, y, z, 1]``), a mesh id, a linear RGBA base colour and a world bounding
sphere (derived, cached). The GPU side uploads these arrays once and afterwards only the row
ranges returned by :meth:`Scene.take_dirty`, so per-frame CPU cost follows the number of changed
rows, not the instance count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.lights.model import LightSet
from engine.materials.model import DEFAULT_MATERIAL, Image, Material
from engine.scene.meshes import MeshData

# Largest |coordinate| or radius of a bounding sphere the GPU cull can handle: its squares and
# dot products stay finite in float32 (3 * (2e18)^2 < 3.4e38). A light-year is 9.5e15 m.
MAX_WORLD = 1e18
_MAX_BITS = np.float32(MAX_WORLD).view(np.uint32)  # shaders/cull.wgsl MAX_WORLD_BITS


def usable_spheres(bounds: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: rows of float32 ``bounds`` ``(N, 4)`` (centre, radius) whose four values
    are all within ``±MAX_WORLD``; False for NaN, inf and huge values. Compared on the bit
    patterns, exactly as shaders/cull.wgsl does, so no NaN arithmetic is involved."""
    bits = np.ascontiguousarray(bounds, np.float32).view(np.uint32) & np.uint32(0x7FFFFFFF)
    return (bits <= _MAX_BITS).all(axis=1)


DEFAULT_SUN = (0.35, 0.8, 0.45)  # towards the sun: high, from +X+Z (normalised in Scene)


@dataclass
class Mesh:
    """A mesh with 1..4 levels of detail, all in the same local space.

    Attributes:
        name: shown in logs and debug labels.
        lods: ``lods[0]`` is the finest level; each a :class:`MeshData`.
        center: ``(3,)`` float32 local bounding-sphere centre covering every LOD.
        radius: local bounding-sphere radius (same units as the vertices).
    """

    name: str
    lods: list[MeshData]
    center: np.ndarray
    radius: float

    @classmethod
    def from_lods(cls, name: str, lods: Sequence[MeshData]) -> Mesh:
        """Build a mesh whose bounding sphere (AABB centre, farthest vertex) covers all LODs.

        Raises:
            ValueError: no LOD, more than 4, or an LOD without triangles.
        """
        lods = list(lods)
        if not 1 <= len(lods) <= 4:
            raise ValueError(f"mesh {name!r}: needs 1..4 LODs, got {len(lods)}")
        for i, lod in enumerate(lods):
            if len(lod.indices) == 0 or len(lod.indices) % 3:
                raise ValueError(f"mesh {name!r}: LOD {i} has {len(lod.indices)} indices")
        pos = np.concatenate([lod.vertices[:, :3] for lod in lods]).astype(np.float64)
        center = (pos.min(axis=0) + pos.max(axis=0)) / 2.0
        radius = float(np.linalg.norm(pos - center, axis=1).max())
        return cls(name, lods, center.astype(np.float32), radius)

    def local_aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """``(min xyz, max xyz)`` float32 over every LOD's positions."""
        pos = np.concatenate([lod.vertices[:, :3] for lod in self.lods])
        return pos.min(axis=0), pos.max(axis=0)


class Scene:
    """Instances as numpy structure-of-arrays, ``N`` rows.

    Attributes:
        meshes: list of :class:`Mesh`; ``mesh_ids`` index into it.
        transforms: ``(N, 4, 4)`` float32 model→world, math layout (column vectors).
        mesh_ids: ``(N,)`` uint32.
        colors: ``(N, 4)`` float32 linear RGBA base colour.
        sun_direction: ``(3,)`` float32 unit vector pointing towards the sun.
        materials: list of ``engine.materials.model.Material``; ``material_ids`` ``(N,)``
            uint32 index it per instance. An instance's base colour is its material's (factor
            x texture) times its ``colors`` row (a per-instance tint; white for glTF files).
        images: decoded ``engine.materials.model.Image`` list the materials' textures index.
        lights: the scene's point and spot lights (``engine.lights.model.LightSet``; add and
            change them there: the frame uploads what changed).
        extent: world AABB ``(min xyz, max xyz)`` of all instances (float32 ``(3,)`` each),
            exact for each mesh's transformed local AABB; instances whose bounding sphere is
            not usable (:func:`usable_spheres`: a scale so large it overflows) are left out.

    Modify transforms only through :meth:`set_transforms` so that bounds, extent and the dirty
    ranges stay right.
    """

    def __init__(
        self,
        meshes: Sequence[Mesh],
        transforms: np.ndarray,
        mesh_ids: np.ndarray,
        colors: np.ndarray,
        *,
        sun_direction: Sequence[float] = DEFAULT_SUN,
        materials: Sequence[Material] | None = None,
        material_ids: np.ndarray | None = None,
        images: Sequence[Image] = (),
        lights: LightSet | None = None,
    ):
        """Without ``materials`` every instance gets ``DEFAULT_MATERIAL`` (a dielectric
        tinted by its colour). Raises ValueError (naming the argument, and the first bad row
        where there is one) for wrong shapes, non-finite transforms or colours, mesh or
        material ids out of range, or a texture naming an image that is not there."""
        self.meshes = list(meshes)
        self.transforms = _as_transforms(transforms, "transforms")
        n = len(self.transforms)
        self.mesh_ids = np.asarray(mesh_ids)
        if self.mesh_ids.shape != (n,):
            raise ValueError(f"mesh_ids: expected shape ({n},), got {self.mesh_ids.shape}")
        if n and (self.mesh_ids.min() < 0 or self.mesh_ids.max() >= len(self.meshes)):
            bad = int(np.flatnonzero((self.mesh_ids < 0) | (self.mesh_ids >= len(self.meshes)))[0])
            raise ValueError(
                f"mesh_ids: row {bad} is {int(self.mesh_ids[bad])}, "
                f"outside 0..{len(self.meshes) - 1}"
            )
        self.mesh_ids = self.mesh_ids.astype(np.uint32)
        self.colors = np.ascontiguousarray(colors, np.float32)
        if self.colors.shape != (n, 4):
            raise ValueError(f"colors: expected shape ({n}, 4), got {self.colors.shape}")
        _check_finite(self.colors.reshape(n, -1), "colors")
        sun = np.asarray(sun_direction, np.float64)
        if sun.shape != (3,) or not np.isfinite(sun).all() or np.linalg.norm(sun) == 0:
            raise ValueError(f"sun_direction: expected a non-zero finite 3-vector, got {sun}")
        self.sun_direction = (sun / np.linalg.norm(sun)).astype(np.float32)
        self.materials = list(materials) if materials else [DEFAULT_MATERIAL]
        ids = np.zeros(n, np.uint32) if material_ids is None else np.asarray(material_ids)
        if ids.shape != (n,):
            raise ValueError(f"material_ids: expected shape ({n},), got {ids.shape}")
        if n and (ids.min() < 0 or ids.max() >= len(self.materials)):
            bad = int(np.flatnonzero((ids < 0) | (ids >= len(self.materials)))[0])
            raise ValueError(
                f"material_ids: row {bad} is {int(ids[bad])}, outside 0..{len(self.materials) - 1}"
            )
        self.material_ids = ids.astype(np.uint32)
        self.images = list(images)
        self.lights = lights if lights is not None else LightSet()
        for m in self.materials:
            for slot, ref in m.textures.items():
                if not 0 <= ref.image < len(self.images):
                    raise ValueError(
                        f"material {m.name!r} {slot.name.lower()} texture: image {ref.image} "
                        f"is not one of the {len(self.images)} images"
                    )

        self._mesh_center = np.array([m.center for m in self.meshes], np.float32).reshape(-1, 3)
        self._mesh_radius = np.array([m.radius for m in self.meshes], np.float32)
        aabbs = [m.local_aabb() for m in self.meshes]
        self._mesh_aabb_c = np.array([(lo + hi) / 2 for lo, hi in aabbs], np.float32).reshape(-1, 3)
        self._mesh_aabb_h = np.array([(hi - lo) / 2 for lo, hi in aabbs], np.float32).reshape(-1, 3)
        self._bounds = np.empty((n, 4), np.float32)
        self._update_bounds(slice(None))
        self._extent: tuple[np.ndarray, np.ndarray] | None = None
        self._dirty: list[np.ndarray] = []
        self._all_dirty = True

    @property
    def count(self) -> int:
        """Number of instances ``N``."""
        return len(self.transforms)

    def base_colors(self) -> np.ndarray:
        """``(N, 4)`` float32 linear RGBA each instance is drawn with before textures: its
        material's base colour factor times its ``colors`` tint."""
        factors = np.array([m.base_color for m in self.materials], np.float32)
        return factors[self.material_ids] * self.colors

    def bounds(self) -> np.ndarray:
        """World bounding spheres ``(N, 4)`` float32: centre xyz, radius.

        Centre is ``M @ mesh.center``; radius is ``mesh.radius`` × :func:`max_scale` of
        ``M[:3, :3]`` (the max axis scale), so the sphere stays conservative under non-uniform
        scale, and under shear too. Cached and updated by :meth:`set_transforms`: O(1) per
        call; do not modify the returned array.
        """
        return self._bounds

    @property
    def extent(self) -> tuple[np.ndarray, np.ndarray]:
        """World AABB ``(min xyz, max xyz)`` of all instances; zeros for an empty scene.

        Exact when first read. :meth:`set_transforms` then grows it by the moved rows only
        (O(rows), so reading it every frame stays cheap); it never shrinks until
        :meth:`recompute_extent` (O(N)) is called.
        """
        if self._extent is None:
            self.recompute_extent()
        return self._extent

    def recompute_extent(self) -> tuple[np.ndarray, np.ndarray]:
        """Recompute the exact :attr:`extent` over all N instances and return it."""
        if self.count == 0:
            self._extent = (np.zeros(3, np.float32), np.zeros(3, np.float32))
            return self._extent
        lo = np.full(3, np.inf, np.float32)
        hi = np.full(3, -np.inf, np.float32)
        for start in range(0, self.count, 1 << 18):  # bounded temporaries for 1M+ rows
            a, b = self._aabb(slice(start, start + (1 << 18)))
            lo, hi = np.minimum(lo, a), np.maximum(hi, b)
        if (lo > hi).any():  # no instance can be drawn
            lo = hi = np.zeros(3, np.float32)
        self._extent = (lo, hi)
        return self._extent

    def set_transforms(self, rows, matrices: np.ndarray) -> None:
        """Replace ``transforms[rows]`` and mark those rows dirty.

        Args:
            rows: integer indices ``(K,)`` (any order) or a slice.
            matrices: ``(K, 4, 4)`` (or ``(4, 4)`` broadcast to every row) model→world.

        Raises:
            ValueError: a row out of range, a shape mismatch, or a non-finite matrix (naming
                the first bad scene row).
        """
        idx = np.arange(self.count)[rows] if isinstance(rows, slice) else np.asarray(rows)
        idx = np.atleast_1d(idx)
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise ValueError(f"rows: expected 1-D integer indices, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.count):
            bad = int(idx[(idx < 0) | (idx >= self.count)][0])
            raise ValueError(f"rows: row {bad} is outside 0..{self.count - 1}")
        m = np.asarray(matrices, np.float32)
        if m.shape == (4, 4):
            m = np.broadcast_to(m, (len(idx), 4, 4))
        if m.shape != (len(idx), 4, 4):
            raise ValueError(f"matrices: expected shape ({len(idx)}, 4, 4), got {m.shape}")
        finite = np.isfinite(m).all(axis=(1, 2))
        if not finite.all():
            bad = int(idx[np.flatnonzero(~finite)[0]])
            raise ValueError(f"matrices: transform for row {bad} is not finite (NaN or inf)")
        self.transforms[idx] = m
        self._update_bounds(idx)
        if self._extent is not None and usable_spheres(self._bounds[idx]).any():  # grow, O(K)
            lo, hi = self._aabb(idx)
            self._extent = (np.minimum(self._extent[0], lo), np.maximum(self._extent[1], hi))
        if not self._all_dirty:
            self._dirty.append(idx.copy())

    def take_dirty(self, *, max_gap: int = 0) -> list[tuple[int, int]]:
        """Row ranges ``[start, stop)`` changed since the last call, sorted and merged.

        The first call returns every row (``[(0, N)]``; ``[]`` when ``N == 0``). Ranges that
        touch or overlap are merged; ranges separated by at most ``max_gap`` unchanged rows are
        merged too (fewer, larger uploads). Cost is O(changed rows), never O(N).
        """
        if self._all_dirty:
            self._all_dirty = False
            self._dirty.clear()
            return [(0, self.count)] if self.count else []
        if not self._dirty:
            return []
        rows = np.unique(np.concatenate(self._dirty))
        self._dirty.clear()
        breaks = np.flatnonzero(np.diff(rows) > max_gap + 1)
        starts = np.concatenate(([rows[0]], rows[breaks + 1]))
        stops = np.concatenate((rows[breaks], [rows[-1]])) + 1
        return [(int(a), int(b)) for a, b in zip(starts, stops, strict=True)]

    # -- internals -------------------------------------------------------------------------

    def _update_bounds(self, idx: np.ndarray | slice) -> None:
        m = self.transforms[idx]
        ids = self.mesh_ids[idx]
        c = self._mesh_center[ids]
        linear = m[:, :3, :3]
        # A huge finite scale (3e38) overflows to inf here: that row is then not a usable
        # sphere and the cull never draws it; no warning on stderr for it.
        with np.errstate(over="ignore", invalid="ignore"):
            self._bounds[idx, :3] = (linear @ c[:, :, None])[:, :, 0] + m[:, :3, 3]
            self._bounds[idx, 3] = self._mesh_radius[ids] * max_scale(linear)

    def _aabb(self, idx: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        """World AABB of rows ``idx``: each mesh's local AABB transformed exactly. Rows whose
        bounding sphere is not usable (never drawn) are left out; none usable: lo > hi."""
        keep = usable_spheres(self._bounds[idx])
        m = self.transforms[idx][keep]
        ids = self.mesh_ids[idx][keep]
        lin = m[:, :3, :3]
        c = (lin @ self._mesh_aabb_c[ids][:, :, None])[:, :, 0] + m[:, :3, 3]
        h = (np.abs(lin) @ self._mesh_aabb_h[ids][:, :, None])[:, :, 0]
        return (c - h).min(axis=0, initial=np.inf), (c + h).max(axis=0, initial=-np.inf)


def max_scale(linear: np.ndarray) -> np.ndarray:
    """Largest stretch ``(K,)`` of each ``(K, 3, 3)`` linear part: its spectral norm.

    For rotation·scale matrices (orthogonal columns) that is the largest column norm, the
    max axis scale, computed directly; sheared rows (e.g. a glTF child rotated under a
    non-uniformly scaled parent) get the exact largest singular value, for which the max
    column norm would be too small and the bounding sphere not conservative.
    """
    c0, c1, c2 = linear[:, :, 0], linear[:, :, 1], linear[:, :, 2]
    d01, d02, d12 = (c0 * c1).sum(1), (c0 * c2).sum(1), (c1 * c2).sum(1)
    n0, n1, n2 = (c0 * c0).sum(1), (c1 * c1).sum(1), (c2 * c2).sum(1)  # squared norms
    scale = np.sqrt(np.maximum(np.maximum(n0, n1), n2))
    tol = 1e-10  # |cos| <= 1e-5 between columns counts as orthogonal
    sheared = (d01 * d01 > tol * n0 * n1) | (d02 * d02 > tol * n0 * n2)
    sheared |= d12 * d12 > tol * n1 * n2
    sheared &= np.isfinite(scale)  # an overflowed row stays inf (unusable), eigvalsh would raise
    if sheared.any():
        lin = linear[sheared].astype(np.float64)
        eig = np.linalg.eigvalsh(np.swapaxes(lin, 1, 2) @ lin)  # of M^T M, ascending
        scale[sheared] = np.sqrt(np.maximum(eig[:, -1], 0.0))
    return scale


def _as_transforms(transforms: np.ndarray, what: str) -> np.ndarray:
    t = np.array(transforms, np.float32, copy=True, order="C")
    if t.ndim != 3 or t.shape[1:] != (4, 4):
        raise ValueError(f"{what}: expected shape (N, 4, 4), got {t.shape}")
    _check_finite(t.reshape(len(t), -1), what)
    return t


def _check_finite(rows: np.ndarray, what: str) -> None:
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{what}: row {bad} is not finite (NaN or inf)")
