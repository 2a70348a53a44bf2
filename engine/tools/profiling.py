"""The profiling switch: ``--gpu-profile [draws]`` / ``--profile`` at start-up and the
``profile`` and ``stats`` commands at run time, over the render graph's profiler sink.

Profiling itself lives in ``engine.profiling`` (the producers); this tool only creates and
drops the ``FrameProfiler`` between frames and keeps ``Session.profiling`` and the GPU clock
offset true. The offset (``cpu_ns - gpu_ns``) is measured once, when GPU timing starts, and
kept in the session: the live flame chart, the JSON Lines file and the trace all use it.
"""

from __future__ import annotations

import logging

from engine.commands import Choice

log = logging.getLogger("lantern")


class ProfilingTool:
    """Switches GPU (timestamp queries), CPU (scopes) and per-draw GPU timing.

    Args:
        batch: frames read back per map (``engine.profiling.gpu``); None picks 1 in captures
            (offline: short captures still show their timings) and 8 in a window.
    """

    name = "profiling"

    def __init__(self, *, batch: int | None = None):
        self.batch = batch

    def install(self, ctx) -> None:
        self.ctx = ctx
        if self.batch is None:
            self.batch = 1 if ctx.option("capture") else 8
        gpu, cpu = ctx.option("gpu_profile"), bool(ctx.option("profile"))
        if gpu or cpu:
            self.set_profiling(gpu=bool(gpu), cpu=cpu, draws=gpu == "draws")
        ctx.commands.register(
            "profile",
            self._profile_command,
            args=[Choice("gpu", "cpu", "draws"), Choice("on", "off", boolean=True)],
            help="switch GPU timestamp / CPU scope / per-draw GPU timing",
        )
        ctx.commands.register(
            "stats", self._stats_command, args=[Choice("reset")], help="forget mean/median/max"
        )

    def close(self) -> None:
        """Nothing to undo: the profiler stays attached so the shutdown views read it."""

    @property
    def profiler(self):
        """The ``FrameProfiler`` when profiling is on, else None."""
        prof = self.ctx.graph.profiler
        return prof if prof.active else None

    def set_profiling(
        self, *, gpu: bool | None = None, cpu: bool | None = None, draws: bool | None = None
    ) -> str:
        """Turn GPU and/or CPU profiling, and per-draw GPU timing (``draws``, implies GPU),
        on or off between frames (None keeps the current state). Returns a one-line
        description."""
        ctx, prof = self.ctx, self.profiler
        want_gpu = (prof is not None and prof.gpu is not None) if gpu is None else gpu
        want_cpu = (prof is not None and prof.cpu is not None) if cpu is None else cpu
        want_draws = (prof is not None and prof.draws is not None) if draws is None else draws
        if gpu is False and draws is None:
            want_draws = False  # draws are GPU timings: off with them
        want_gpu = want_gpu or want_draws
        if prof is not None:
            ctx.loop.drain()  # publish what is in flight before the pools go away
        if want_gpu or want_cpu:
            from engine.profiling import FrameProfiler

            prof = FrameProfiler(
                ctx.gpu, gpu=want_gpu, cpu=want_cpu, batch=self.batch, draws=want_draws
            )
            ctx.graph.profiler = prof
            fields = {"profiling": prof.session_info(ctx.graph)}
            if prof.gpu_available and ctx.telemetry.session.gpu_clock_offset_ns is None:
                cal = prof.gpu.calibrate()  # waits for an idle queue: once, at GPU start-up
                if cal is not None:
                    fields.update(gpu_clock_offset_ns=cal[0], gpu_clock_uncertainty_ns=cal[1])
            ctx.telemetry.update_session(**fields)
        else:
            ctx.graph.profiler = None
            ctx.telemetry.update_session(profiling=None)
        draws_on = want_draws and prof is not None and prof.draws is not None
        return (
            f"profiling: GPU {'on' if want_gpu else 'off'}, CPU {'on' if want_cpu else 'off'}"
            + (", draws on" if draws_on else "")
        )

    def _profile_command(self, which: str, on: bool) -> str:
        return self.set_profiling(**{which: on})

    def _stats_command(self, _: str) -> str:
        self.ctx.telemetry.reset_stats()
        return "stats: window reset"
