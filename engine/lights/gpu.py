"""The lights on the GPU: the light buffer (uploaded by dirty ranges), the cluster grid and its
per-frame uniform (``LightParams``), the cluster lists and the counter block ``lights``.

The grid's constants are read from ``shaders/lights_common.wgsl`` (the one place they are
spelled); ``cluster_view`` computes the uniform's planes and slice depths, which the numpy
reference (``engine.lights.reference``) reads as the shader does.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass

import numpy as np
import wgpu

from engine.counters import CounterReadback, Counts, counter_names
from engine.lights.model import LIGHT_DTYPE, LightSet
from engine.resources import shader_path
from engine.textfile import read_utf8

log = logging.getLogger("lantern")

_CONST = re.compile(r"^const\s+(CLUSTER_\w+)\s*:\s*u32\s*=\s*(\d+)u\s*;", re.M)
_GRID = {k: int(v) for k, v in _CONST.findall(read_utf8(shader_path("lights_common.wgsl")))}
#: Tiles across, tiles down, depth slices, most lights a cluster holds.
CLUSTER_X, CLUSTER_Y, CLUSTER_Z = _GRID["CLUSTER_X"], _GRID["CLUSTER_Y"], _GRID["CLUSTER_Z"]
CLUSTER_CAP = _GRID["CLUSTER_CAP"]
CLUSTERS = CLUSTER_X * CLUSTER_Y * CLUSTER_Z
#: The counter block ``lights`` (shaders/light_cluster.wgsl ``L_*``): tested, visible, pairs,
#: dropped, at_cap, largest, eye_inside.
COUNTER_NAMES = counter_names(shader_path("light_cluster.wgsl"), "L_")
#: Which lights a fragment is shaded with (shaders/lights_common.wgsl LIGHTS_*).
LIGHTS_NONE, LIGHTS_ALL, LIGHTS_CLUSTERED = 0, 1, 2
#: The light paths (``FrameSettings.light_path``): which modes Main and BLEND shade with.
PATH_MODES = {
    "forward": (LIGHTS_ALL, LIGHTS_ALL),
    "clustered": (LIGHTS_CLUSTERED, LIGHTS_CLUSTERED),
    "deferred": (LIGHTS_NONE, LIGHTS_CLUSTERED),  # Lights.Deferred shades the opaque pixels
}
#: The ``LightParams`` uniform (shaders/lights_common.wgsl), field by field.
PARAMS_DTYPE = np.dtype(
    [
        ("view", "<f4", (4, 4)),  # world -> view, column-major
        ("x_planes", "<f4", (CLUSTER_X + 1, 4)),  # (a, b, 0, 0): tile column k's left plane
        ("y_planes", "<f4", (CLUSTER_Y + 1, 4)),  # (a, b, 0, 0): tile row k's upper plane
        ("slices", "<f4", (CLUSTER_Z + 1, 4)),  # (z_k, 0, 0, 0)
        ("grid", "<f4", 4),  # X / width, Y / height, Z / log2(far / near), near
        ("modes", "<u4", 4),  # light count, Main's LIGHTS_*, BLEND's, 0
    ]
)
PARAMS_SIZE = PARAMS_DTYPE.itemsize
_F = wgpu.ShaderStage.FRAGMENT


@dataclass(frozen=True)
class ClusterView:
    """What the assignment reads of one frame's camera, float32 as the uniform holds it.

    Attributes:
        view: ``(4, 4)`` world -> view (looking down -Z).
        x_planes: ``(CLUSTER_X + 1, 2)`` unit ``(a, b)``: tile column k's left plane
            ``a x + b z = 0`` in view space (positive: to its right); the last is the right
            edge of the screen.
        y_planes: ``(CLUSTER_Y + 1, 2)``: tile row k's upper plane ``a y + b z = 0``
            (positive: above it), row 0 at the top.
        slices: ``(CLUSTER_Z + 1,)`` view depths: slice k begins at ``slices[k]``;
            ``slices[0]`` is the near plane, ``slices[-1]`` far.
        size: the output ``(width, height)`` in pixels.
    """

    view: np.ndarray
    x_planes: np.ndarray
    y_planes: np.ndarray
    slices: np.ndarray
    size: tuple[int, int]

    @property
    def near(self) -> np.float32:
        return self.slices[0]


def cluster_view(view, proj, size, near: float, far: float) -> ClusterView:
    """The grid of a camera: ``view`` world -> view, ``proj`` its (jittered) reverse-Z
    projection, ``size`` the output in pixels, slices exponential from ``near`` to ``far``
    (Olsson et al. 2012; ``far`` is raised to at least ``2 near``).

    Tile column k spans NDC x in ``[-1 + 2k / X, -1 + 2(k + 1) / X]``; the plane of NDC
    x = c is ``clip.x - c clip.w = 0``, i.e. ``(P00, P02 + c) . (x, z) = 0`` for the
    projection's rows (P02 holds TAA's jitter); rows likewise with P11, P12 and NDC y
    = ``1 - 2k / Y``.
    """
    p = np.asarray(proj, np.float64)
    cx = -1.0 + 2.0 * np.arange(CLUSTER_X + 1) / CLUSTER_X
    cy = 1.0 - 2.0 * np.arange(CLUSTER_Y + 1) / CLUSTER_Y
    xp = np.stack([np.full_like(cx, p[0, 0]), p[0, 2] + cx], 1)
    yp = np.stack([np.full_like(cy, p[1, 1]), p[1, 2] + cy], 1)
    xp /= np.linalg.norm(xp, axis=1, keepdims=True)
    yp /= np.linalg.norm(yp, axis=1, keepdims=True)
    far = max(float(far), 2.0 * near)
    slices = near * (far / near) ** (np.arange(CLUSTER_Z + 1) / CLUSTER_Z)
    return ClusterView(
        np.asarray(view, np.float32),
        xp.astype(np.float32),
        yp.astype(np.float32),
        slices.astype(np.float32),
        (int(size[0]), int(size[1])),
    )


def params_bytes(cv: ClusterView, count: int, modes: tuple[int, int]) -> bytes:
    """The ``LightParams`` uniform (``PARAMS_DTYPE``) of ``cv`` with ``count`` lights and the
    (Main, BLEND) shading modes."""
    near, far = float(cv.slices[0]), float(cv.slices[-1])
    p = np.zeros((), PARAMS_DTYPE)
    p["view"] = cv.view.T  # column-major
    p["x_planes"][:, :2] = cv.x_planes
    p["y_planes"][:, :2] = cv.y_planes
    p["slices"][:, 0] = cv.slices
    w, h = cv.size
    p["grid"] = (CLUSTER_X / w, CLUSTER_Y / h, CLUSTER_Z / math.log2(far / near), near)
    p["modes"] = (count, *modes, 0)
    return p.tobytes()


def light_layout(device: wgpu.GPUDevice) -> wgpu.GPUBindGroupLayout:
    """The lights' bind group layout (shaders/mesh_lights.wgsl): the uniform, the lights,
    the cluster counts and lists, read by fragment shaders."""
    ro = {"type": "read-only-storage"}
    return device.create_bind_group_layout(
        label="lights",
        entries=[
            {"binding": 0, "visibility": _F, "buffer": {"type": "uniform"}},
            {"binding": 1, "visibility": _F, "buffer": ro},
            {"binding": 2, "visibility": _F, "buffer": ro},
            {"binding": 3, "visibility": _F, "buffer": ro},
        ],
    )


class LightStats(CounterReadback):
    """The counter block ``lights``, read back a few frames late without stalling; logs one
    warning when clusters first reach the cap (lights were dropped from them) and one when
    they are back under it."""

    def __init__(self, device: wgpu.GPUDevice, **kw):
        super().__init__(device, "lights", COUNTER_NAMES, **kw)
        self.overflowing = False

    def _take(self, results) -> None:
        super()._take(results)
        c: Counts | None = self.latest
        if c is None:
            return
        over = c.dropped > 0
        if over and not self.overflowing:
            log.warning(
                "lights: %d cluster(s) at the cap of %d lights (largest wants %d): %d "
                "light-cluster pair(s) dropped, so some lights are missing there; fewer or "
                "smaller lights (range) fix it",
                c.at_cap, CLUSTER_CAP, c.largest, c.dropped,
            )  # fmt: skip
        elif self.overflowing and not over:
            log.info("lights: no cluster at the cap any more")
        self.overflowing = over


class GpuLights:
    """The light buffer and the cluster buffers of one ``LightSet``.

    ``upload()`` (every frame) writes only the rows changed since the last call
    (``LightSet.take_dirty``) and grows the buffer (to the next power of two, all rows
    written again) when the set outgrew it; ``write_params`` writes the per-frame uniform.

    Args:
        device: the ``wgpu.GPUDevice``. lights: the ``LightSet``.
        layout: ``light_layout(device)`` (the mesh pipelines' group 4).

    Attributes:
        buffer: the lights (``LIGHT_DTYPE`` records); params: the ``LightParams`` uniform;
        counts: ``(CLUSTERS,)`` u32 demand per cluster; lists: ``(CLUSTERS, CLUSTER_CAP)``
        u32 light indices; counters: the seven ``lights`` counters; capacity: rows the
        buffer holds.
    """

    def __init__(self, device: wgpu.GPUDevice, lights: LightSet, layout):
        self.device, self.lights, self.layout = device, lights, layout
        b = wgpu.BufferUsage
        rw = b.STORAGE | b.COPY_DST | b.COPY_SRC
        self.params = device.create_buffer(
            label="light params", size=PARAMS_SIZE, usage=b.UNIFORM | b.COPY_DST
        )
        self.counts = device.create_buffer(label="light cluster counts", size=4 * CLUSTERS,
                                           usage=rw)  # fmt: skip
        self.lists = device.create_buffer(
            label="light cluster lists",
            size=4 * CLUSTERS * CLUSTER_CAP,
            usage=b.STORAGE | b.COPY_SRC,
        )
        self.counters = device.create_buffer(
            label="light counters", size=4 * len(COUNTER_NAMES), usage=rw
        )
        self.capacity = 0
        self.buffer = None
        self._grow(max(lights.count, 64))
        self.group = self._group()

    @property
    def count(self) -> int:
        return self.lights.count

    def _grow(self, n: int) -> None:
        self.capacity = 1 << max(6, (n - 1).bit_length())
        self.buffer = self.device.create_buffer(
            label="lights",
            size=self.capacity * LIGHT_DTYPE.itemsize,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC,
        )
        self.lights.mark_all()

    def _group(self) -> wgpu.GPUBindGroup:
        return self.device.create_bind_group(
            label="lights",
            layout=self.layout,
            entries=[
                {"binding": i, "resource": {"buffer": buf}}
                for i, buf in enumerate((self.params, self.buffer, self.counts, self.lists))
            ],
        )

    def upload(self) -> int:
        """Write the changed rows (growing the buffer first if needed); returns the rows
        written (0 on a frame without changes)."""
        if self.lights.count > self.capacity:
            self._grow(self.lights.count)
            self.group = self._group()
        written = 0
        q = self.device.queue
        for a, b in self.lights.take_dirty():
            q.write_buffer(self.buffer, a * LIGHT_DTYPE.itemsize, self.lights.records(a, b))
            written += b - a
        return written

    def write_params(self, cv: ClusterView, modes: tuple[int, int]) -> None:
        """This frame's ``LightParams`` (``modes``: Main's and BLEND's ``LIGHTS_*``)."""
        n = self.lights.count
        modes = modes if n else (LIGHTS_NONE, LIGHTS_NONE)
        self.device.queue.write_buffer(self.params, 0, params_bytes(cv, n, modes))
