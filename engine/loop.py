"""The one frame loop: update, record, submit, then collect what finished and publish it.

The window loop, the capture loop, the tests and every benchmark call ``FrameLoop.frame``;
nothing else writes "one frame" out. After submit there is one step (``after_submit``) that
tells every readback client its copy was submitted (the profiler's query pools, the cull
counters), takes whatever has finished without waiting for the GPU, and publishes one
``engine.telemetry.FrameRecord`` per finished frame.

A frame is *finished* when its GPU timings came back (GPU profiling on, a few frames late),
when its CPU scopes closed (CPU profiling only: at the next frame's Update), or one frame
after its submit (no profiler: so that the cull counters read back meanwhile are in it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from engine.graph import FrameContext, RenderGraph
from engine.telemetry import Telemetry

PENDING_FRAMES = 256  # frame start times kept for records still in flight


class ReadbackClient(Protocol):
    """A GPU -> CPU readback the frame loop drives (e.g. ``engine.culling.stats.CullStats``).

    ``channel`` names its results in ``FrameRecord.readbacks`` (``"cull"``): the loop puts
    each client's newest result there, so a new readback needs no change here. A client may
    have an ``active`` attribute: while it is False its channel is left out of the records.
    """

    channel: str

    def after_submit(self) -> None:
        """The encoder holding this frame's copy was submitted: start its readback."""

    def collect(self):
        """The newest finished result or None; never blocks."""

    def drain(self, timeout_s: float = 1.0):
        """Shutdown: wait (bounded) for readbacks in flight; the newest result or None."""


class FrameLoop:
    """Records, submits and collects frames of ``graph``.

    Args:
        gpu: an ``engine.gpu.Gpu``.
        graph: the render graph (``graph.profiler`` may be None; ``graph.readbacks`` lists
            the readback clients its passes registered).
        telemetry: where records are published (a new ``Telemetry`` when None).
        clock: nanosecond wall clock (``time.perf_counter_ns``: the CPU scopes' clock).

    Attributes:
        index: index of the next frame.
        telemetry: the stream every view reads.
        between_frames: callables run after each frame's publication on the frame thread
            (commands queued by the console or the portal).
        wake: called by ``request_frame`` (the window's ``wake``: ends an idle wait).
        variant: the sample's variant of the frames recorded from now on (or None); each
            frame's record carries the one it was recorded with.
    """

    def __init__(
        self,
        gpu,
        graph: RenderGraph,
        *,
        telemetry: Telemetry | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
    ):
        self.gpu, self.graph, self.clock = gpu, graph, clock
        self.telemetry = telemetry if telemetry is not None else Telemetry()
        self.index = 0
        self.between_frames: list[Callable[[], None]] = []
        self.wake: Callable[[], None] | None = None
        self.variant: str | None = None
        self._requested = False
        self._starts: dict[int, tuple] = {}  # frame -> (t_ns, wall_ms, variant)
        self._last_start: int | None = None
        self._readbacks: dict[str, object] = {}  # channel -> newest result
        self._unpublished: int | None = None  # no profiler: the frame published next time

    def frame(
        self,
        output,
        time_s: float,
        update: Callable[[FrameContext], None] | None = None,
        *,
        before: Sequence = (),
        after: Sequence = (),
    ) -> FrameContext:
        """Record and submit one frame into ``output`` (a texture view) at simulated time
        ``time_s`` seconds; ``update(ctx)`` runs first, inside the ``Update`` CPU scope.
        ``before``/``after``: command buffers submitted with the frame's, around it (a
        benchmark's stopwatch). Returns the frame's context. Never waits for the GPU."""
        graph, prof, index = self.graph, self.graph.profiler, self.index
        now = self.clock()
        wall = None if self._last_start is None else (now - self._last_start) / 1e6
        self._last_start = now
        ctx = FrameContext(self.gpu.device, graph, index, time_s, graph.size, output)
        prof.cpu_begin("Update")
        if update is not None:
            update(ctx)  # (it may switch the variant: the frame is recorded with the new one)
        prof.cpu_end()
        self._starts[index] = (now, wall, self.variant)
        if len(self._starts) > PENDING_FRAMES:
            del self._starts[min(self._starts)]
        encoder = self.gpu.device.create_command_encoder(label=f"frame {index}")
        graph.execute(encoder, ctx)
        prof.cpu_begin("Submit")
        self.gpu.queue.submit([*before, encoder.finish(), *after])
        prof.cpu_end()
        self.index += 1
        self.after_submit()
        return ctx

    def request_frame(self) -> None:
        """Ask an idle window loop for a frame (any thread: e.g. a watcher that queued work
        for ``between_frames``); ``take_request`` answers it once."""
        self._requested = True
        if self.wake is not None:
            self.wake()

    def take_request(self) -> bool:
        """Whether a frame was requested since the last call (then cleared)."""
        asked, self._requested = self._requested, False
        return asked

    def present(self, surface) -> None:
        """``surface.present()`` inside the ``Present`` CPU scope (window mode)."""
        prof = self.graph.profiler
        prof.cpu_begin("Present")
        surface.present()
        prof.cpu_end()

    def after_submit(self) -> None:
        """Notify every readback client, collect what finished, publish, run queued work."""
        for client in self.graph.readbacks:
            client.after_submit()
        prof = self.graph.profiler
        prof.after_submit()
        self._collect(prof, final=False)
        for fn in self.between_frames:
            fn()

    def poll(self) -> None:
        """Collect and publish whatever finished since, without a new frame (e.g. while
        paused); never blocks."""
        self._collect(self.graph.profiler, final=True)

    def drain(self) -> None:
        """Shutdown: wait (bounded) for everything in flight and publish it."""
        prof = self.graph.profiler
        for client in self.graph.readbacks:
            self._keep(client, client.drain())
        prof.drain()
        self._collect(prof, final=True)

    def _keep(self, client: ReadbackClient, result) -> None:
        """Hold a readback client's newest result for the next record (by its channel); a
        client that says it is not ``active`` (e.g. a shadow cascade the frame no longer
        has) has none."""
        if not getattr(client, "active", True):
            self._readbacks.pop(client.channel, None)
        elif result is not None:
            self._readbacks[client.channel] = result

    def _collect(self, prof, *, final: bool) -> None:
        for client in self.graph.readbacks:
            self._keep(client, client.collect())
        if not prof.active:  # nothing to wait for: publish the last frame once its readbacks
            if self._unpublished is not None:  # had a frame's time to arrive (one frame late)
                self._publish(self._unpublished, None)
            self._unpublished = None if final else self.index - 1
            return
        while (timings := prof.collect()) is not None:
            self._publish(timings.frame_index, timings)

    def _publish(self, frame_index: int, timings) -> None:
        t_ns, wall, variant = self._starts.pop(frame_index, (0, None, self.variant))
        for stale in [f for f in self._starts if f < frame_index]:  # given up by the profiler
            del self._starts[stale]
        self.telemetry.publish(frame_index, t_ns=t_ns, wall_ms=wall, timings=timings,
                               readbacks=self._readbacks, variant=variant)  # fmt: skip
