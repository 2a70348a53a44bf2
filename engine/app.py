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
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

import wgpu

from engine.cli import build_parser, fail
from engine.commands import Choice, CommandRegistry
from engine.gpu import GpuError, create_gpu
from engine.graph import FrameContext, GraphError, RenderGraph
from engine.hud.service import Hud
from engine.interrupt import Interrupt, for_run
from engine.knobs import Knob, add_knob_arguments
from engine.logtail import install_log_tail
from engine.loop import FrameLoop
from engine.options import OptionError, check_output, positive_int, stdout_closed
from engine.progress import Progress
from engine.safe_write import UnsafeWrite, png_target
from engine.settings import check_knob_conflicts
from engine.shader_registry import ShaderBuildError
from engine.surfaces import OffscreenTarget, SurfaceError, WindowSurface
from engine.telemetry import Session, Telemetry
from engine.textfile import NotUtf8
from engine.tool import Key, ToolContext, ToolSpec
from engine.tools import DEFAULT_TOOLS, HUD_TOOLS  # noqa: F401 - HUD_TOOLS for tests
from engine.tools.portal import PortalError

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
        category: where ``python -m samples`` lists it, one of ``samples.CATEGORIES``
            (``"basics"``, ``"frame"``, ``"techniques"``, ``"tools"``); a plain string
            literal in the class body, since the listing reads it without importing.
        description: one line for ``--help``. ``python -m samples`` lists the first line of
            the module docstring instead (it reads files, importing no GPU code); keep the two
            alike, e.g. ``description = __doc__.splitlines()[0]``.
        example_args: command-line arguments of a quick demonstration run (small scene,
            inputs); ``{tmp}`` stands for a scratch folder.
        keys: ``engine.tool.Key`` bindings to the sample's own commands (s13's F2).
        knobs: ``engine.knobs.Knob`` declarations of the sample's own knobs: their flags join
            the command line; ``StandardFrame.add_knobs(self.knobs, app.args)`` in ``build``
            gives them their console and portal commands.
        variants: the names of the sample's variants of its technique, the default first:
            ``--variant NAME`` starts with one, ``variant NAME|next`` (console, portal)
            switches, ``--variant-cycle N`` switches every N frames (interleaved blocks for
            ``lantern compare RUN.jsonl``); each frame's record carries its variant.
    """

    name: ClassVar[str] = "sample"
    category: ClassVar[str] = ""  # samples.CATEGORIES: read by ``python -m samples``
    description: ClassVar[str] = ""
    example_args: ClassVar[tuple[str, ...]] = ()  # a quick demonstration run (tests use it)
    keys: ClassVar[tuple[Key, ...]] = ()  # window keys, bound after build, listed by --help
    knobs: ClassVar[tuple[Knob, ...]] = ()  # its own knobs: flags here, commands via the frame
    variants: ClassVar[tuple[str, ...]] = ()  # ways to do its technique; the first by default

    @classmethod
    def add_arguments(cls, parser) -> None:
        """Add sample-specific options to the shared ``argparse`` parser."""

    @classmethod
    def inputs(cls, args) -> list[tuple[str, str]]:
        """``(option, path)`` of the files the sample reads (s14's trace): no output may
        name one of them (checked with the tools' outputs and inputs)."""
        return []

    @classmethod
    def check_options(cls, args) -> None:
        """Refuse options that contradict each other, before any GPU work and before the
        tools' checks (default: the standard frame's flags,
        ``engine.settings.check_knob_conflicts``).

        Raises:
            OptionError: one line naming the options.
        """
        check_knob_conflicts(args)

    def __init__(self, app: App):
        self.app = app

    def build(self, graph: RenderGraph) -> None:
        """Add this sample's passes to ``graph`` (called once)."""
        raise NotImplementedError

    def update(self, ctx: FrameContext) -> None:
        """Advance the scene to ``ctx.time`` before the frame is recorded."""

    def set_variant(self, name: str) -> None:
        """Switch to variant ``name`` (one of ``variants``) from the next frame on."""

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


class App:
    """What a running sample can reach: the hubs and the services, never a tool's attributes.

    Attributes:
        gpu, args, graph: the device, the parsed command line, the render graph.
        telemetry: the per-frame record stream every view reads (``engine.telemetry``).
        loop: the ``engine.loop.FrameLoop`` that records, submits and collects frames.
        commands: the ``engine.commands.CommandRegistry`` shared by the console, the portal
            and the window's keys (``commands.bind``).
        hud: the HUD service (``engine.hud.service.Hud``: ``keep_clear``, ``set_mode``...).
        window: the ``WindowSurface`` or None. ctx: the ``engine.tool.ToolContext``.
        interrupt: Ctrl-C as a flag (the frame loop ends after the current frame).

    ``tool(cls)`` finds an installed tool for a sample or a test (tools never do).
    """

    def __init__(self, gpu, args, graph: RenderGraph, interrupt: Interrupt | None = None, *,
                 window=None, sample: str = "", tools=DEFAULT_TOOLS):  # fmt: skip
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
        self.tool_classes = tuple(tools)
        self.hud = Hud.for_tools(tools, mode=getattr(args, "overlay", None),
                                 hud_scale=getattr(args, "hud_scale", None))  # fmt: skip
        self.log_tail = install_log_tail()  # before any tool: start-up lines are in it
        self.ctx = ToolContext(gpu, graph, telemetry, commands, loop, args, window=window,
                               final_frame=final, hud=self.hud, log_tail=self.log_tail)  # fmt: skip
        self.gpu, self.args, self.graph, self.window = gpu, args, graph, window
        self.telemetry, self.loop, self.commands = telemetry, loop, commands
        self.interrupt = interrupt or Interrupt()  # Ctrl-C: the frame loop ends after this frame

    def install_tools(self, sample: Sample | None = None) -> None:
        """Install each tool in order, start the HUD over them (their panels, then its own
        pass, last) and bind the sample's keys."""
        install_tools(self.ctx, self.tool_classes, self.hud)
        for key in getattr(sample, "keys", ()):
            self.commands.bind(key.name, key.code, key.command)

    def close(self) -> None:
        """Close the tools (reverse order), then the HUD and the log tail."""
        self.ctx.close_all()
        self.hud.close()
        logging.getLogger("lantern").removeHandler(self.log_tail)

    def tool(self, cls: type[T]) -> T:
        """The installed tool of class ``cls`` (for a sample or a test; tools never look
        each other up); ``LookupError`` when none is installed."""
        for t in self.ctx.tools:
            if isinstance(t, cls):
                return t
        raise LookupError(f"tool {cls.__name__} is not installed")

    # -- the sample's variants ------------------------------------------------------------------
    def start_variants(self, sample: Sample) -> None:
        """Start in ``--variant`` (else the first), register ``variant NAME|next``, and with
        ``--variant-cycle N`` switch to the next one every N frames."""
        self._sample = sample
        self.commands.register(
            "variant",
            self._variant_command,
            args=[Choice(*sample.variants, "next", optional=True)],
            help="the sample's variant: " + ", ".join(sample.variants) + "; next",
        )
        self._cycle = getattr(self.args, "variant_cycle", None)
        self.set_variant(getattr(self.args, "variant", None) or sample.variants[0])

    def set_variant(self, name: str) -> str:
        """Switch the sample to variant ``name`` between frames: its records carry the name
        from the next frame, and the stats window starts afresh (the HUD shows its figures)."""
        self._sample.set_variant(name)
        self.loop.variant = name
        self.telemetry.reset_stats()
        self.telemetry.set_fact("variant", name)
        return f"variant: {name}"

    def _variant_command(self, name: str | None) -> str:
        names = self._sample.variants
        if name is None:
            return f"variant: {self.loop.variant}; variants: {', '.join(names)}"
        if name == "next":
            name = names[(names.index(self.loop.variant) + 1) % len(names)]
        return self.set_variant(name)

    def update(self, sample: Sample) -> Callable[[FrameContext], None]:
        """The frame's update: the variant's turn (``--variant-cycle``), the sample's, then
        each tool's hook."""
        hooks = self.ctx.updates

        def update(ctx: FrameContext) -> None:
            cycle = getattr(self, "_cycle", None)
            if cycle and ctx.frame_index and ctx.frame_index % cycle == 0:
                self._variant_command("next")
            sample.update(ctx)
            for fn in hooks:
                fn(ctx)

        return update

    def frame_done(self, texture) -> None:
        """After a frame's submit: the tools' hooks with the output texture."""
        for fn in self.ctx.frame_done:
            fn(texture)


def install_tools(ctx: ToolContext, tools, hud: Hud | None = None) -> Hud:
    """Install ``tools`` (classes are made with no arguments, instances taken as they are)
    into ``ctx`` in order, with ``hud`` (default: a HUD over the tools' panels, in the
    ``--overlay`` mode) as ``ctx.hud`` while they install; then start the HUD over them.
    Returns the HUD. The App does this; a test or a benchmark with a bare context too."""
    made = [t() if isinstance(t, type) else t for t in tools]
    if hud is None:
        hud = Hud.for_tools(made, mode=ctx.option("overlay"), hud_scale=ctx.option("hud_scale"))
    ctx.hud = hud
    installed = [ctx.install(t) for t in made]
    hud.start(ctx, installed)
    return hud


def add_variant_arguments(parser, variants: tuple[str, ...]) -> None:
    """``--variant NAME`` (choices: ``variants``) and ``--variant-cycle N``."""
    g = parser.add_argument_group("variants")
    g.add_argument(
        "--variant",
        choices=variants,
        default=None,  # None: not given (a sample may start from another flag, s05)
        metavar="NAME",
        help="start with this variant: " + ", ".join(variants) + f" (default {variants[0]}); "
        "'variant NAME|next' in the console switches",
    )
    g.add_argument(
        "--variant-cycle",
        type=positive_int,
        metavar="N",
        default=None,
        help="switch to the next variant every N frames: interleaved blocks of each in one "
        "run, for 'lantern compare RUN.jsonl' (with --telemetry RUN.jsonl)",
    )


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
    except BrokenPipeError:  # stdout closed before the start-up lines (| head -0)
        status = stdout_closed()
    sys.exit(status)


def sample_parser(sample_cls: type[Sample], prog: str, tools: Sequence[type] = DEFAULT_TOOLS):
    """A sample's whole command line: the shared flags, the HUD's and each tool's
    (``engine.cli.build_parser``), then the sample's own options, knobs and ``--variant``.
    The run parses with it; the generated command-line reference reads it."""
    parser = build_parser(prog, sample_cls.description, tools, sample_cls.keys)
    sample_cls.add_arguments(parser)
    if sample_cls.knobs:
        add_knob_arguments(parser, sample_cls.knobs, f"{sample_cls.name} knobs")
    if sample_cls.variants:
        add_variant_arguments(parser, sample_cls.variants)
    return parser


def run(
    sample_cls: type[Sample],
    argv: list[str] | None = None,
    prog: str | None = None,
    tools: tuple[type, ...] = DEFAULT_TOOLS,
) -> int:
    """Parse the command line, run the sample, print the shutdown reports; return a status.
    ``prog``: the name its usage and errors give (default ``python -m samples.<name>``);
    ``tools``: the tool classes to install (their flags, keys and panels join the run's)."""
    prog = prog or f"python -m samples.{sample_cls.name}"
    parser = sample_parser(sample_cls, prog, tools)
    args = parser.parse_args(argv)
    specs = [ToolSpec.of(t) for t in tools]
    try:
        sample_cls.check_options(args)  # (first: it may settle one option from another)
        _check_options(args, specs, sample_cls.inputs(args))
    except OptionError as e:  # every check runs before any GPU work
        parser.error(str(e))
    except PortalError as e:  # a bad LANTERN_PORTAL
        return fail(prog, str(e), 2)
    if args.overlay is None:
        profiling = getattr(args, "gpu_profile", None) or getattr(args, "profile", False)
        args.overlay = "perf" if profiling else "off"
    features = tuple(f for s in specs for f in (s.before_gpu(args) or ()))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    interrupt = for_run()
    with interrupt.catching_sigint():
        if interrupt.requested:  # Ctrl-C while Python was still importing
            return _interrupted_early(args)
        return _start_and_run(sample_cls, args, prog, interrupt, tools, features)


def _check_options(args, specs, inputs=()) -> None:
    """The run's own flags, that no two options name one file (one would be lost, or
    ``--telemetry`` over the ``--baseline`` it reads, or over the sample's ``inputs``), then
    each tool's ``check_options``.

    Raises:
        OptionError: one line naming the option.
    """
    check_output("--capture", args.capture, ".png")
    check_output("--graph", args.graph if args.graph != "-" else None, ".dot")
    if args.capture is not None:
        try:  # a link or a file that is not a PNG is never replaced (engine.safe_write)
            png_target(args.capture)
        except UnsafeWrite as e:
            raise OptionError(f"argument --capture: {e}") from None
    if args.graph is not None and args.capture:
        raise OptionError(
            "argument --graph: it prints the frame's passes and exits; drop --capture"
        )
    seen: dict[str, str] = {}
    named = [("--capture", args.capture), *(f for s in specs for f in s.files(args))]
    named += [f for s in specs for f in s.inputs(args)]  # an output over an input: the input's
    named += list(inputs)  # the sample's own (s14's FILE)
    for option, path in named:
        if not path:
            continue
        key = os.path.realpath(path)
        if key in seen:
            raise OptionError(f"argument {option}: {path!r} is also given to {seen[key]}; "
                              "give each its own file")  # fmt: skip
        seen[key] = option
    for s in specs:
        s.check_options(args)


def _interrupted_early(args) -> int:
    if args.capture:
        print(f"interrupted before the first frame: {args.capture} not written")
    return 130


def _start_and_run(sample_cls, args, prog: str, interrupt: Interrupt, tools, features) -> int:
    try:
        gpu = create_gpu(args.adapter, extra_features=features)  # the tools' (before_gpu)
    except GpuError as e:
        return fail(prog, str(e), 2 if args.adapter else 1)
    print(gpu.describe(), flush=True)
    if interrupt.requested:
        return _interrupted_early(args)

    target = window = None
    try:
        if args.capture or getattr(args, "dump", None) or args.graph is not None:
            target = OffscreenTarget(gpu.device, args.size)
            fmt, size, storage = target.format, args.size, target.storage_format
        else:
            window = WindowSurface(
                gpu, args.size, f"Lantern {sample_cls.name}", vsync=not args.no_vsync
            )
            fmt, size, storage = window.format, window.framebuffer_size(), window.storage_format
    except SurfaceError as e:
        return fail(prog, str(e), 1)

    graph = RenderGraph(gpu.device, output_format=fmt, size=size, output_storage_format=storage)
    app = App(gpu, args, graph, interrupt, window=window, sample=sample_cls.name, tools=tools)
    sample = sample_cls(app)
    app.ctx.reports.append(sample.report)
    try:
        sample.build(graph)
        app.install_tools(sample)
        if sample.variants:
            app.start_variants(sample)
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
    except (NotUtf8, ShaderBuildError) as e:  # a WGSL file the sample builds from, saved in
        return fail(prog, str(e), 1)  # another encoding or not compiling: one line
    except (PortalError, OptionError) as e:  # port in use, bad host; a tool's option
        return fail(prog, str(e), 2)
    except GraphError as e:  # an inconsistent render graph (a sample's mistake)
        return fail(prog, str(e), 1)
    finally:
        if window is not None:
            window.close()
        app.loop.drain()  # what is in flight, published before the views close
        app.close()  # reports, trace, telemetry file, portal ... in reverse order
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
    update = app.update(sample)
    i = 0
    with Progress(app.ctx.final_frame + 1) as progress:  # one \r-updated line on a terminal
        while i <= app.ctx.final_frame:  # a sample may move the last frame (s05's sweep)
            if app.interrupt.requested:
                progress.close()
                print(f"interrupted after {i} frame(s): {app.args.capture} not written")
                return
            app.loop.frame(target.view, i * CAPTURE_DT, update)
            app.frame_done(target.texture)
            i += 1
            progress.total = app.ctx.final_frame + 1
            progress.update(i)
    frames = i
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
