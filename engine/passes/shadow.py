"""The sun's shadow in one place: cascaded shadow maps fitted to the view, frustum planes,
the map array (``ShadowMap``) and the ``Shadow.C0`` .. ``Shadow.C3`` passes that render it.

The shadowed region (the receivers) is what the camera sees: its view frustum from the near
plane to a shadow distance, clipped to the scene's extent (:func:`shadow_region`); one
instance far away does not stretch it. That depth range is split into 1 to ``MAX_CASCADES``
slices by the practical split scheme (:func:`cascade_splits`, Zhang et al. 2006), and each
slice gets its own map (a layer of one texture array): the light's box covers the slice's
bounding sphere, whose radius does not change as the camera turns, and is snapped to whole
shadow texels so static shadows do not shimmer as the camera moves
(``engine.devtools.shimmer`` measures it). Its near side is pushed back toward the sun only
as far as the scene reaches inside the column the slice sweeps toward the sun (what can cast
into it), so every caster is inside; the cull therefore tests casters against the sides and
the far plane only (extended toward the light), never against the camera frustum. Stable
fitting after Valient 2008, "Stable Rendering of Cascaded Shadow Maps" (ShaderX6). One
cascade is the single map of before: the same region, fit and picture.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import wgpu

from engine.culling.cull import MAX_CASCADES  # layers of the map array: Shadow.C0 .. C3
from engine.graph import RenderPass
from engine.math3d import floats3, inverse4, look_at, orthographic
from engine.passes.bundles import BundleCache
from engine.passes.resources import DRAW_INPUTS, SHADOW_FORMAT, SHADOW_MAP

SHADOW_DISTANCE = 90.0  # default view depth (world units, metres in the city) shadowed
#: The practical split scheme's weight of the logarithmic split (Zhang et al. 2006 use 0.5).
DEFAULT_LAMBDA = 0.5
#: Width of the band at the far end of each cascade (a fraction of its depth range) over
#: which the next cascade is blended in, so a cascade boundary is no visible seam.
BLEND_BAND = 0.1


@dataclass
class SunFit:
    """Attributes: ``view_proj`` (4, 4) float32 world→shadow clip (reverse-Z ortho),
    ``planes`` (5, 4) float32 world culling planes (4 sides + far), ``texel_world`` texel
    size in world units."""

    view_proj: np.ndarray
    planes: np.ndarray
    texel_world: float


@dataclass
class CascadeFit:
    """The sun's cascades for one camera.

    Attributes:
        cascades: one ``SunFit`` per cascade, nearest first (cascade ``c`` is layer ``c`` of
            the map array).
        splits: ``len(cascades) + 1`` view depths (world units, increasing): cascade ``c``
            shadows receivers from ``splits[c]`` to ``splits[c + 1]``; ``splits[0]`` is the
            camera's near plane, ``splits[-1]`` the shadow distance.
    """

    cascades: tuple[SunFit, ...]
    splits: tuple[float, ...]

    @property
    def view_proj(self) -> np.ndarray:
        """Cascade 0's world -> shadow clip (the single map's with one cascade)."""
        return self.cascades[0].view_proj

    @property
    def texel_world(self) -> float:
        """Cascade 0's texel size in world units."""
        return self.cascades[0].texel_world


def cascade_splits(near: float, far: float, count: int, lam: float = DEFAULT_LAMBDA) -> list[float]:
    """The practical split scheme (Zhang, Sun, Xu & Lo 2006, "Parallel-Split Shadow Maps for
    Large-scale Virtual Environments", VRCIA; GPU Gems 3, ch. 10): split ``i`` of ``N`` at view
    depth ``lam * n * (f / n)^(i / N) + (1 - lam) * (n + (f - n) * i / N)``, the logarithmic
    split (even texel density in perspective) blended with the uniform one.

    Args:
        near, far: view depths (world units) of the first and last boundary, ``0 < near < far``.
        count: cascades ``N``, 1..``MAX_CASCADES``.
        lam: the logarithmic split's weight in [0, 1] (1: logarithmic, 0: uniform).
    Returns:
        ``N + 1`` increasing depths, ``[near, ..., far]``.
    Raises:
        ValueError: ``count``, ``lam``, ``near`` or ``far`` out of range.
    """
    if not (isinstance(count, int) and 1 <= count <= MAX_CASCADES):
        raise ValueError(f"cascades: expected 1..{MAX_CASCADES}, got {count!r}")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"cascade lambda: expected 0..1, got {lam!r}")
    if not 0.0 < near < far < math.inf:
        raise ValueError(f"cascade splits need 0 < near < far, got {near!r}, {far!r}")
    out = [near]
    for i in range(1, count):
        t = i / count
        out.append(lam * near * (far / near) ** t + (1.0 - lam) * (near + (far - near) * t))
    out.append(far)
    return out


def frustum_planes(view_proj: np.ndarray, *, near: bool = True, far: bool = False) -> np.ndarray:
    """World-space planes ``(K, 4)`` float32 of a reverse-Z clip volume (Gribb & Hartmann
    2001), normalised so ``dot(p[:3], x) + p[3]`` is the signed distance (>= 0 inside).
    Order: left, right, bottom, top, then near (depth <= w) and far (depth >= 0) if asked; a
    plane with no normal (the far plane of an infinite perspective) is NaN."""
    (a0, a1, a2, a3), (b0, b1, b2, b3), r2, (w0, w1, w2, w3) = np.asarray(
        view_proj, np.float64
    ).tolist()  # plain floats: 16 numbers, every frame
    rows = [
        (w0 + a0, w1 + a1, w2 + a2, w3 + a3),  # left
        (w0 - a0, w1 - a1, w2 - a2, w3 - a3),  # right
        (w0 + b0, w1 + b1, w2 + b2, w3 + b3),  # bottom
        (w0 - b0, w1 - b1, w2 - b2, w3 - b3),  # top
    ]
    if near:
        rows.append((w0 - r2[0], w1 - r2[1], w2 - r2[2], w3 - r2[3]))
    if far:
        rows.append(r2)
    out = []
    for x, y, z, d in rows:
        n = math.sqrt(x * x + y * y + z * z) or math.nan  # np.linalg.norm's arithmetic
        out.append((x / n, y / n, z / n, d / n))  # NaN: a plane at infinity (no normal)
    return np.array(out, np.float32)


@functools.lru_cache(maxsize=8)
def _sun_rotation(sun: tuple[float, float, float]) -> list[list[float]]:
    """The light's view rotation (eye at the origin looking along -sun): its float32
    ``look_at`` matrix as rows of floats; cached, the sun rarely moves."""
    return look_at((0.0, 0.0, 0.0), [-v for v in sun]).astype(np.float64).tolist()


def fit_sun(
    sun_dir: np.ndarray,
    focus: np.ndarray,
    radius: float,
    extent: tuple[np.ndarray, np.ndarray],
    map_size: int,
    *,
    snap: bool = True,
) -> SunFit:
    """Fit one shadow projection (a cascade).

    Args:
        sun_dir: ``(3,)`` unit vector toward the sun.
        focus: ``(3,)`` world centre of the shadowed region; ``radius`` its radius (world units).
        extent: scene world AABB ``(min xyz, max xyz)``; casters are all inside it.
        map_size: shadow map size in texels.
        snap: move the box by whole texels only (its centre floored to the texel grid in
            light space), so a moving camera leaves static shadows unchanged (Valient 2008);
            False: follow the focus continuously (what shimmers, for comparison).
    Returns:
        the projection whose box holds the sphere and, toward the sun, every part of
        ``extent`` that can shadow it (:func:`caster_reach`).
    """
    sun = floats3(sun_dir)
    rot = _sun_rotation(tuple(sun))  # rotation only: eye at origin, last row (0, 0, 0, 1)
    c = floats3(focus)
    texel = 2.0 * radius / map_size
    f = [r[0] * c[0] + r[1] * c[1] + r[2] * c[2] for r in rot[:3]]  # the focus in light view
    near = -f[2] - radius - caster_reach(sun, c, radius, extent) - 1.0  # depth along the view
    far = max(-f[2] + radius, near + 1.0)
    # the orthographic projection shifted by the focus, times the rotation: each row of the
    # product is a scaled rotation row plus a w term
    o = orthographic(radius, radius, near, far).tolist()
    sx, sz, tz = o[0][0], o[2][2], o[2][3]
    if snap:  # a whole number k of texels: the shift is k * 2 / map_size in NDC, exact in
        # float32 (a power of two times k), so the shadow clip position of a vertex moves by
        # exactly whole texels as k changes and rasterises the same, texel for texel
        tx = -2.0 * math.floor(f[0] / texel) / map_size
        ty = -2.0 * math.floor(f[1] / texel) / map_size
    else:
        tx, ty = -(sx * f[0]), -(sx * f[1])
    rows = [
        [sx * v for v in rot[0][:3]] + [tx],
        [sx * v for v in rot[1][:3]] + [ty],
        [sz * v for v in rot[2][:3]] + [tz],
        [0.0, 0.0, 0.0, 1.0],
    ]
    vp = np.array(rows, np.float32)
    return SunFit(vp, frustum_planes(vp, near=False, far=True), texel)


def caster_reach(sun_dir, focus, radius: float, extent) -> float:
    """How far toward the sun (world units, >= 0) casters of the sphere (``focus``,
    ``radius``) can be: where the ray from ``focus`` along ``sun_dir`` leaves ``extent`` grown
    by ``radius`` (slab test, Kay & Kajiya 1986). A point that shadows the sphere is
    ``q + t * sun`` with ``|q - focus| <= radius``, inside ``extent``, so ``t`` is at most this.
    A scene that reaches far sideways (one box at x = 1e5) adds nothing unless the column
    toward the sun runs through it."""
    sun, c = floats3(sun_dir), floats3(focus)  # three floats: plain Python is faster
    lo = [v - radius for v in floats3(extent[0])]
    hi = [v + radius for v in floats3(extent[1])]
    exits = [
        ((hi[a] if sun[a] > 0 else lo[a]) - c[a]) / sun[a] for a in range(3) if abs(sun[a]) > 1e-12
    ]
    return max(min(exits, default=0.0), 0.0)


def shadow_region(
    view_proj: np.ndarray, distance: float, extent, *, start: float | None = None
) -> tuple[np.ndarray, float]:
    """The sphere to shadow: centre ``(3,)`` float64 and radius (world units).

    The receivers are the camera's view frustum from view depth ``start`` (default: its near
    plane) to ``distance``, inside ``extent``. Of the frustum slice's bounding sphere and the
    sphere of the slice's AABB clipped to ``extent``, the smaller is used, or the sphere of
    the whole ``extent`` when it is no larger than the slice's (then the fit does not move as
    the camera turns). The radius is rounded up to a power of 2^(1/8), so the texel size
    stays fixed while the clipped box changes a little.

    Args:
        view_proj: ``(4, 4)`` the camera's world→clip, reverse-Z infinite perspective
            (``engine.math3d.perspective_reverse_z`` @ view); NDC depth = near / view depth.
        distance: shadow distance, view depth in world units (> the camera's near plane).
        extent: receivers' world AABB ``(min xyz, max xyz)`` (the scene's).
        start: the slice's first view depth (a cascade's split; None: the near plane).

    Raises:
        ValueError: a singular or non-finite ``view_proj``, or an infinite ``distance``.
    """
    return shadow_regions(view_proj, [(start, distance)], extent)[0]


def shadow_regions(view_proj: np.ndarray, slices, extent) -> list[tuple[np.ndarray, float]]:
    """:func:`shadow_region` of each ``(start, distance)`` view-depth slice (a None start is
    the near plane), the camera's inverse computed once.

    Raises:
        ValueError: as :func:`shadow_region`.
    """
    m = np.asarray(view_proj, np.float64)
    near = float(m[2, 3])  # perspective_reverse_z: row 2 is (0, 0, 0, near)
    bounds = []
    for start, distance in slices:
        a = near if start is None else max(float(start), near)
        bounds.append((a, max(float(distance), a)))
    try:
        inv = inverse4(m)
        return [_region(_slice_corners(inv, near, a, b), extent) for a, b in bounds]
    except ZeroDivisionError:  # a corner at infinity: no finite slice to shadow
        far = bounds[-1][1]
        raise ValueError(f"shadow region: no finite view slice to distance {far}") from None


def cascade_slices(splits) -> list[tuple[float, float]]:
    """The view-depth slice each cascade is fitted to: from its split, pulled toward the
    camera by the previous cascade's blend band (``BLEND_BAND`` of that cascade's range,
    counted from 0 for the first, as ``shaders/shadow_cascades.wgsl`` blends), to its end, so
    a receiver in a band is inside both cascades it is blended from."""
    out = []
    for c in range(len(splits) - 1):
        start = splits[c]
        if c > 0:
            prev = splits[c - 1] if c > 1 else 0.0
            start -= BLEND_BAND * (splits[c] - prev)
        out.append((start, splits[c + 1]))
    return out


def _region(corners: list, extent) -> tuple[np.ndarray, float]:
    slice_c, slice_r = _slice_sphere(corners)
    lo, hi = floats3(extent[0]), floats3(extent[1])
    whole_r = _length([b - a for a, b in zip(lo, hi, strict=True)]) / 2.0
    if whole_r <= slice_r:
        center, radius = [(a + b) / 2.0 for a, b in zip(lo, hi, strict=True)], whole_r
    else:
        axes = list(zip(*corners, strict=True))  # xs, ys, zs
        clo = [max(min(v), b) for v, b in zip(axes, lo, strict=True)]
        chi = [min(max(v), b) for v, b in zip(axes, hi, strict=True)]
        box_r = _length([b - a for a, b in zip(clo, chi, strict=True)]) / 2.0
        if all(a <= b for a, b in zip(clo, chi, strict=True)) and box_r < slice_r:
            center, radius = [(a + b) / 2.0 for a, b in zip(clo, chi, strict=True)], box_r
        else:  # nothing of the scene in view, or the slice is the tighter fit
            center, radius = slice_c, slice_r
    radius = 2.0 ** (math.ceil(8.0 * math.log2(max(radius, 1e-3))) / 8.0)
    return np.array(center), radius


def _slice_corners(inv: list, near: float, start: float, distance: float) -> list[list[float]]:
    """World corners (8 x 3, in (x, y, start/end) order) of the view slice from view depth
    ``start`` to ``distance`` (``near``: the camera's near plane): the NDC corners
    ``(x, y, near / depth, 1)`` through ``inv`` (rows of the inverse view-projection), divided
    by w."""
    out = []
    for x in (-1.0, 1.0):
        for y in (-1.0, 1.0):
            for d in (start, distance):
                z = near / d
                h = [r[0] * x + r[1] * y + r[2] * z + r[3] for r in inv]
                out.append([h[0] / h[3], h[1] / h[3], h[2] / h[3]])
    return out


def _square(v) -> float:
    """Squared length of three numbers."""
    return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]


def _length(v) -> float:
    """Euclidean length of three numbers (``np.linalg.norm``'s arithmetic)."""
    return math.sqrt(_square(v))


def _slice_sphere(corners: list) -> tuple[list[float], float]:
    """Smallest sphere holding a symmetric frustum slice, ``corners`` (8 x 3) in
    (x, y, near/far) order: centred on the view axis where the near and far corners are
    equally far (clamped to the far cap), so it does not change as the camera turns."""
    xs, ys, zs = zip(*corners, strict=True)
    cn = [sum(xs[0::2]) / 4.0, sum(ys[0::2]) / 4.0, sum(zs[0::2]) / 4.0]  # near cap centre
    cf = [sum(xs[1::2]) / 4.0, sum(ys[1::2]) / 4.0, sum(zs[1::2]) / 4.0]
    (nx, ny, nz), (fx, fy, fz) = corners[0], corners[1]
    a2 = (nx - cn[0]) ** 2 + (ny - cn[1]) ** 2 + (nz - cn[2]) ** 2  # squared half-diagonals
    b2 = (fx - cf[0]) ** 2 + (fy - cf[1]) ** 2 + (fz - cf[2]) ** 2
    axis = [cf[0] - cn[0], cf[1] - cn[1], cf[2] - cn[2]]
    length = _length(axis)
    if length < 1e-12:
        return cn, math.sqrt(max(a2, b2))
    t = min(max((length * length + b2 - a2) / (2.0 * length), 0.0), length) / length
    cx, cy, cz = cn[0] + axis[0] * t, cn[1] + axis[1] * t, cn[2] + axis[2] * t
    r2 = max((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2 for x, y, z in corners)
    return [cx, cy, cz], math.sqrt(r2)


# -- the map array and its passes ---------------------------------------------------------------
class ShadowMap:
    """The sun's depth maps (``SHADOW_FORMAT``, ``size`` x ``size`` texels, one array layer
    per cascade), the bind group the main pipelines sample them through (a ``2d-array``
    view) and the per-frame fit.

    Args:
        device: the ``wgpu.GPUDevice``; ``mesh``: the ``MeshPipelines`` (its shadow layout).
        size: texels per side (checked by ``FrameSettings``); ``layers``: cascades, 1..4.

    Attributes:
        texture: the ``size x size x layers`` array; ``view``: all layers (``2d-array``);
            ``layer_views``: one ``2d`` view per layer (cascade ``c`` renders into ``c``).
    """

    def __init__(self, device, mesh, size: int, layers: int = 1):
        self.device, self.mesh = device, mesh
        self.texture = None
        self._last: tuple | None = None  # (inputs, CascadeFit) of the last fit
        self.resize(size, layers)

    def resize(self, size: int, layers: int | None = None) -> None:
        """Recreate the map at ``size`` texels per side and ``layers`` cascades (None: as
        now); no-op when unchanged."""
        layers = self.layers if layers is None else layers
        if self.texture is not None:
            if (self.size, self.layers) == (size, layers):
                return
            self.texture.destroy()
        self.size, self.layers = size, layers
        self.texture = self.device.create_texture(
            label="shadow map",
            size=(size, size, layers),
            format=SHADOW_FORMAT,
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT
            | wgpu.TextureUsage.TEXTURE_BINDING
            | wgpu.TextureUsage.COPY_SRC,  # --dump, tests
        )
        self.view = self.texture.create_view(dimension="2d-array")
        self.layer_views = [
            self.texture.create_view(
                label=f"shadow map C{c}", dimension="2d", base_array_layer=c, array_layer_count=1
            )
            for c in range(layers)
        ]
        self.group = self.mesh.shadow_group(self.view)

    def fit(
        self,
        view_proj: np.ndarray,
        scene,
        radius: float | None,
        *,
        cascades: int = 1,
        lam: float = DEFAULT_LAMBDA,
        snap: bool = True,
    ) -> CascadeFit:
        """The sun's cascades for a camera ``view_proj`` (4, 4): receivers up to view depth
        ``radius`` (world units; None: ``SHADOW_DISTANCE``) in ``scene``'s extent, split into
        ``cascades`` slices (:func:`cascade_splits` with ``lam``, overlapping by the blend
        bands: :func:`cascade_slices`), each fitted by :func:`fit_sun` (``snap``). A camera
        that did not move reuses the last fit.

        Raises:
            ValueError: as :func:`cascade_splits` and :func:`shadow_region`.
        """
        key = (np.asarray(view_proj).tobytes(), radius, self.size, id(scene), cascades, lam,
               snap)  # fmt: skip
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        extent = scene.extent
        near = float(np.asarray(view_proj, np.float64)[2, 3])
        far = max(radius or SHADOW_DISTANCE, near * (1.0 + 1e-6))
        splits = cascade_splits(near, far, cascades, lam)
        fits = tuple(
            fit_sun(scene.sun_direction, c, r, extent, self.size, snap=snap)
            for c, r in shadow_regions(view_proj, cascade_slices(splits), extent)
        )
        fit = CascadeFit(fits, tuple(splits))
        self._last = (key, fit)
        return fit


def cascade_of(name: str) -> int:
    """The cascade a shadow pass renders: ``"Shadow.C2"`` -> 2.

    Raises:
        ValueError: not a ``Shadow.C<k>`` name with ``k < MAX_CASCADES``.
    """
    head, _, k = name.rpartition(".C")
    if head != "Shadow" or not k.isdigit() or int(k) >= MAX_CASCADES:
        last = MAX_CASCADES - 1
        raise ValueError(f"a shadow pass is named Shadow.C0 .. Shadow.C{last}, got {name!r}")
    return int(k)


class ShadowPass(RenderPass):
    """``Shadow.C<k>``: cascade ``k``'s depth map (layer ``k`` of ``shadow.map``; reverse-Z,
    cleared to 0), one indexed indirect draw per batch of the cascade's cull region: opaque
    casters depth-only, MASK casters alpha-tested at their cutoff; BLEND instances cast no
    shadow (glass, foliage cards drawn blended are not occluders). Enabled while shadows are
    on and the frame has more than ``k`` cascades.

    Args:
        res: the frame's ``FrameResources`` (``shadow``, ``mesh``, ``gs``).
        name: ``"Shadow.C0"`` .. ``"Shadow.C3"``.
    """

    def __init__(self, res, name: str = "Shadow.C0"):
        super().__init__(name, reads=DRAW_INPUTS, writes=(SHADOW_MAP,))
        self.res, self.cascade = res, cascade_of(name)
        self.bundles = BundleCache(res.device, name)

    @property
    def pipeline(self):  # asked each frame: hot reload replaces it
        return self.res.mesh.shadow()

    def enabled_by(self, settings) -> bool:
        return settings.shadows and self.cascade < settings.cascades

    def targets(self, ctx) -> dict:
        return {
            "color_attachments": [],
            "depth_stencil_attachment": {
                "view": self.res.shadow.layer_views[self.cascade],
                "depth_clear_value": 0.0,
                "depth_load_op": "clear",
                "depth_store_op": "store",
            },
        }

    def record(self, ctx, rpass) -> None:
        r = self.res
        region = r.gs.shadow_region(self.cascade)
        # depth only: single-sided (back faces culled), double-sided; then alpha-tested
        # MASK casters; BLEND casts no shadow
        spans = ((self.pipeline, r.gs.batch_range((0,))),
                 (r.mesh.shadow(two_sided=True), r.gs.batch_range((1,))),
                 (r.mesh.shadow_mask(), mask := r.gs.batch_range((2, 3))))  # fmt: skip
        pipes = [(pipe, span) for pipe, span in spans if span]

        def commands(enc) -> None:
            r.bind_geometry(enc)
            for pipe, span in pipes:
                enc.set_pipeline(pipe)
                if span is mask:
                    enc.set_bind_group(2, r.material_group)
                r.gs.draw(enc, region, 1, r.draw_group, span)

        key = (*(p for p, _ in pipes), r.material_group, *r.geometry_key())
        self.bundles.record(rpass, key, commands, color_formats=(), depth_format=SHADOW_FORMAT)
