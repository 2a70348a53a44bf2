"""The sample runner: one command line, one frame loop, window or headless capture.

A sample subclasses ``Sample``, adds passes to the render graph in ``build`` and moves its
scene in ``update``; ``main(MySample)`` does everything else (GPU setup, window or capture,
profiling, HUD, shutdown reports).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import time
from typing import ClassVar

import wgpu

from .cli import OVERLAY_MODES, build_parser, check_output_path, fail
from .gpu import GpuError, create_gpu
from .graph import FrameContext, RenderGraph
from .surfaces import OffscreenTarget, SurfaceError, WindowSurface

log = logging.getLogger("lantern")

KEY_ESCAPE, KEY_F1, KEY_F2 = 256, 290, 291  # glfw key codes (glfw is not imported headless)
CAPTURE_FRAMES = 60
CAPTURE_DT = 1.0 / 60.0  # simulated seconds per frame in captures: deterministic by index


class Sample:
    """Base class of every sample.

    Class attributes:
        name: the module's short name, e.g. ``"s01"``.
        description: one line for ``--help``. ``python -m samples`` lists the first line of
            the module docstring instead (it reads files, importing no GPU code); keep the two
            alike, e.g. ``description = __doc__.splitlines()[0]``.
    """

    name: ClassVar[str] = "sample"
    description: ClassVar[str] = ""

    @classmethod
    def add_arguments(cls, parser) -> None:
        """Add sample-specific options to the shared ``argparse`` parser."""

    def __init__(self, app: App):
        self.app = app

    def build(self, graph: RenderGraph) -> None:
        """Add this sample's passes to ``graph`` (called once)."""
        raise NotImplementedError

    def update(self, ctx: FrameContext) -> None:
        """Advance the scene to ``ctx.time`` before the frame is recorded."""

    def on_key(self, key: int) -> None:
        """A key (glfw key code) was pressed in the window."""

    def report(self) -> str | None:
        """Extra lines for the shutdown report (e.g. the cull counters), or None."""
        return None

    def close(self) -> None:
        """Release resources at shutdown."""


class App:
    """What a running sample can reach: ``gpu``, ``args``, ``graph``, ``profiler``, ``hud``,
    ``cull_stats``."""

    def __init__(
        self, gpu, args, graph: RenderGraph, prog: str, interrupt: Interrupt | None = None
    ):
        self.gpu = gpu
        self.args = args
        self.graph = graph
        self.prog = prog
        self.profiler = None  # engine.profiling.FrameProfiler when --gpu-profile/--profile
        self.hud = None  # engine.debug.hud.Hud
        self.cull_stats = None  # set by culling samples: .latest -> CullCounts | None
        self.window = None  # engine.surfaces.WindowSurface in window mode
        self.interrupt = interrupt or Interrupt()  # Ctrl-C: the frame loop ends after this frame
        self.overlay_mode = args.overlay

    def cycle_overlay(self) -> str:
        i = OVERLAY_MODES.index(self.overlay_mode)
        self.overlay_mode = OVERLAY_MODES[(i + 1) % len(OVERLAY_MODES)]
        if self.hud is not None:
            self.hud.set_mode(self.overlay_mode)
        log.info("overlay: %s", self.overlay_mode)
        return self.overlay_mode


def main(sample_cls: type[Sample], argv: list[str] | None = None) -> None:
    """Entry point of ``python -m samples.sNN``: run and exit with its status."""
    try:
        status = run(sample_cls, argv)
    except KeyboardInterrupt:  # a second Ctrl-C (the first one is a flag: see Interrupt)
        status = 130
    sys.exit(status)


def run(sample_cls: type[Sample], argv: list[str] | None = None) -> int:
    """Parse the command line, run the sample, print the shutdown reports; return a status."""
    prog = f"python -m samples.{sample_cls.name}"
    parser = build_parser(prog, sample_cls.description)
    sample_cls.add_arguments(parser)
    args = parser.parse_args(argv)
    for option, path, suffix in (
        ("--capture", args.capture, ".png"),
        ("--trace", args.trace, ".json"),
    ):
        if path is not None:
            check_output_path(parser, option, path, suffix)
    if args.trace:
        args.profile = True
    if args.overlay is None:
        args.overlay = "perf" if (args.gpu_profile or args.profile) else "off"
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    interrupt = Interrupt()
    with interrupt.catching_sigint():
        return _start_and_run(sample_cls, args, prog, interrupt)


class Interrupt:
    """Ctrl-C as a flag that start-up and the frame loop check, from start-up on.

    Not KeyboardInterrupt: the exception can land inside a glfw or wgpu callback, where it
    is swallowed (the loop would run on) or breaks wgpu's state (a traceback from inside
    request_device). A second Ctrl-C raises KeyboardInterrupt as usual.
    """

    requested = False

    @contextlib.contextmanager
    def catching_sigint(self):
        def handler(signum, frame):
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True

        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


def _start_and_run(sample_cls, args, prog: str, interrupt: Interrupt) -> int:
    try:
        gpu = create_gpu(args.adapter)
    except GpuError as e:
        return fail(prog, str(e), 2 if args.adapter else 1)
    print(gpu.describe(), flush=True)
    if interrupt.requested:
        return 130

    target = window = None
    try:
        if args.capture:
            target = OffscreenTarget(gpu.device, args.size)
            fmt, size = target.format, args.size
        else:
            window = WindowSurface(
                gpu, args.size, f"Lantern {sample_cls.name}", vsync=not args.no_vsync
            )
            fmt, size = window.format, window.framebuffer_size()
    except SurfaceError as e:
        return fail(prog, str(e), 1)

    graph = RenderGraph(gpu.device, output_format=fmt, size=size)
    app = App(gpu, args, graph, prog, interrupt)
    app.window = window
    sample = sample_cls(app)
    try:
        sample.build(graph)
        _attach_tools(app)
        if not interrupt.requested:
            _run_frames(app, sample, target, window)
    except GpuError as e:  # a GPU capability the sample needs is missing
        return fail(prog, str(e), 1)
    finally:
        if window is not None:
            window.close()
        _shutdown(app, sample)
        sample.close()
    return 130 if interrupt.requested else 0


def _run_frames(app: App, sample: Sample, target, window) -> None:
    if target is not None:
        _run_capture(app, sample, target)
    else:
        _run_window(app, sample, window)


def _attach_tools(app: App) -> None:
    """The profiler only when asked for (otherwise no query set exists); the HUD always,
    its pass disabled while the mode is ``off`` so that F1 can turn it on."""
    args = app.args
    if args.gpu_profile or args.profile:
        from .profiling import FrameProfiler

        # A capture is offline: read every frame back at once (batch 1) rather than
        # amortising the map over 8 frames, so short captures still show their timings.
        batch = 1 if args.capture else 8
        app.profiler = FrameProfiler(app.gpu, gpu=args.gpu_profile, cpu=args.profile, batch=batch)
        app.graph.profiler = app.profiler
    from .debug.hud import install_hud

    app.hud = install_hud(app)


def _render(app: App, sample: Sample, output, index: int, t: float) -> None:
    graph, prof = app.graph, app.profiler
    ctx = FrameContext(app.gpu.device, graph, index, t, graph.size, output)
    if prof is not None:
        prof.cpu_begin("Update")
    sample.update(ctx)
    if app.hud is not None:
        app.hud.update(ctx)
    if prof is not None:
        prof.cpu_end()
    encoder = app.gpu.device.create_command_encoder(label=f"frame {index}")
    graph.execute(encoder, ctx)
    if prof is not None:
        prof.cpu_begin("Submit")
    app.gpu.queue.submit([encoder.finish()])
    if prof is not None:
        prof.cpu_end()
        prof.after_submit()


def _run_capture(app: App, sample: Sample, target: OffscreenTarget) -> None:
    frames = app.args.frames or CAPTURE_FRAMES
    for i in range(frames):
        if app.interrupt.requested:
            print(f"interrupted after {i} frame(s): {app.args.capture} not written")
            return
        if i == frames - 1 and app.hud is not None:
            app.hud.perf.expire()  # the captured HUD shows the newest figures
        _render(app, sample, target.view, i, i * CAPTURE_DT)
    target.save_png(app.args.capture)
    w, h = app.args.size
    print(f"wrote {app.args.capture} ({w}x{h}, {frames} frames)")


def _run_window(app: App, sample: Sample, window: WindowSurface) -> None:
    frames, prof = app.args.frames, app.profiler
    start, index = time.perf_counter(), 0
    while not (window.should_close() or app.interrupt.requested) and (
        frames is None or index < frames
    ):
        for key in window.poll():
            if key == KEY_ESCAPE:
                window.request_close()
            elif key == KEY_F1:
                app.cycle_overlay()
            else:
                sample.on_key(key)
        if window.should_close():
            break
        size = window.framebuffer_size()
        if size[0] == 0 or size[1] == 0:  # minimised: nothing to draw into
            window.wait(0.05)
            continue
        if size != window.size:
            window.configure(size)
            app.graph.resize(size)
        try:
            output = window.acquire()
        except wgpu.DrawCancelled:
            continue
        _render(app, sample, output, index, time.perf_counter() - start)
        if prof is not None:
            prof.cpu_begin("Present")
        window.present()
        if prof is not None:
            prof.cpu_end()
        index += 1


def _shutdown(app: App, sample: Sample) -> None:
    """Drain pending timings and print the timeline(s) and the sample's report; write the trace."""
    if app.profiler is None:
        return
    app.profiler.drain()
    for report in (app.profiler.report(), sample.report()):
        if report:
            print(report)
    if app.args.trace:
        app.profiler.write_trace(app.args.trace)
        print(f"wrote {app.args.trace}")
