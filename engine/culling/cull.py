"""The GPU cull's shared pieces (shaders/cull.wgsl): its uniform, bind group layout and
dispatch size. The passes themselves are in ``engine.passes.cull``.

Two-phase occlusion culling after zeux/niagara (Arseny Kapoulkine, "niagara" renderer,
2020): ``Cull.Early`` draws what was visible last frame (frustum test only), a depth pyramid
is built from that depth, ``Cull.Late`` classifies every instance (frustum, sub-pixel, Hi-Z)
and queues the newly visible. ``Shadow.Cull`` tests casters against each shadow cascade's
volume (one dispatch row per cascade, each into its own region and counter block). The
numpy specification of every decision is ``engine.culling.reference``.
"""

from __future__ import annotations

import struct

import numpy as np
import wgpu

from engine.math3d import column_major, floats3

WORKGROUP = 64
MAX_INSTANCES = 4_000_000  # ceil(N / 64) must fit one dispatch dimension (65535)

FLAG_CULL, FLAG_OCCLUSION, FLAG_TWO_PHASE, FLAG_RESET = 1, 2, 4, 8
MAX_CASCADES = 4  # shadow cascades the uniform holds planes for (engine.passes.shadow)
PLANES_PER_CASCADE = 6  # uniform slots per cascade (a fit uses 5: sides + far)
LOD_BASE_PX = 160.0  # projected diameter (pixels at 720p) below which LOD 1 is used


#: The WGSL ``Cull`` uniform (shaders/cull.wgsl), field by field; matrices column-major.
CULL_DTYPE = np.dtype(
    [
        ("view", "<f4", (4, 4)),  # world -> view of the culling camera
        ("planes", "<f4", (6, 4)),  # camera frustum planes, world
        ("light_planes", "<f4", (MAX_CASCADES * PLANES_PER_CASCADE, 4)),  # cascade c: at 6 c
        ("eye", "<f4", 4),  # xyz: culling camera position; w: LOD 0 size in pixels
        ("proj", "<f4", 4),  # P00, P11, near, output height in pixels
        ("screen", "<f4", 4),  # output size px; pyramid level-0 size in texels
        ("counts", "<u4", 4),  # instances N, flags, batches B, remap region T
        ("misc", "<u4", 4),  # pyramid mip count, camera planes, light planes per cascade, cascades
        ("jitter", "<f4", 4),  # xy: the projection's sub-pixel offset in pixels (TAA); zw: 0
    ]
)
CULL_UNIFORM_SIZE = CULL_DTYPE.itemsize  # 640 bytes
_AT = {name: CULL_DTYPE.fields[name][1] // 4 for name in CULL_DTYPE.names}  # offsets in words


def cull_uniform(
    *,
    view: np.ndarray,
    planes: np.ndarray,
    light_planes: np.ndarray,
    eye: np.ndarray,
    p00: float,
    p11: float,
    near: float,
    screen: tuple[int, int],
    pyramid: tuple[int, int],
    levels: int,
    count: int,
    flags: int,
    batches: int,
    region_slots: int,
    lod_base_px: float,
    jitter: tuple[float, float] = (0.0, 0.0),
) -> bytes:
    """Pack the WGSL ``Cull`` struct (``CULL_DTYPE``, 640 bytes) by field name. ``view`` is a
    4x4 row-major matrix (stored transposed: WGSL matrices are column-major); ``planes`` up to
    6 ``(a, b, c, d)`` rows; ``light_planes`` one ``(P, 4)`` array of up to 6 rows per shadow
    cascade (1 to ``MAX_CASCADES``; a single ``(P, 4)`` array is one cascade); ``jitter`` the
    rendering projection's sub-pixel offset in pixels ``(x right, y down)``: the projected
    bounds are shifted by it, so the sub-pixel and Hi-Z tests judge what the jittered frame
    draws."""
    # One struct.pack of plain numbers in the dtype's field order (asserted below): a few
    # times cheaper, every frame, than assigning the fields of a structured array
    k = len(planes)
    cascades = [light_planes] if np.ndim(light_planes) == 2 else list(light_planes)
    n = len(cascades[0])
    light = []
    for c in cascades:
        light += np.asarray(c, np.float32).ravel().tolist()
        light += _ZEROS[: 4 * (PLANES_PER_CASCADE - len(c))]
    light += _ZEROS[: 4 * PLANES_PER_CASCADE] * (MAX_CASCADES - len(cascades))
    return _CULL_PACK.pack(
        *column_major(view),
        *np.asarray(planes, np.float32).ravel().tolist(),
        *_ZEROS[: 4 * (6 - k)],
        *light,
        *floats3(eye),
        lod_base_px,
        p00,
        p11,
        near,
        screen[1],
        *screen,
        *pyramid,
        count,
        flags,
        batches,
        region_slots,
        levels,
        k,
        n,
        len(cascades),
        *jitter,
        0.0,
        0.0,
    )


_LIGHT_FLOATS = 4 * MAX_CASCADES * PLANES_PER_CASCADE
_CULL_PACK = struct.Struct("<" + "f" * (16 + 24 + _LIGHT_FLOATS + 12) + "I" * 8 + "f" * 4)
_ZEROS = (0.0,) * 24
assert _CULL_PACK.size == CULL_UNIFORM_SIZE and _AT["counts"] == 148 and _AT["jitter"] == 156


def cull_bind_group_layout(device: wgpu.GPUDevice) -> wgpu.GPUBindGroupLayout:
    """The explicit layout every cull entry point shares (group 0 of shaders/cull.wgsl)."""
    c = wgpu.ShaderStage.COMPUTE
    ro, rw = {"type": "read-only-storage"}, {"type": "storage"}
    kinds = [{"type": "uniform"}, ro, ro, ro, rw, rw, rw, rw]
    entries = [{"binding": i, "visibility": c, "buffer": k} for i, k in enumerate(kinds)]
    entries.append(
        {"binding": 8, "visibility": c, "texture": {"sample_type": "unfilterable-float"}}
    )
    return device.create_bind_group_layout(label="cull", entries=entries)


def cull_bind_group(device, layout, uniform, gs, counters, pyramid_view) -> wgpu.GPUBindGroup:
    """Bind group over a ``GpuScene`` ``gs``, the counters buffer and the pyramid view."""
    bufs = [uniform, gs.bounds, gs.mesh_ids, gs.mesh_table, gs.state, gs.args, gs.remap, counters]
    entries = [{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(bufs)]
    entries.append({"binding": 8, "resource": pyramid_view})
    return device.create_bind_group(label="cull", layout=layout, entries=entries)


def workgroups(count: int) -> int:
    """Dispatch size for ``count`` instances (computed once per scene)."""
    return (count + WORKGROUP - 1) // WORKGROUP
