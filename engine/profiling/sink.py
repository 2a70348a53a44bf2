"""The profiler sink protocol the render graph and the frame loop call, and its null
implementation (the default: profiling off costs one attribute test per pass)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from engine.telemetry import FrameTimings

#: Pass-encoder calls that do GPU work (each is one draw to a profiler or a debugger); the
#: ``_multi_*`` ones are what wgpu-py's ``extras.multi_draw_*`` functions call.
DRAW_METHODS = (
    "draw",
    "draw_indexed",
    "draw_indirect",
    "draw_indexed_indirect",
    "dispatch_workgroups",
    "dispatch_workgroups_indirect",
    "execute_bundles",
    "_multi_draw_indirect",
    "_multi_draw_indexed_indirect",
    "_multi_draw_indirect_count",
    "_multi_draw_indexed_indirect_count",
)


@runtime_checkable
class ProfilerSink(Protocol):
    """What ``RenderGraph.execute`` and ``engine.loop.FrameLoop`` call, per frame:
    ``begin_frame``, then per pass ``begin_pass``/``end_pass``, ``end_frame`` (resolve
    queries), CPU scopes around Update/Submit/Present, ``after_submit`` after
    ``queue.submit``, ``collect`` until None. ``active`` False means the graph skips every
    call (and records no timestamp)."""

    active: bool
    gpu_available: bool

    def begin_frame(self, frame_index: int, encoder) -> None: ...

    def begin_pass(self, name: str, kind: str, encoder) -> dict | None:
        """Start a pass's scope; returns the ``timestamp_writes`` for its descriptor or None."""
        ...

    def pass_encoder(self, name: str, kind: str, pass_encoder, targets: dict | None):
        """The encoder the pass's ``record`` gets (a per-draw timing proxy, or
        ``pass_encoder`` itself); ``targets`` are the render pass's attachments."""
        ...

    def end_pass(self, name: str, kind: str, encoder) -> None: ...

    def end_frame(self, encoder) -> None: ...

    def cpu_begin(self, name: str) -> None: ...

    def cpu_end(self) -> None: ...

    def after_submit(self) -> None: ...

    def collect(self) -> FrameTimings | None:
        """The oldest finished frame's timings, or None; never blocks."""
        ...

    def drain(self) -> None: ...


class NullProfiler:
    """Profiling off: every call does nothing, no query set exists."""

    active = False
    gpu_available = False

    def begin_frame(self, frame_index: int, encoder) -> None:
        pass

    def begin_pass(self, name: str, kind: str, encoder) -> None:
        return None

    def pass_encoder(self, name: str, kind: str, pass_encoder, targets):
        return pass_encoder

    def end_pass(self, name: str, kind: str, encoder) -> None:
        pass

    def end_frame(self, encoder) -> None:
        pass

    def cpu_begin(self, name: str) -> None:
        pass

    def cpu_end(self) -> None:
        pass

    def after_submit(self) -> None:
        pass

    def collect(self) -> None:
        return None

    def drain(self) -> None:
        pass


NULL_PROFILER = NullProfiler()
