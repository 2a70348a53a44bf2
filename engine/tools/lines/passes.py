"""Debug lines from any subsystem: world-space lines, boxes, spheres and frusta submitted from
Python in any frame, drawn in one instanced draw (``Lines``), depth-tested or on top, for one
frame or kept for N seconds.

    lines = app.tool(LinesTool).lines            # engine.tools.lines.tool
    lines.box((0, 0, 0), (1, 2, 1), (1, 0, 0))   # this frame only
    lines.sphere((5, 1, 0), 0.5, (0, 1, 0), seconds=3.0, on_top=True)

Colours are linear RGB(A) written to the output (after tone mapping: what you pass is what
you see). The segments of a frame are uploaded once and drawn as ``draw(2, N)``; with none,
the pass is disabled (no pass, no upload).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import wgpu

from engine.graph import OUTPUT, RenderPass
from engine.passes.frustum_lines import EDGES, frustum_corners
from engine.shader_registry import shader_pipeline

HERE = Path(__file__).parent  # this package's WGSL

SEGMENT_FLOATS = 12  # a (xyz, on_top), b (xyz, 0), colour (rgba): shaders/debug_lines.wgsl
BOX_EDGES = EDGES  # corner k: x = k & 1, y = (k >> 1) & 1, z = k >> 2: the same 12 edges
CIRCLE_SEGMENTS = 24


def segments(a, b, color, *, on_top: bool = False) -> np.ndarray:
    """``(N, 12)`` float32 rows of the segments ``a[i] -> b[i]`` (``(N, 3)`` or ``(3,)``
    world points) in ``color`` (``(3,)``, ``(4,)`` or ``(N, 3|4)`` linear)."""
    a = np.atleast_2d(np.asarray(a, np.float32))
    b = np.atleast_2d(np.asarray(b, np.float32))
    n = max(len(a), len(b))
    c = np.atleast_2d(np.asarray(color, np.float32))
    if c.shape[1] == 3:
        c = np.concatenate([c, np.ones((len(c), 1), np.float32)], 1)
    out = np.zeros((n, SEGMENT_FLOATS), np.float32)
    out[:, 0:3], out[:, 3] = a, 1.0 if on_top else 0.0
    out[:, 4:7] = b
    out[:, 8:12] = c
    return out


def box_corners(lo, hi) -> np.ndarray:
    """``(8, 3)`` corners of the axis-aligned box ``lo``..``hi`` in ``BOX_EDGES`` order."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    return np.array([[(hi if k >> i & 1 else lo)[i] for i in range(3)] for k in range(8)])


def circle_points(centers, radii, axis: int, n: int = CIRCLE_SEGMENTS) -> np.ndarray:
    """``(M, n + 1, 3)`` points of circles of ``radii`` round ``centers`` (``(M, 3)``) in
    the plane normal to world ``axis`` (0 x, 1 y, 2 z), closed (last = first)."""
    t = np.linspace(0.0, 2 * np.pi, n + 1)
    u, v = [(1, 2), (0, 2), (0, 1)][axis]
    p = np.zeros((len(centers), n + 1, 3))
    p[:, :, u] = np.cos(t)
    p[:, :, v] = np.sin(t)
    return np.asarray(centers, np.float64)[:, None, :] + np.asarray(radii)[:, None, None] * p


class DebugLines:
    """The segments submitted so far and how long each batch stays.

    ``seconds=0`` draws a batch in the next frame only; ``seconds > 0`` keeps it for that
    long from its first frame (frame time: the simulated clock in captures).
    """

    def __init__(self):
        self._batches: list[list] = []  # [rows (N, 12), seconds, first frame time or None]

    def add(self, rows: np.ndarray, seconds: float = 0.0) -> None:
        """Submit ``(N, 12)`` rows made by ``segments``."""
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0, got {seconds}")
        if len(rows):
            self._batches.append([rows, float(seconds), None])

    def line(self, a, b, color=(1.0, 1.0, 1.0), *, seconds=0.0, on_top=False) -> None:
        """One segment (or ``(N, 3)`` of them) from ``a`` to ``b``, world units."""
        self.add(segments(a, b, color, on_top=on_top), seconds)

    def box(self, lo, hi, color=(1.0, 1.0, 1.0), *, seconds=0.0, on_top=False) -> None:
        """The 12 edges of the axis-aligned box ``lo``..``hi``."""
        c = box_corners(lo, hi)
        e = np.array(BOX_EDGES)
        self.add(segments(c[e[:, 0]], c[e[:, 1]], color, on_top=on_top), seconds)

    def spheres(self, centers, radii, colors, *, seconds=0.0, on_top=False) -> None:
        """Spheres as three great circles each (``CIRCLE_SEGMENTS`` segments a circle):
        ``centers`` ``(M, 3)``, ``radii`` ``(M,)``, ``colors`` ``(3,)`` or ``(M, 3|4)``."""
        centers = np.atleast_2d(np.asarray(centers, np.float64))
        radii = np.atleast_1d(np.asarray(radii, np.float64))
        if len(centers) == 0:
            return
        cols = np.atleast_2d(np.asarray(colors, np.float32))
        if len(cols) == 1:
            cols = np.repeat(cols, len(centers), 0)
        rows = []
        for axis in range(3):
            p = circle_points(centers, radii, axis)
            a, b = p[:, :-1].reshape(-1, 3), p[:, 1:].reshape(-1, 3)
            rows.append(segments(a, b, np.repeat(cols, CIRCLE_SEGMENTS, 0), on_top=on_top))
        self.add(np.concatenate(rows), seconds)

    def sphere(self, center, radius, color=(1.0, 1.0, 1.0), *, seconds=0.0, on_top=False):
        """One sphere (see ``spheres``)."""
        self.spheres([center], [radius], color, seconds=seconds, on_top=on_top)

    def frustum(self, inv_view_proj, color=(1.0, 0.75, 0.0), *, far_depth=1e-3, near_depth=1.0,
                seconds=0.0, on_top=False) -> None:  # fmt: skip
        """The 12 edges of a camera's volume: ``inv_view_proj`` ``(4, 4)`` clip -> world,
        NDC depth from ``near_depth`` to ``far_depth`` (reverse-Z perspective: 1 is the near
        plane; an orthographic volume is 1 .. 0)."""
        c = frustum_corners(inv_view_proj, far_depth)
        if near_depth != 1.0:
            c[:4] = frustum_corners(inv_view_proj, near_depth)[:4]
        e = np.array(EDGES)
        self.add(segments(c[e[:, 0]], c[e[:, 1]], color, on_top=on_top), seconds)

    def clear(self) -> None:
        """Drop everything, kept batches too."""
        self._batches.clear()

    def pending(self) -> int:
        """Segments the next frame draws."""
        return sum(len(b[0]) for b in self._batches)

    def take(self, now: float) -> np.ndarray:
        """The ``(N, 12)`` rows to draw in the frame at time ``now`` (seconds); one-frame
        batches and expired ones are dropped afterwards."""
        keep, rows = [], []
        for batch in self._batches:
            if batch[2] is None:
                batch[2] = now
            if batch[1] > 0 and now - batch[2] >= batch[1]:
                continue
            rows.append(batch[0])
            if batch[1] > 0:
                keep.append(batch)
        self._batches = keep
        if not rows:
            return np.zeros((0, SEGMENT_FLOATS), np.float32)
        return np.concatenate(rows)


class LinesPass(RenderPass):
    """``Lines``: this frame's segments over the output, depth-tested against ``depth_name``
    (a graph depth texture of the output's size) or, without one, all on top.

    Args:
        device: the ``wgpu.GPUDevice``; graph: the ``RenderGraph``.
        depth_name: the reverse-Z depth to test against (``frame.depth``) or None.

    Attributes:
        view_proj: ``(4, 4)`` world -> clip of this frame's camera (set before recording).
        count: segments uploaded for this frame.
    """

    def __init__(self, device, graph, depth_name: str | None):
        super().__init__("Lines", enabled=False)
        self.device, self.graph, self.depth_name = device, graph, depth_name
        self.reads = (OUTPUT,) + ((depth_name,) if depth_name else ())
        self.writes = (OUTPUT,)
        fmt = graph.output_format
        depth = None
        if depth_name is not None:
            depth = {"format": "depth32float", "depth_write_enabled": False,
                     "depth_compare": "greater-equal"}  # fmt: skip
        self.shader = shader_pipeline(
            device, HERE / "debug_lines.wgsl", lambda m: self._make(m, fmt, depth)
        )
        self.shader.on_reload(lambda: setattr(self, "_group", None))
        u = wgpu.BufferUsage
        self.uniform = device.create_buffer(label="lines", size=64, usage=u.UNIFORM | u.COPY_DST)
        self.buffer = None
        self._group = None
        self.view_proj = np.eye(4)
        self.count = 0

    def _make(self, m, fmt, depth):
        return self.device.create_render_pipeline(
            label="debug lines",
            layout="auto",
            vertex={"module": m, "entry_point": "vs_lines"},
            primitive={"topology": "line-list"},
            depth_stencil=depth,
            fragment={"module": m, "entry_point": "fs_lines", "targets": [{"format": fmt}]},
        )

    def upload(self, rows: np.ndarray) -> None:
        """This frame's rows (``(N, 12)`` float32) and ``view_proj``; enables the pass
        when there are any."""
        self.count = len(rows)
        self.enabled = self.count > 0
        if not self.count:
            return
        need = rows.nbytes
        if self.buffer is None or self.buffer.size < need:
            size = max(4096, 1 << (need - 1).bit_length())
            self.buffer = self.device.create_buffer(
                label="lines segments", size=size,
                usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST,
            )  # fmt: skip
            self._group = None
        q = self.device.queue
        q.write_buffer(self.buffer, 0, np.ascontiguousarray(rows, np.float32).tobytes())
        q.write_buffer(self.uniform, 0, np.asarray(self.view_proj, np.float32).T.tobytes())

    def targets(self, ctx) -> dict:
        out = {
            "color_attachments": [
                {"view": ctx.output, "load_op": "load", "store_op": "store"}
            ]
        }  # fmt: skip
        if self.depth_name is not None:
            out["depth_stencil_attachment"] = {
                "view": self.graph.view(self.depth_name),
                "depth_load_op": "load",
                "depth_store_op": "store",
            }
        return out

    def record(self, ctx, rpass) -> None:
        if self._group is None:
            self._group = self.device.create_bind_group(
                layout=self.shader.get().get_bind_group_layout(0),
                entries=[
                    {"binding": 0, "resource": {"buffer": self.uniform}},
                    {"binding": 1, "resource": {"buffer": self.buffer}},
                ],
            )
        rpass.set_pipeline(self.shader.get())
        rpass.set_bind_group(0, self._group)
        rpass.draw(2, self.count)
