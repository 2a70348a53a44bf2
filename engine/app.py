"""The sample runner: one command line, one frame loop, window or headless capture.

A sample subclasses ``Sample``, adds passes to the render graph in ``build`` and moves its
scene in ``update``; ``main(MySample)`` does everything else (GPU setup, window or capture,
profiling, HUD, shutdown reports).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import ClassVar

import wgpu

from .cli import OVERLAY_MODES, build_parser, check_output_path, fail
from .commands import CommandRegistry
from .debug.logtail import install_log_tail
from .gpu import DRAW_PROFILE_FEATURES, GpuError, create_gpu
from .graph import FrameContext, RenderGraph
from .interrupt import Interrupt, for_run
from .loop import FrameLoop
from .portal import PortalError, portal_port
from .profiling.report import shutdown_report
from .profiling.trace import build_trace, write_trace_file
from .progress import Progress
from .shaders import shader_hashes
from .surfaces import OffscreenTarget, SurfaceError, WindowSurface, save_texture_png
from .telemetry import JsonLinesWriter, Telemetry

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
        example_args: command-line arguments of a quick demonstration run (small scene,
            inputs); ``{tmp}`` stands for a scratch folder.
    """

    name: ClassVar[str] = "sample"
    description: ClassVar[str] = ""
    example_args: ClassVar[tuple[str, ...]] = ()  # a quick demonstration run (tests use it)

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
    """What a running sample can reach.

    Attributes:
        gpu, args, graph: the device, the parsed command line, the render graph.
        telemetry: the per-frame record stream every view reads (``engine.telemetry``).
        loop: the ``engine.loop.FrameLoop`` that records, submits and collects frames.
        hud: the ``engine.debug.hud.Hud``; window: the ``WindowSurface`` or None.
        interrupt: Ctrl-C as a flag (the frame loop ends after the current frame).
    """

    def __init__(self, gpu, args, graph: RenderGraph, interrupt: Interrupt | None = None):
        self.gpu = gpu
        self.args = args
        self.graph = graph
        self.telemetry = Telemetry(
            {
                "adapter": gpu.summary,
                "backend": gpu.adapter.info.get("backend_type", ""),
                "features": sorted(gpu.features),
                "size": list(graph.size),
                "settings": _json_args(args),
            }
        )
        self.loop = FrameLoop(gpu, graph, telemetry=self.telemetry)
        self.commands = CommandRegistry()  # the console's and the portal's; samples add theirs
        self.console = None  # engine.debug.console.Console (installed with the HUD)
        self.log_tail = install_log_tail()  # the lantern logger's last lines, from start-up on
        self.portal = None  # engine.portal.Portal with --portal
        self.flame = None  # engine.inspect.live.LiveFlame (the HUD's flame mode)
        self.hud = None  # engine.debug.hud.Hud
        self.window = None  # engine.surfaces.WindowSurface in window mode
        self.tools = None  # engine.tool.ToolContext of the tools installed through it
        self.reload = None  # engine.reload.HotReload
        self.interrupt = interrupt or Interrupt()  # Ctrl-C: the frame loop ends after this frame
        self.overlay_mode = args.overlay
        self._capture_path: str | None = None
        self.exit_status = 0  # 1 when an output could not be written at the end

    @property
    def profiler(self):
        """The ``FrameProfiler`` when profiling is on, else None."""
        prof = self.graph.profiler
        return prof if prof.active else None

    def set_profiling(
        self, *, gpu: bool | None = None, cpu: bool | None = None, draws: bool | None = None
    ) -> str:
        """Turn GPU (timestamp queries) and/or CPU (scopes) profiling, and per-draw GPU
        timing (``draws``, implies GPU), on or off between frames (None keeps the current
        state). Returns a one-line description."""
        prof = self.profiler
        want_gpu = (prof is not None and prof.gpu is not None) if gpu is None else gpu
        want_cpu = (prof is not None and prof.cpu is not None) if cpu is None else cpu
        want_draws = (prof is not None and prof.draws is not None) if draws is None else draws
        if gpu is False and draws is None:
            want_draws = False  # draws are GPU timings: off with them
        want_gpu = want_gpu or want_draws
        if prof is not None:
            self.loop.drain()  # publish what is in flight before the pools go away
        if want_gpu or want_cpu:
            from .profiling import FrameProfiler

            # A capture is offline: read every frame back at once (batch 1) rather than
            # amortising the map over 8 frames, so short captures still show their timings.
            batch = 1 if self.args.capture else 8
            prof = FrameProfiler(
                self.gpu, gpu=want_gpu, cpu=want_cpu, batch=batch, draws=want_draws
            )
            self.graph.profiler = prof
            self.telemetry.session["profiling"] = prof.session_info(self.graph)
            if prof.gpu_available:  # GPU scopes onto the CPU clock (live flame, JSONL): waits
                cal = prof.gpu.calibrate()  # for an idle queue, once, at start-up
                self.telemetry.session["gpu_clock_offset_ns"] = cal[0] if cal else None
        else:
            self.graph.profiler = None
            self.telemetry.session.pop("profiling", None)
        draws_on = want_draws and prof is not None and prof.draws is not None
        return (
            f"profiling: GPU {'on' if want_gpu else 'off'}, CPU {'on' if want_cpu else 'off'}"
            + (", draws on" if draws_on else "")
        )

    def request_capture(self, path: str) -> None:
        """Write the next frame to ``path`` (PNG) once it is rendered."""
        self._capture_path = path

    def cycle_overlay(self) -> str:
        i = OVERLAY_MODES.index(self.overlay_mode)
        self.overlay_mode = OVERLAY_MODES[(i + 1) % len(OVERLAY_MODES)]
        if self.hud is not None:
            self.hud.set_mode(self.overlay_mode)
        log.info("overlay: %s", self.overlay_mode)
        return self.overlay_mode


def _json_args(args) -> dict:
    """The parsed command line as JSON-ready values (for the telemetry session)."""
    out = {}
    for k, v in vars(args).items():
        if v is None or isinstance(v, bool | int | float | str):
            out[k] = v
        elif isinstance(v, tuple | list) and all(isinstance(x, int | float) for x in v):
            out[k] = list(v)
        else:
            out[k] = str(getattr(v, "path", type(v).__name__))
    return out


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
        ("--telemetry", args.telemetry, ".jsonl"),
        ("--graph", args.graph if args.graph not in (None, "-") else None, ".dot"),
    ):
        if path is not None:
            check_output_path(parser, option, path, suffix)
    if getattr(args, "baseline", None):
        from .compare import CompareError, load_run

        try:
            load_run(args.baseline)
        except CompareError as e:
            parser.error(f"argument --baseline: {e}")
    if args.graph is not None and args.capture:
        parser.error("argument --graph: it prints the frame's passes and exits; drop --capture")
    try:
        portal_port(args)  # a bad LANTERN_PORTAL is one line before any GPU work
    except PortalError as e:
        return fail(prog, str(e), 2)
    if args.trace:
        args.profile = True
    if args.overlay is None:
        args.overlay = "perf" if (args.gpu_profile or args.profile) else "off"
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    interrupt = for_run()
    with interrupt.catching_sigint():
        if interrupt.requested:  # Ctrl-C while Python was still importing
            return _interrupted_early(args)
        return _start_and_run(sample_cls, args, prog, interrupt)


def _interrupted_early(args) -> int:
    if args.capture:
        print(f"interrupted before the first frame: {args.capture} not written")
    return 130


def _start_and_run(sample_cls, args, prog: str, interrupt: Interrupt) -> int:
    try:
        extra = DRAW_PROFILE_FEATURES if args.gpu_profile == "draws" else ()
        gpu = create_gpu(args.adapter, extra_features=extra)
    except GpuError as e:
        return fail(prog, str(e), 2 if args.adapter else 1)
    print(gpu.describe(), flush=True)
    if interrupt.requested:
        return _interrupted_early(args)

    target = window = None
    try:
        if args.capture or args.graph is not None:
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
    app = App(gpu, args, graph, interrupt)
    app.telemetry.session["sample"] = sample_cls.name
    app.window = window
    sample = sample_cls(app)
    writer = None
    try:
        sample.build(graph)
        _attach_tools(app)
        app.telemetry.session["shaders"] = shader_hashes()  # WGSL per module: compare.py
        if args.graph is not None:
            return _print_graph(app, prog)
        if args.telemetry:
            writer = JsonLinesWriter(args.telemetry, app.telemetry.session)
            app.telemetry.subscribe(writer)
        if interrupt.requested:  # Ctrl-C while the sample was building
            _interrupted_early(args)
        else:
            _run_frames(app, sample, target, window)
    except GpuError as e:  # a GPU capability the sample needs is missing
        return fail(prog, str(e), 1)
    except PortalError as e:  # port in use, bad host
        return fail(prog, str(e), 2)
    except ValueError as e:  # an inconsistent render graph (a sample's mistake)
        return fail(prog, str(e), 1)
    finally:
        if window is not None:
            window.close()
        _shutdown(app, sample)
        if writer is not None:
            writer.close()
            if writer.error is None:  # else its warning said where it stopped
                print(f"wrote {args.telemetry} ({writer.records} records)")
        sample.close()
    return 130 if interrupt.requested else app.exit_status


def _print_graph(app: App, prog: str) -> int:
    """``--graph [PATH]``: the passes and their resource edges, as text (and DOT to PATH)."""
    app.graph.validate()
    print(app.graph.describe())
    path = app.args.graph
    if path != "-":
        with open(path, "w", encoding="utf-8") as f:
            f.write(app.graph.to_dot())
        print(f"wrote {path} (Graphviz: dot -Tsvg {path} -o frame.svg)")
    return 0


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
        app.set_profiling(
            gpu=bool(args.gpu_profile), cpu=args.profile, draws=args.gpu_profile == "draws"
        )
    from .debug.console import install as install_console
    from .debug.hud import install_hud
    from .inspect.live import install as install_flame
    from .portal import start as start_portal

    app.flame = install_flame(app)  # before the HUD: its text draws over the chart
    app.hud = install_hud(app)  # its set_mode also sets the flame chart's
    install_console(app)  # commands run between frames; keys routed to it in a window
    app.portal = start_portal(app)
    _install_reload(app)


def _install_reload(app: App) -> None:
    """Hot reload as a tool (engine/tool.py); its error notice goes to the HUD's bottom row
    and the console (the log line reaches the HUD's log panel and the portal by itself)."""
    from .debug.logtail import ERROR
    from .reload import HotReload
    from .reload_cost import BaselineCompare, CostTracker
    from .tool import ToolContext

    app.tools = ToolContext(
        gpu=app.gpu, graph=app.graph, telemetry=app.telemetry, commands=app.commands,
        loop=app.loop, options=app.args, window=app.window,
    )  # fmt: skip
    app.reload = app.tools.install(HotReload())
    app.reload.subscribe(app.hud.set_notice)
    app.reload.subscribe(lambda text: text and app.console.print(text, ERROR))
    cost = app.tools.install(CostTracker())
    cost.subscribe(lambda notes: _show_notes(app, "reload", notes))
    if getattr(app.args, "baseline", None):
        base = app.tools.install(BaselineCompare(app.args.baseline))
        base.subscribe(lambda notes: _show_notes(app, "baseline", notes))


def _show_notes(app: App, source: str, notes: dict) -> None:
    """Per-pass notes (reload cost, baseline) into the perf table and the session."""
    app.hud.perf.set_notes(source, notes)
    app.hud.perf.expire()
    key = "reload_costs" if source == "reload" else source
    app.telemetry.session[key] = {k: v[0] + (" *" if v[1] else "") for k, v in notes.items()}


def _update(app: App, sample: Sample):
    def update(ctx) -> None:
        sample.update(ctx)
        app.hud.update(ctx)
        app.flame.update(ctx)  # returns at once unless the mode is flame

    return update


def _run_capture(app: App, sample: Sample, target: OffscreenTarget) -> None:
    frames = app.args.frames or CAPTURE_FRAMES
    update = _update(app, sample)
    with Progress(frames) as progress:  # one \r-updated line on a terminal, else nothing
        for i in range(frames):
            if app.interrupt.requested:
                progress.close()
                print(f"interrupted after {i} frame(s): {app.args.capture} not written")
                return
            if i == frames - 1:
                app.hud.perf.expire()  # the captured HUD shows the newest figures
            app.loop.frame(target.view, i * CAPTURE_DT, update)
            _write_requested_capture(app, target.texture)
            progress.update(i + 1)
    try:
        target.save_png(app.args.capture)
    except OSError as e:  # checked writable at start-up; a full disk still fails here
        log.error("cannot write %s: %s", app.args.capture, e.strerror or e)
        app.exit_status = 1
        return
    w, h = app.args.size
    print(f"wrote {app.args.capture} ({w}x{h}, {frames} frames)")


def _write_requested_capture(app: App, texture) -> None:
    path, app._capture_path = app._capture_path, None
    if path is None:
        return
    try:
        save_texture_png(app.gpu.device, texture, path)
        log.info("capture: wrote %s", path)
    except (OSError, ValueError, wgpu.GPUError) as e:
        log.error("capture: cannot write %s: %s", path, e)


def _run_window(app: App, sample: Sample, window: WindowSurface) -> None:
    frames = app.args.frames
    start = time.perf_counter()
    update = _update(app, sample)
    while not (window.should_close() or app.interrupt.requested) and (
        frames is None or app.loop.index < frames
    ):
        for key in window.poll():
            if key == KEY_ESCAPE:
                window.request_close()
            elif key == KEY_F1:
                app.cycle_overlay()
            elif app.commands.press(key) is None:  # F5: reload
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
            output, texture = window.acquire()
        except wgpu.DrawCancelled:
            continue
        app.loop.frame(output, time.perf_counter() - start, update)
        _write_requested_capture(app, texture)
        app.loop.present(window)


def _shutdown(app: App, sample: Sample) -> None:
    """Drain what is in flight, print the reports (timeline, cull counters, the sample's own)
    from the telemetry, and write the trace."""
    app.loop.drain()
    if getattr(app, "tools", None) is not None:
        app.tools.close_all()
    if app.portal is not None:
        app.portal.close()
    if app.flame is not None:
        app.flame.close()
    logging.getLogger("lantern").removeHandler(app.log_tail)
    if app.profiler is None:
        return
    cull = app.telemetry.latest.cull if app.telemetry.latest is not None else None
    for report in (
        shutdown_report(app.telemetry),
        cull.report() if cull is not None else None,
        sample.report(),
    ):
        if report:
            print(report)
    if app.args.trace:
        prof = app.profiler
        cal = prof.gpu.calibrate() if prof.gpu_available else None
        try:
            write_trace_file(app.args.trace, build_trace(app.telemetry, calibration=cal))
        except OSError as e:
            log.error("cannot write %s: %s", app.args.trace, e.strerror or e)
            app.exit_status = 1
            return
        print(f"wrote {app.args.trace}")
