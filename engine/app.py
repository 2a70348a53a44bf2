"""The sample runner: one command line, one frame loop, window or headless capture.

A sample subclasses ``Sample``, adds passes to the render graph in ``build`` and moves its
scene in ``update``; ``main(MySample)`` does everything else (GPU setup, window or capture,
profiling, HUD, shutdown reports).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from typing import ClassVar, TypeVar

import wgpu

from .cli import build_parser, check_output_path, fail
from .commands import CommandRegistry
from .debug.console import ConsoleTool
from .debug.hud import Hud
from .debug.logtail import LogTailTool
from .export.jsonl import TelemetryWriter
from .export.report import ShutdownReport
from .export.trace import TraceWriter
from .gpu import DRAW_PROFILE_FEATURES, GpuError, create_gpu
from .graph import FrameContext, GraphError, RenderGraph
from .interrupt import Interrupt, for_run
from .loop import FrameLoop
from .portal import PortalError, PortalTool, portal_port
from .progress import Progress
from .reload import HotReload
from .reload_cost import BaselineCompare, CostTracker
from .safe_write import UnsafeWrite, png_target
from .surfaces import OffscreenTarget, SurfaceError, WindowSurface
from .telemetry import Session, Telemetry
from .tool import OptionError, Tool, ToolContext
from .tools.capture import CaptureTool
from .tools.dump import DumpTool
from .tools.inspector import InspectorTool
from .tools.lines import LinesTool
from .tools.memory import MemoryTool
from .tools.profiling import ProfilingTool
from .tools.renderdoc import RenderDocTool  # issue 27 wiring: redo in issue 25's layout
from .tools.views import ViewTool

log = logging.getLogger("lantern")
T = TypeVar("T")

KEY_ESCAPE, KEY_F2 = 256, 291  # glfw key codes (glfw is not imported headless)
CAPTURE_FRAMES = 60
IDLE_WAIT_S = 0.5  # an idle window re-checks its sample (readbacks landing) this often
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

    def idle(self) -> bool:
        """Window mode, before each frame: True when the next frame would draw the same
        picture (no input, nothing new), so the loop waits for window events instead of
        drawing (up to ``IDLE_WAIT_S``, then asks again). Default False: draw every frame
        (a moving scene, a HUD of live timings)."""
        return False

    def report(self) -> str | None:
        """Extra lines for the shutdown report (e.g. the cull counters), or None."""
        return None

    def close(self) -> None:
        """Release resources at shutdown."""


DEFAULT_TOOLS: tuple[Callable[[], Tool], ...] = (
    LogTailTool,  # first: start-up lines are in the tail
    ProfilingTool,  # --gpu-profile / --profile, ``profile``, ``stats``
    ViewTool,  # debug views (``view``, F3, --view): its pass before the HUD's, under it
    LinesTool,  # debug lines from any subsystem, over the picture, under the HUD
    Hud,  # the panels (the live flame chart among them) and their DebugOverlay pass
    ConsoleTool,  # draws through the HUD
    CaptureTool,  # ``capture PATH``
    DumpTool,  # --dump NAME[@PASS] PATH, after the last frame
    InspectorTool,  # ``inspect NAME``: texture statistics reduced on the GPU
    MemoryTool,  # ``memory``: the texture table against --gpu-budget
    HotReload,  # WGSL watched, pipelines rebuilt between frames (F5, ``reload``)
    CostTracker,  # a reloaded pass's time before and after, in the perf table
    BaselineCompare,  # --baseline A.jsonl beside each pass
    PortalTool,  # --portal
    RenderDocTool,  # --renderdoc, ``renderdoc``, F12 (before the writer: its session fact)
    TelemetryWriter,  # --telemetry
    TraceWriter,  # --trace, at shutdown
    ShutdownReport,  # the timelines, last: closed first, so it prints first
)


class App:
    """What a running sample can reach: the hubs, never a tool's attributes.

    Attributes:
        gpu, args, graph: the device, the parsed command line, the render graph.
        telemetry: the per-frame record stream every view reads (``engine.telemetry``).
        loop: the ``engine.loop.FrameLoop`` that records, submits and collects frames.
        commands: the ``engine.commands.CommandRegistry`` shared by the console, the portal
            and the window's keys (``commands.bind``).
        window: the ``WindowSurface`` or None. ctx: the ``engine.tool.ToolContext``.
        interrupt: Ctrl-C as a flag (the frame loop ends after the current frame).

    ``tool(cls)`` finds an installed tool (e.g. ``app.tool(Hud).keep_clear(box)``).
    """

    def __init__(self, gpu, args, graph: RenderGraph, interrupt: Interrupt | None = None, *,
                 window=None, sample: str = ""):  # fmt: skip
        telemetry = Telemetry(
            Session(
                adapter=gpu.summary,
                backend=gpu.adapter.info.get("backend_type", ""),
                features=sorted(gpu.features),
                size=list(graph.size),
                sample=sample,
                settings=_json_args(args),
            )
        )
        loop = FrameLoop(gpu, graph, telemetry=telemetry)
        commands = CommandRegistry()
        loop.between_frames.append(commands.run_pending)  # console and portal lines
        headless = args.capture or getattr(args, "dump", None)  # --dump: like --capture
        final = None if not headless else (args.frames or CAPTURE_FRAMES) - 1
        self.ctx = ToolContext(
            gpu, graph, telemetry, commands, loop, args, window=window, final_frame=final
        )
        self.gpu, self.args, self.graph, self.window = gpu, args, graph, window
        self.telemetry, self.loop, self.commands = telemetry, loop, commands
        self.interrupt = interrupt or Interrupt()  # Ctrl-C: the frame loop ends after this frame

    def install_tools(self, tools=DEFAULT_TOOLS) -> None:
        """Install each tool (a factory, e.g. a class) in order."""
        for make in tools:
            self.ctx.install(make())

    def tool(self, cls: type[T]) -> T:
        """The installed tool of class ``cls``; ``LookupError`` when none is installed."""
        return self.ctx.tool(cls)

    def update(self, sample: Sample) -> Callable[[FrameContext], None]:
        """The frame's update: the sample's, then each tool's hook."""
        hooks = self.ctx.updates

        def update(ctx: FrameContext) -> None:
            sample.update(ctx)
            for fn in hooks:
                fn(ctx)

        return update

    def frame_done(self, texture) -> None:
        """After a frame's submit: the tools' hooks with the output texture."""
        for fn in self.ctx.frame_done:
            fn(texture)


def _json_args(args) -> dict:
    """The parsed command line as JSON-ready values (for the telemetry session)."""
    out = {}
    for k, v in vars(args).items():
        if v is None or isinstance(v, bool | int | float | str):
            out[k] = v
        elif isinstance(v, tuple | list) and all(isinstance(x, int | float) for x in v):
            out[k] = list(v)
        elif hasattr(v, "as_arg"):  # as the option takes it (a Camera), not its type name
            out[k] = v.as_arg()
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


def run(sample_cls: type[Sample], argv: list[str] | None = None, prog: str | None = None) -> int:
    """Parse the command line, run the sample, print the shutdown reports; return a status.
    ``prog``: the name its usage and errors give (default ``python -m samples.<name>``)."""
    prog = prog or f"python -m samples.{sample_cls.name}"
    parser = build_parser(prog, sample_cls.description)
    sample_cls.add_arguments(parser)
    RenderDocTool.add_arguments(parser)  # issue 27 wiring: tools bring their options (issue 25)
    args = parser.parse_args(argv)
    try:  # issue 27 wiring
        RenderDocTool.check_options(args)
    except OptionError as e:
        parser.error(str(e))
    for option, path, suffix in (
        ("--capture", args.capture, ".png"),
        ("--trace", args.trace, ".json"),
        ("--telemetry", args.telemetry, ".jsonl"),
        ("--graph", args.graph if args.graph not in (None, "-") else None, ".dot"),
    ):
        if path is not None:
            check_output_path(parser, option, path, suffix)
    from .tools.views import check_view_option

    why = check_view_option(args)
    if why is not None:
        parser.error(f"argument --view: {why}")
    if args.dump is not None:
        path = args.dump[1]
        kinds = (".npy", ".png", ".exr", ".csv")
        suffix = next((x for x in kinds if path.lower().endswith(x)), None)
        if suffix is None:
            parser.error(f"argument --dump: {path!r} must end in .npy, .png, .exr or .csv")
        check_output_path(parser, "--dump", path, suffix)
        if args.graph is not None:
            parser.error("argument --graph: it prints the frame's passes and exits; drop --dump")
    _check_distinct_files(parser, args)
    if args.capture is not None:
        try:  # a link or a file that is not a PNG is never replaced (engine.safe_write)
            png_target(args.capture)
        except UnsafeWrite as e:
            parser.error(f"argument --capture: {e}")
    if args.graph is not None and args.capture:
        parser.error("argument --graph: it prints the frame's passes and exits; drop --capture")
    if args.baseline:
        from .compare import CompareError, load_run

        try:
            load_run(args.baseline)  # a bad file is one line before any GPU work
        except CompareError as e:
            parser.error(f"argument --baseline: {e}")
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


def _check_distinct_files(parser, args) -> None:
    """Two outputs of one run naming the same file (one would be lost), or ``--telemetry``
    over the ``--baseline`` it is read from: one line, exit 2."""
    named = [("--capture", args.capture), ("--trace", args.trace),
             ("--telemetry", args.telemetry), ("--dump", args.dump[1] if args.dump else None),
             ("--baseline", args.baseline)]  # fmt: skip
    seen: dict[str, str] = {}
    for option, path in named:
        if not path:
            continue
        key = os.path.realpath(path)
        if key in seen:
            parser.error(f"argument {option}: {path!r} is also given to {seen[key]}; "
                         "give each its own file")  # fmt: skip
        seen[key] = option


def _start_and_run(sample_cls, args, prog: str, interrupt: Interrupt) -> int:
    try:
        extra = DRAW_PROFILE_FEATURES if args.gpu_profile == "draws" else ()
        RenderDocTool.before_gpu(args)  # issue 27 wiring: loads RenderDoc when asked for
        gpu = create_gpu(args.adapter, extra_features=extra)
    except GpuError as e:
        return fail(prog, str(e), 2 if args.adapter else 1)
    print(gpu.describe(), flush=True)
    if interrupt.requested:
        return _interrupted_early(args)

    target = window = None
    try:
        if args.capture or args.dump or args.graph is not None:
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
    app = App(gpu, args, graph, interrupt, window=window, sample=sample_cls.name)
    sample = sample_cls(app)
    app.ctx.reports.append(sample.report)
    try:
        sample.build(graph)
        app.install_tools()
        if args.graph is not None:
            return _print_graph(app)
        if interrupt.requested:  # Ctrl-C while the sample was building
            _interrupted_early(args)
        elif target is not None:
            _run_capture(app, sample, target)
        else:
            _run_window(app, sample, window)
    except GpuError as e:  # a GPU capability the sample needs is missing
        return fail(prog, str(e), 1)
    except (PortalError, OptionError) as e:  # port in use, bad host; a tool's option
        return fail(prog, str(e), 2)
    except GraphError as e:  # an inconsistent render graph (a sample's mistake)
        return fail(prog, str(e), 1)
    finally:
        if window is not None:
            window.close()
        app.loop.drain()  # what is in flight, published before the views close
        app.ctx.close_all()  # reports, trace, telemetry file, portal ... in reverse order
        sample.close()
    return 130 if interrupt.requested else app.ctx.status


def _print_graph(app: App) -> int:
    """``--graph [PATH]``: the passes and their resource edges, as text (and DOT to PATH)."""
    app.graph.validate()
    print(app.graph.describe())
    path = app.args.graph
    if path != "-":
        with open(path, "w", encoding="utf-8") as f:
            f.write(app.graph.to_dot())
        print(f"wrote {path} (Graphviz: dot -Tsvg {path} -o frame.svg)")
    return 0


def _run_capture(app: App, sample: Sample, target: OffscreenTarget) -> None:
    frames = app.ctx.final_frame + 1
    update = app.update(sample)
    with Progress(frames) as progress:  # one \r-updated line on a terminal, else nothing
        for i in range(frames):
            if app.interrupt.requested:
                progress.close()
                print(f"interrupted after {i} frame(s): {app.args.capture} not written")
                return
            app.loop.frame(target.view, i * CAPTURE_DT, update)
            app.frame_done(target.texture)
            progress.update(i + 1)
    if app.args.capture is None:  # --dump alone: its tool wrote the file
        return
    try:
        target.save_png(app.args.capture)
    except (OSError, UnsafeWrite) as e:  # checked at start-up; a full disk still fails here
        log.error("cannot write %s: %s", app.args.capture, getattr(e, "strerror", None) or e)
        app.ctx.status = 1
        return
    w, h = app.args.size
    print(f"wrote {app.args.capture} ({w}x{h}, {frames} frames)")


def _run_window(app: App, sample: Sample, window: WindowSurface) -> None:
    # a console or portal line, or a frame asked for (a shader file saved), ends an idle wait
    app.commands.wake = app.loop.wake = window.wake
    try:
        _window_loop(app, sample, window)
    finally:
        app.commands.wake = app.loop.wake = None  # the window goes: nothing posts to it


def _window_loop(app: App, sample: Sample, window: WindowSurface) -> None:
    frames = app.args.frames
    start = time.perf_counter()
    update = app.update(sample)
    while not (window.should_close() or app.interrupt.requested) and (
        frames is None or app.loop.index < frames
    ):
        keys = window.poll()
        for key in keys:
            if key == KEY_ESCAPE:
                window.request_close()
            elif app.commands.press(key) is None:  # F1, F2 ... run their commands
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
        elif (frames is None and not keys and not app.commands.pending
              and not app.loop.take_request() and sample.idle()):  # fmt: skip
            window.wait(IDLE_WAIT_S)  # nothing would change: no frame until an event
            continue
        try:
            output, texture = window.acquire()
        except wgpu.DrawCancelled:
            continue
        app.loop.frame(output, time.perf_counter() - start, update)
        app.frame_done(texture)
        app.loop.present(window)
