"""Pipeline statistics per pass: vertex / fragment / compute shader invocations and clipper
primitives out, read back a few frames late without stalling (``engine.readback.ReadbackRing``).

Needs the native feature ``pipeline-statistics-query`` (Vulkan's
``VK_QUERY_TYPE_PIPELINE_STATISTICS``); without it every call is a no-op and every value reads
``None``, shown as ``n/a``. One query per scope: ``begin(pass, name)`` right after the pass is
begun, ``end(pass)`` right before it ends; or around each draw inside a pass (per-draw
statistics: scopes may follow each other in a pass, never nest or span passes). Per frame:
``resolve(encoder)`` after the last pass, ``submitted(frame_index)`` after ``queue.submit``,
``collect()`` any time (never blocks).

The wgpu-py 0.32 helper ``extras.begin_pipeline_statistics_query`` prints its arguments, so
this module calls the pass encoder's underlying method (``_begin_pipeline_statistics_query``),
the one the helper wraps.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass

import wgpu

from engine.readback import ReadbackRing

log = logging.getLogger("lantern")

FEATURE = "pipeline-statistics-query"
#: Statistics collected, in the order wgpu-native writes them (ascending enum value).
STATISTICS = (
    "vertex-shader-invocations",
    "clipper-primitives-out",
    "fragment-shader-invocations",
    "compute-shader-invocations",
)


@dataclass(frozen=True)
class PassStatistics:
    """Counts for one pass; None when the adapter cannot count (shown ``n/a``).

    Attributes:
        vertex_invocations: vertex shader invocations (drivers may reuse post-transform
            vertices, so indexed draws can count fewer than the indices drawn).
        clipper_primitives_out: primitives that left the clipper (reached rasterisation).
        fragment_invocations: fragment shader invocations (helper invocations and early-Z
            make this driver-dependent around edges).
        compute_invocations: compute shader invocations (threads, not workgroups).
    """

    name: str
    vertex_invocations: int | None
    clipper_primitives_out: int | None
    fragment_invocations: int | None
    compute_invocations: int | None

    def ns_per_fragment(self, gpu_ns: float | None) -> float | None:
        """GPU nanoseconds per fragment invocation for a pass that took ``gpu_ns``; None
        when either is unknown or no fragment ran."""
        if gpu_ns is None or not self.fragment_invocations:
            return None
        return gpu_ns / self.fragment_invocations


def fmt(value: int | float | None) -> str:
    """``n/a`` for None, else the value with thousands separators."""
    if value is None:
        return "n/a"
    return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"


class PipelineStatistics:
    """Per-pass pipeline statistics through a query set and a readback ring.

    Args:
        device: a ``wgpu.GPUDevice``; statistics exist only if it was created with
            ``pipeline-statistics-query`` (``available``).
        capacity: passes per frame; further passes in a frame are counted in ``dropped``.
        slots: readback slots in flight (results come back up to ``slots`` frames late).
    """

    def __init__(self, device: wgpu.GPUDevice, *, capacity: int = 32, slots: int = 4):
        self.available = FEATURE in device.features
        self.capacity = capacity
        self.dropped = 0
        self._names: list[str] = []
        self._open = False
        self._pending: dict[int, list[str]] = {}
        self._recorded: list[str] | None = None
        if not self.available:
            return
        from wgpu.backends.wgpu_native.extras import create_statistics_query_set

        self._stride = 8 * len(STATISTICS)
        self._qs = create_statistics_query_set(
            device, label="pipeline statistics", count=capacity, statistics=list(STATISTICS)
        )
        U = wgpu.BufferUsage
        self._resolve = device.create_buffer(
            label="pipeline statistics resolve",
            size=self._stride * capacity,
            usage=U.QUERY_RESOLVE | U.COPY_SRC,
        )
        self._ring = ReadbackRing(
            device, self._stride * capacity, slots=slots, label="pipeline statistics"
        )

    def begin(self, pass_encoder, name: str) -> None:
        """Start counting for the pass ``pass_encoder`` (render or compute) named ``name``."""
        if not self.available:
            return
        if self._open:
            raise RuntimeError("PipelineStatistics.begin: the previous pass was not ended")
        if len(self._names) >= self.capacity:
            self.dropped += 1
            return
        pass_encoder._begin_pipeline_statistics_query(self._qs, len(self._names))
        self._names.append(name)
        self._open = True

    def end(self, pass_encoder) -> None:
        """Stop counting for the pass begun last (call before ``pass_encoder.end()``)."""
        if self.available and self._open:
            pass_encoder._end_pipeline_statistics_query()
            self._open = False

    def resolve(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """After the frame's last pass: resolve this frame's queries into the readback ring."""
        names, self._names = self._names, []
        if not self.available or not names:
            return
        n = len(names)
        encoder.resolve_query_set(self._qs, 0, n, self._resolve, 0)
        if self._ring.copy(encoder, self._resolve, 0, self._stride * n):
            self._recorded = names

    def submitted(self, frame_index: int) -> None:
        """Call after ``queue.submit`` of the encoder ``resolve`` recorded into."""
        if self._recorded is not None:
            self._pending[frame_index] = self._recorded
            self._recorded = None
            self._ring.submitted(frame_index)

    def _decode(self, results) -> list[tuple[int, list[PassStatistics]]]:
        out = []
        for frame, data in results:
            names = self._pending.pop(frame, [])
            rows = []
            for k, name in enumerate(names):
                v, c, f, cs = struct.unpack_from("<4Q", data, k * self._stride)
                rows.append(PassStatistics(name, v, c, f, cs))
            out.append((frame, rows))
        return out

    def collect(self) -> list[tuple[int, list[PassStatistics]]]:
        """Finished frames as ``(frame_index, [PassStatistics per pass])``, oldest first;
        never blocks. Empty when unavailable."""
        if not self.available:
            return []
        return self._decode(self._ring.poll())

    def drain(self, timeout_s: float = 1.0) -> list[tuple[int, list[PassStatistics]]]:
        """Shutdown / tests: wait up to ``timeout_s`` for every frame in flight."""
        if not self.available:
            return []
        return self._decode(self._ring.drain(timeout_s))

    def unavailable(self, names: list[str]) -> list[PassStatistics]:
        """Rows of ``None`` (``n/a``) for passes on an adapter without the feature."""
        return [PassStatistics(n, None, None, None, None) for n in names]
