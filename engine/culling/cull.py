"""GPU cull pipelines (shaders/cull.wgsl) and their per-frame parameters.

Two-phase occlusion culling after zeux/niagara (Arseny Kapoulkine, "niagara" renderer,
2020): ``Cull.Early`` draws what was visible last frame (frustum test only), a depth pyramid
is built from that depth, ``Cull.Late`` classifies every instance (frustum, sub-pixel, Hi-Z)
and queues the newly visible. ``Shadow.Cull`` tests casters against the sun's volume. The
numpy specification of every decision is ``engine.culling.reference``.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.shaders import shader_module

WORKGROUP = 64
MAX_INSTANCES = 4_000_000  # ceil(N / 64) must fit one dispatch dimension (65535)
CULL_UNIFORM_SIZE = 336

FLAG_CULL, FLAG_OCCLUSION, FLAG_TWO_PHASE, FLAG_RESET = 1, 2, 4, 8
CLASS_FRUSTUM, CLASS_SMALL, CLASS_OCCLUDED, CLASS_VISIBLE = 0, 1, 2, 3
LOD_BASE_PX = 160.0  # projected diameter (pixels at 720p) below which LOD 1 is used


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
) -> bytes:
    """Pack the WGSL ``Cull`` struct (336 bytes); see shaders/cull.wgsl for the fields."""
    f = np.zeros(84, np.float32)
    f[0:16] = np.asarray(view, np.float32).T.reshape(-1)
    pl = np.zeros((6, 4), np.float32)
    pl[: len(planes)] = planes
    lp = np.zeros((6, 4), np.float32)
    lp[: len(light_planes)] = light_planes
    f[16:40] = pl.reshape(-1)
    f[40:64] = lp.reshape(-1)
    f[64:68] = (*eye, lod_base_px)
    f[68:72] = (p00, p11, near, screen[1])
    f[72:76] = (*screen, *pyramid)
    u = f.view(np.uint32)
    u[76:80] = (count, flags, batches, region_slots)
    u[80:84] = (levels, len(planes), len(light_planes), 0)
    return f.tobytes()


class CullPipelines:
    """The three cull entry points sharing one explicit bind group layout.

    Args:
        device: the ``wgpu.GPUDevice``.
    """

    def __init__(self, device: wgpu.GPUDevice):
        self.device = device
        c = wgpu.ShaderStage.COMPUTE
        ro, rw = {"type": "read-only-storage"}, {"type": "storage"}
        self.layout = device.create_bind_group_layout(
            label="cull",
            entries=[
                {"binding": 0, "visibility": c, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": c, "buffer": ro},
                {"binding": 2, "visibility": c, "buffer": ro},
                {"binding": 3, "visibility": c, "buffer": ro},
                {"binding": 4, "visibility": c, "buffer": rw},
                {"binding": 5, "visibility": c, "buffer": rw},
                {"binding": 6, "visibility": c, "buffer": rw},
                {"binding": 7, "visibility": c, "buffer": rw},
                {
                    "binding": 8,
                    "visibility": c,
                    "texture": {"sample_type": "unfilterable-float"},
                },
            ],
        )
        layout = device.create_pipeline_layout(bind_group_layouts=[self.layout])
        m = shader_module(device, "cull.wgsl")
        self.early, self.late, self.shadow = (
            device.create_compute_pipeline(
                label=name, layout=layout, compute={"module": m, "entry_point": name}
            )
            for name in ("cull_early", "cull_late", "cull_shadow")
        )

    def bind(self, uniform, gs, counters, pyramid_view) -> wgpu.GPUBindGroup:
        """Bind group over a ``GpuScene`` ``gs``, the counters buffer and the pyramid view."""
        bufs = [
            uniform,
            gs.bounds,
            gs.mesh_ids,
            gs.mesh_table,
            gs.state,
            gs.args,
            gs.remap,
            counters,
        ]
        entries = [{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(bufs)]
        entries.append({"binding": 8, "resource": pyramid_view})
        return self.device.create_bind_group(label="cull", layout=self.layout, entries=entries)


def workgroups(count: int) -> int:
    """Dispatch size for ``count`` instances (computed once per scene)."""
    return (count + WORKGROUP - 1) // WORKGROUP
