"""The tool protocol: everything a developer looks at or pokes is a tool over two hubs.

Data flows through the ``FrameRecord`` stream (``ctx.telemetry``), control through the
command registry (``ctx.commands``). A tool stands on those, the render graph, the frame loop
and two services (the HUD, ``ctx.hud``, and the log tail, ``ctx.log_tail``), and nothing
else: it never sees the ``App`` and never looks another tool up. A tool in full::

    class FpsPrinter:
        name = "fps"
        keys = (Key("F9", 298, "fps", "print the frame rate"),)   # bound by the App
        panels = (FpsPanel,)                                     # built by the HUD: FpsPanel(tool)

        @classmethod
        def add_arguments(cls, parser) -> None:                  # its own command-line flags
            parser.add_argument_group("fps").add_argument("--fps-every", type=int, default=60)

        @classmethod
        def check_options(cls, args) -> None:                    # before any GPU work
            if args.fps_every < 1:
                raise OptionError("--fps-every: expected a positive number of frames")

        def install(self, ctx: ToolContext) -> None:
            self._unsubscribe = ctx.telemetry.subscribe(self.on_record)
            ctx.commands.register("fps", self.show, help="print the frame rate")

        def close(self) -> None:
            self._unsubscribe()

Every class-level declaration is optional (``ToolSpec`` reads them with defaults), as
pytest plugins bring their own hooks. ``App`` builds the command line from the shared flags
plus each tool's ``add_arguments``, runs each ``check_options`` and ``before_gpu``, installs
the tools in order, binds their ``keys``, lets the HUD build their ``panels``, and closes the
tools in reverse order at shutdown. Tools talk to each other only through the hubs: a command
line (``ctx.commands.execute("view ids")``), a telemetry fact, or the HUD service.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from engine.options import OptionError  # noqa: F401 - a tool's error, re-exported here

if TYPE_CHECKING:  # typing only: the tool layer sits above all of these
    from engine.commands import CommandRegistry
    from engine.graph import FrameContext, RenderGraph
    from engine.hud.service import Hud
    from engine.logtail import LogTail
    from engine.loop import FrameLoop
    from engine.telemetry import Telemetry

T = TypeVar("T")
log = logging.getLogger("lantern")


@dataclass(frozen=True)
class Key:
    """A window key bound to a command line: ``name`` as ``--help`` shows it (``"F3"``),
    ``code`` the glfw key code, ``command`` the line it runs, ``help`` one line for ``--help``
    (empty: bound but not listed, e.g. a second key for the same command)."""

    name: str
    code: int
    command: str
    help: str = ""


@runtime_checkable
class Tool(Protocol):
    """A plugin of the running sample.

    ``install(ctx)`` adds the tool's passes (``ctx.graph.add``), commands
    (``ctx.commands.register``), telemetry subscriptions and per-frame hooks
    (``ctx.on_update``); ``close()`` undoes what install did and releases GPU objects.
    Neither may raise for a user's mistake: a bad option is an ``OptionError`` with a
    one-line message, reported by the App without a traceback.

    Optional class-level declarations (read by ``ToolSpec``):

    - ``keys``: ``Key`` bindings the App makes after install.
    - ``panels``: HUD panel classes the HUD builds as ``cls(tool)`` once every tool is
      installed (their modes are ``--overlay``'s and F1's choices).
    - ``add_arguments(parser)``: classmethod adding the tool's own flags.
    - ``check_options(args)``: classmethod raising ``OptionError`` for flags it cannot apply
      (before any GPU work); it may fill in derived values.
    - ``before_gpu(args)``: classmethod run after the checks and before the GPU instance is
      created (a capture layer to load, an instance flag to set); it may return optional
      GPU features to request where the adapter has them.
    - ``files(args)``: classmethod giving ``(option, path)`` of each file the run writes
      through the tool; ``inputs(args)`` likewise for each file it reads. Two options
      naming one file are refused (an output over another, or over an input).
    """

    name: str

    def install(self, ctx: ToolContext) -> None: ...

    def close(self) -> None: ...


def _nothing(args) -> None:
    return None


@dataclass(frozen=True)
class ToolSpec:
    """A tool class's declarations with their defaults (``ToolSpec.of(cls)``)."""

    cls: type
    keys: tuple[Key, ...] = ()
    panels: tuple[type, ...] = ()
    add_arguments: Callable[[argparse.ArgumentParser], None] = _nothing
    check_options: Callable[[argparse.Namespace], None] = _nothing
    before_gpu: Callable[[argparse.Namespace], Sequence[str] | None] = _nothing
    files: Callable[[argparse.Namespace], Sequence[tuple[str, str]]] = lambda args: ()
    inputs: Callable[[argparse.Namespace], Sequence[tuple[str, str]]] = lambda args: ()

    @classmethod
    def of(cls, tool_cls: type) -> ToolSpec:
        return cls(
            tool_cls,
            tuple(getattr(tool_cls, "keys", ())),
            tuple(getattr(tool_cls, "panels", ())),
            getattr(tool_cls, "add_arguments", _nothing),
            getattr(tool_cls, "check_options", _nothing),
            getattr(tool_cls, "before_gpu", _nothing),
            getattr(tool_cls, "files", lambda args: ()),
            getattr(tool_cls, "inputs", lambda args: ()),
        )


@dataclass
class ToolContext:
    """What a tool may reach.

    Attributes:
        gpu: the ``engine.gpu.Gpu`` (device, adapter, features).
        graph: the ``RenderGraph`` (passes, named resources, profiler sink, output size).
        telemetry: the ``FrameRecord`` stream and its typed session.
        commands: the ``CommandRegistry`` shared by the console, the portal and the keys.
        loop: the ``FrameLoop``; ``loop.between_frames`` runs callables on the frame thread.
        options: the parsed command line (``argparse.Namespace``); tools read their own flags.
        window: the ``engine.surfaces.WindowSurface`` of a window run, else None (headless).
        final_frame: the index of a capture run's last frame (the one written out; a sample
            may move it, before or during the run, to end the run earlier or later), else
            None: views show their newest figures on it.
        hud: the HUD service (``engine.hud.service.Hud``): panels, mode, notice, per-pass
            notes, an area kept clear; None where no HUD runs (a test's bare context).
        log_tail: the ``lantern`` logger's newest lines (``engine.logtail.LogTail``) or None.
        updates: per-frame hooks ``fn(frame_ctx)`` run after the sample's update, in install
            order, before the frame is recorded.
        frame_done: hooks ``fn(texture)`` run after each frame's submit with the output
            texture (a capture request writes it).
        reports: callables returning extra shutdown-report text (or None): the sample's.
        tools: the installed tools, in install order.
        status: the run's exit status so far; a tool that fails to write an output sets 1.
    """

    gpu: Any
    graph: RenderGraph
    telemetry: Telemetry
    commands: CommandRegistry
    loop: FrameLoop
    options: argparse.Namespace = field(default_factory=argparse.Namespace)
    window: Any = None
    final_frame: int | None = None
    hud: Hud | None = None
    log_tail: LogTail | None = None
    updates: list[Callable[[FrameContext], None]] = field(default_factory=list)
    frame_done: list[Callable[[Any], None]] = field(default_factory=list)
    reports: list[Callable[[], str | None]] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    status: int = 0
    _closed: int = 0  # tools[:_closed] are closed
    _added: dict = field(default_factory=dict)  # id(tool) -> what its install added, by hub

    def install(self, tool: T) -> T:
        """Install ``tool`` (``tool.install(self)``), bind its declared keys (and, when the
        HUD has already started, add its declared panels) and keep it for ``close_all``;
        returns it. What the install added to the hubs (passes, commands,
        key bindings, per-frame hooks, telemetry subscriptions) is noted, so that closing the
        tool takes it away again even where the tool's own ``close`` does not."""
        before = self._hooks()
        tool.install(self)
        spec = ToolSpec.of(type(tool))
        for key in spec.keys:
            self.commands.bind(key.name, key.code, key.command)
        if self.hud is not None and self.hud.started:  # installed late: its panels now
            for cls in spec.panels:
                self.hud.add_panel(cls(tool))
        after = self._hooks()
        self._added[id(tool)] = {k: [x for x in v if x not in before[k]] for k, v in after.items()}
        self.tools.append(tool)
        return tool

    def _hooks(self) -> dict[str, list]:
        """Everything a tool may add, by hub (identity lists)."""
        g, loop, tel = self.graph, self.loop, self.telemetry
        return {
            "passes": list(g.passes) if g is not None else [],
            "commands": list(self.commands.commands.values()),
            "keys": list(self.commands.keys.values()),
            "updates": list(self.updates),
            "frame_done": list(self.frame_done),
            "reports": list(self.reports),
            "between_frames": list(loop.between_frames) if loop is not None else [],
            "subscribers": list(tel.subscribers) if tel is not None else [],
        }

    def _undo(self, tool) -> None:
        added = self._added.pop(id(tool), {})
        for p in added.get("passes", ()):
            self.graph.remove(p)
        for c in added.get("commands", ()):
            if self.commands.commands.get(c.name) is c:
                self.commands.unregister(c.name)
        for b in added.get("keys", ()):
            if self.commands.keys.get(b.key) is b:
                del self.commands.keys[b.key]
        for name in ("updates", "frame_done", "reports"):
            hooks = getattr(self, name)
            for fn in added.get(name, ()):
                if fn in hooks:
                    hooks.remove(fn)
        for fn in added.get("between_frames", ()):
            if fn in self.loop.between_frames:
                self.loop.between_frames.remove(fn)
        for fn in added.get("subscribers", ()):
            self.telemetry.unsubscribe(fn)

    def close_all(self) -> None:
        """Close every installed tool once, the last installed first; a tool's failure to
        close is logged and the others still close. The tools stay listed (``tools``): a
        sample's own ``close`` may read what they kept."""
        for t in reversed(self.tools[self._closed :]):
            try:
                t.close()
            except Exception as e:  # one broken tool must not keep the others' files open
                log.error("closing %s: %s: %s", t.name, type(e).__name__, e)
            self._undo(t)
        self._closed = len(self.tools)

    def on_update(self, fn: Callable[[FrameContext], None]) -> Callable[[], None]:
        """Run ``fn(frame_ctx)`` every frame before recording; returns the undo."""
        self.updates.append(fn)
        return lambda: self.updates.remove(fn) if fn in self.updates else None

    def option(self, name: str, default: Any = None) -> Any:
        """A command-line option by its ``argparse`` dest, or ``default`` when the run's
        parser has no such option (a tool installed by a test or another front end)."""
        return getattr(self.options, name, default)
