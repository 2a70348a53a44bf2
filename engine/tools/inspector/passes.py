"""The resource viewer's GPU reduction: min, max, mean, NaN and Inf counts and a histogram of
one channel of one mip/layer of a texture (``shaders/inspect.wgsl``), read back through the
non-blocking ``engine.readback.ReadbackRing``.

Two passes, added by ``engine.tools.inspector.tool`` while something is inspected (none else):
``Inspect`` (compute: three dispatches, ``reduce`` / ``combine`` / ``histogram``) and
``Inspect.Read`` (transfer: the 288-byte result copied into the ring).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import wgpu

from engine.graph import ComputePass, TransferPass
from engine.readback import ReadbackRing
from engine.shader_registry import compute_pipelines, shader_pipeline

BINS = 64
TILE = 64  # texels per workgroup side of reduce / histogram (4x4 per thread)
RESULT_DTYPE = np.dtype(
    [
        ("lo", "<f4"),
        ("hi", "<f4"),
        ("mean", "<f4"),
        ("finite", "<u4"),
        ("nan", "<u4"),
        ("inf", "<u4"),
        ("hist_lo", "<f4"),
        ("hist_hi", "<f4"),
        ("bins", "<u4", BINS),
        ("probe", "<f4", 4),
    ]
)
PARAMS_DTYPE = np.dtype(
    [
        ("channel", "<u4"),
        ("auto_range", "<u4"),
        ("partials", "<u4"),
        ("probe_on", "<u4"),
        ("lo", "<f4"),
        ("hi", "<f4"),
        ("probe", "<u4", 2),
    ]
)

HERE = Path(__file__).parent  # this package's WGSL
PARTIAL_BYTES = 32
#: Formats the reduction reads (as ``texture_2d<f32>``: unfilterable float).
FLOAT_FORMATS = (
    "rgba16float",
    "rgba32float",
    "r32float",
    "rg32float",
    "rg16float",
    "depth32float",
    "r16float",
)
CHANNELS = {"r": 0, "g": 1, "b": 2, "a": 3}


@dataclass(frozen=True)
class TextureStats:
    """One readback of the reduction.

    Attributes:
        frame_index: the frame whose texture it describes.
        lo, hi, mean: min, max and mean of the finite values (lo > hi when there are none).
        finite, nan, inf: texel counts. hist_lo, hist_hi: the histogram's range.
        bins: ``(BINS,)`` int64 counts of finite values in ``[hist_lo, hist_hi]``,
            bin ``floor((v - lo) / (hi - lo) * BINS)`` (the top edge in the last bin).
        probe: ``(x, y, values)``: the texel under the cursor (mip texels) and its channel
            values, or None.
    """

    frame_index: int
    lo: float
    hi: float
    mean: float
    finite: int
    nan: int
    inf: int
    hist_lo: float
    hist_hi: float
    bins: np.ndarray
    probe: tuple | None = None

    @classmethod
    def from_bytes(cls, frame_index: int, data: bytes, probe=None) -> TextureStats:
        """``probe``: ``(x, y, channels)`` of the texel the reduction copied into the result."""
        r = np.frombuffer(data, RESULT_DTYPE, 1)[0]
        texel = None
        if probe is not None:
            x, y, channels = probe
            texel = (x, y, tuple(r["probe"][:channels].astype(np.float64).tolist()))
        return cls(
            frame_index,
            float(r["lo"]),
            float(r["hi"]),
            float(r["mean"]),
            int(r["finite"]),
            int(r["nan"]),
            int(r["inf"]),
            float(r["hist_lo"]),
            float(r["hist_hi"]),
            r["bins"].astype(np.int64),
            texel,
        )


class TextureReduction:
    """Pipelines and buffers of the reduction, for textures up to any size.

    Args:
        device: the ``wgpu.GPUDevice``.

    Attributes:
        result: the ``RESULT_DTYPE`` storage buffer (``COPY_SRC``) the last dispatch wrote.
    """

    def __init__(self, device: wgpu.GPUDevice):
        self.device = device
        s = wgpu.ShaderStage.COMPUTE
        self.layout = device.create_bind_group_layout(
            label="inspect",
            entries=[
                {"binding": 0, "visibility": s, "texture": {"sample_type": "unfilterable-float"}},
                {"binding": 1, "visibility": s, "buffer": {"type": "uniform"}},
                {"binding": 2, "visibility": s, "buffer": {"type": "storage"}},
                {"binding": 3, "visibility": s, "buffer": {"type": "storage"}},
            ],
        )
        self.shader = shader_pipeline(device, HERE / "inspect.wgsl", self._make)
        u = wgpu.BufferUsage
        self.params = device.create_buffer(
            label="inspect params", size=PARAMS_DTYPE.itemsize, usage=u.UNIFORM | u.COPY_DST
        )
        self.result = device.create_buffer(
            label="inspect result", size=RESULT_DTYPE.itemsize, usage=u.STORAGE | u.COPY_SRC
        )
        self.partials = None
        #: ``(x, y)`` texel (of the reduced mip) to copy into the result, or None
        self.probe: tuple[int, int] | None = None
        self._written: bytes | None = None
        self._group: tuple | None = None

    def _make(self, m):
        layout = self.device.create_pipeline_layout(bind_group_layouts=[self.layout])
        entries = ("reduce", "combine", "histogram")
        return compute_pipelines(self.device, m, entries, label="inspect", layout=layout)

    def record(self, cpass, view, size, *, channel: int, value_range=None) -> None:
        """Record the three dispatches over ``view`` (one mip and layer, ``size`` ``(w, h)``
        texels); ``value_range`` ``(lo, hi)`` fixes the histogram's range (None: min..max)."""
        gx, gy = -(-size[0] // TILE), -(-size[1] // TILE)
        need = max(1, gx * gy) * PARTIAL_BYTES
        if self.partials is None or self.partials.size < need:
            self.partials = self.device.create_buffer(
                label="inspect partials", size=need, usage=wgpu.BufferUsage.STORAGE
            )
            self._group = None
        p = np.zeros((), PARAMS_DTYPE)
        p["channel"], p["partials"] = channel, gx * gy
        p["auto_range"] = 1 if value_range is None else 0
        if value_range is not None:
            p["lo"], p["hi"] = value_range
        if self.probe is not None:
            p["probe_on"], p["probe"] = 1, self.probe
        data = p.tobytes()
        if data != self._written:  # only when the selection changes
            self.device.queue.write_buffer(self.params, 0, data)
            self._written = data
        if self._group is None or self._group[0] is not view:
            entries = [
                {"binding": 0, "resource": view},
                {"binding": 1, "resource": {"buffer": self.params}},
                {"binding": 2, "resource": {"buffer": self.partials}},
                {"binding": 3, "resource": {"buffer": self.result}},
            ]
            g = self.device.create_bind_group(label="inspect", layout=self.layout, entries=entries)
            self._group = (view, g)
        pipes = self.shader.get()
        cpass.set_bind_group(0, self._group[1])
        cpass.set_pipeline(pipes["reduce"])
        cpass.dispatch_workgroups(gx, gy, 1)
        cpass.set_pipeline(pipes["combine"])
        cpass.dispatch_workgroups(1, 1, 1)
        cpass.set_pipeline(pipes["histogram"])
        cpass.dispatch_workgroups(gx, gy, 1)


class InspectPass(ComputePass):
    """``Inspect``: the reduction of ``source()`` -> ``(view, (w, h), channel, range)``."""

    def __init__(self, reduction: TextureReduction, source, reads: tuple[str, ...]):
        super().__init__("Inspect", reads=reads)
        self.reduction, self.source = reduction, source

    def record(self, ctx, cpass) -> None:
        view, size, channel, value_range = self.source()
        self.reduction.record(cpass, view, size, channel=channel, value_range=value_range)


class StatsReadback(TransferPass):
    """``Inspect.Read``: the result (the probed texel in it) into a ``ReadbackRing``; a
    readback client of the frame loop (``channel`` ``"inspect"``:
    ``FrameRecord.readbacks["inspect"]``).

    Attributes:
        channels: how many channels of the probed texel the figures report.
    """

    channel = "inspect"

    def __init__(self, reduction: TextureReduction):
        super().__init__("Inspect.Read")
        self.reduction = reduction
        self.ring = ReadbackRing(
            reduction.device, RESULT_DTYPE.itemsize, slots=3, batch=1, label="inspect"
        )
        self.channels = 4
        self.latest: TextureStats | None = None
        self._pending: tuple | None = None  # (frame, probe key) recorded, not submitted
        self._probes: dict[int, tuple] = {}  # frame -> (x, y, channels)

    def record(self, ctx, encoder) -> None:
        self.after_submit()
        probe = self.reduction.probe
        key = None if probe is None else (*probe, self.channels)
        if self.ring.copy(encoder, self.reduction.result):
            self._pending = (ctx.frame_index, key)

    def after_submit(self) -> None:
        if self._pending is not None:
            frame, key = self._pending
            self.ring.submitted(frame)
            if key is not None:
                self._probes[frame] = key
            self._pending = None

    def _take(self, results) -> TextureStats | None:
        for frame_index, data in results:
            probe = self._probes.pop(frame_index, None)
            self.latest = TextureStats.from_bytes(frame_index, data, probe)
        if len(self._probes) > 16:  # dropped readbacks leave theirs behind
            for k in sorted(self._probes)[:-16]:
                del self._probes[k]
        return self.latest

    def collect(self) -> TextureStats | None:
        """The newest finished readback (never blocks)."""
        self.after_submit()
        return self._take(self.ring.poll())

    def drain(self, timeout_s: float = 1.0) -> TextureStats | None:
        self.after_submit()
        return self._take(self.ring.drain(timeout_s))


def format_stats(s: TextureStats, *, probe: bool = True, ceiling: float | None = None) -> str:
    """``min .. max, mean, NaN, Inf`` of ``s`` in one line (and the probed texel, unless
    ``probe`` is False). ``ceiling``: the texture's ``TextureDesc.ceiling``; a max (or a
    probed value) at it reads ``>=C`` and the mean is then a lower bound (``>=``)."""
    if s.finite == 0:
        out = f"no finite values; NaN {s.nan:,} Inf {s.inf:,}"
    else:
        sat = ceiling is not None and s.hi >= ceiling
        hi = f">={ceiling:g}" if sat else f"{s.hi:.6g}"
        mean = f">={s.mean:.6g}" if sat else f"{s.mean:.6g}"
        out = (
            f"min {s.lo:.6g} max {hi} mean {mean}; finite {s.finite:,} NaN {s.nan:,} Inf {s.inf:,}"
        )
    if probe and s.probe is not None:
        x, y, values = s.probe
        out += f"; at ({x}, {y}): " + " ".join(at_ceiling(v, ceiling) for v in values)
    return out


def at_ceiling(v: float, ceiling: float | None, digits: int = 6) -> str:
    """``v`` with ``digits`` significant digits, or ``>=C`` when it reached ``ceiling``."""
    return f">={ceiling:g}" if ceiling is not None and v >= ceiling else f"{v:.{digits}g}"
