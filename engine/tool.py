"""The tool protocol: everything a developer looks at or pokes is a tool over two hubs.

Data flows through the ``FrameRecord`` stream (``ctx.telemetry``), control through the
command registry (``ctx.commands``). A tool stands on those, the render graph and the frame
loop, and nothing else: it never sees the ``App``.

    class FpsPrinter:
        name = "fps"

        def install(self, ctx: ToolContext) -> None:
            self._unsubscribe = ctx.telemetry.subscribe(self.on_record)
            ctx.commands.register("fps", self.show, help="print the frame rate")

        def close(self) -> None:
            self._unsubscribe()

``App`` installs tools from a list, in order, and closes them in reverse order at shutdown.
A tool that needs another (the console draws through the HUD) finds it with
``ctx.tool(Hud)``, which raises ``LookupError`` when it is not installed before it.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # typing only: the tool layer sits above all of these
    from .commands import CommandRegistry
    from .graph import FrameContext, RenderGraph
    from .loop import FrameLoop
    from .telemetry import Telemetry

T = TypeVar("T")
log = logging.getLogger("lantern")


@runtime_checkable
class Tool(Protocol):
    """A plugin of the running sample.

    ``install(ctx)`` adds the tool's passes (``ctx.graph.add``), commands
    (``ctx.commands.register``, key bindings with ``ctx.commands.bind``), telemetry
    subscriptions and per-frame hooks (``ctx.on_update``); ``close()`` undoes what install
    did and releases GPU objects. Neither may raise for a user's mistake: a bad option is a
    ``ValueError`` with a one-line message, reported by the App without a traceback.
    """

    name: str

    def install(self, ctx: ToolContext) -> None: ...

    def close(self) -> None: ...


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
        final_frame: the index of a capture run's last frame (the one written out), else
            None: views show their newest figures on it.
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
    updates: list[Callable[[FrameContext], None]] = field(default_factory=list)
    frame_done: list[Callable[[Any], None]] = field(default_factory=list)
    reports: list[Callable[[], str | None]] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    status: int = 0
    _closed: int = 0  # tools[:_closed] are closed

    def install(self, tool: T) -> T:
        """Install ``tool`` (``tool.install(self)``) and keep it for ``tool()`` and
        ``close_all``; returns it."""
        tool.install(self)
        self.tools.append(tool)
        return tool

    def close_all(self) -> None:
        """Close every installed tool once, the last installed first; a tool's failure to
        close is logged and the others still close. The tools stay findable (``tool``): a
        sample's own ``close`` may read what they kept."""
        for t in reversed(self.tools[self._closed :]):
            try:
                t.close()
            except Exception as e:  # one broken tool must not keep the others' files open
                log.error("closing %s: %s: %s", t.name, type(e).__name__, e)
        self._closed = len(self.tools)

    def on_update(self, fn: Callable[[FrameContext], None]) -> Callable[[], None]:
        """Run ``fn(frame_ctx)`` every frame before recording; returns the undo."""
        self.updates.append(fn)
        return lambda: self.updates.remove(fn) if fn in self.updates else None

    def tool(self, cls: type[T]) -> T:
        """The installed tool of class ``cls``; ``LookupError`` when none is installed."""
        for t in self.tools:
            if isinstance(t, cls):
                return t
        raise LookupError(f"tool {cls.__name__} is not installed (install it before its users)")

    def find(self, cls: type[T]) -> T | None:
        """The installed tool of class ``cls``, or None (an optional dependency)."""
        return next((t for t in self.tools if isinstance(t, cls)), None)

    def named(self, name: str) -> Tool | None:
        """The installed tool called ``name`` (its ``name`` attribute), or None: for a tool
        in a layer its caller must not import (a view tool asking the HUD for a mode)."""
        return next((t for t in self.tools if t.name == name), None)

    def option(self, name: str, default: Any = None) -> Any:
        """A command-line option by its ``argparse`` dest, or ``default`` when the run's
        parser has no such option (a tool installed by a test or another front end)."""
        return getattr(self.options, name, default)
