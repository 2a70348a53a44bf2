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
    from engine.commands import CommandRegistry
    from engine.graph import FrameContext, RenderGraph
    from engine.loop import FrameLoop
    from engine.telemetry import Telemetry

T = TypeVar("T")
log = logging.getLogger("lantern")


class OptionError(ValueError):
    """A command-line option a tool cannot apply (``--view``, ``--dump``, ``--baseline``...):
    the user's mistake, reported in one line with exit status 2 like argparse's errors."""


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
    _added: dict = field(default_factory=dict)  # id(tool) -> what its install added, by hub

    def install(self, tool: T) -> T:
        """Install ``tool`` (``tool.install(self)``) and keep it for ``tool()`` and
        ``close_all``; returns it. What the install added to the hubs (passes, commands,
        key bindings, per-frame hooks, telemetry subscriptions) is noted, so that closing the
        tool takes it away again even where the tool's own ``close`` does not."""
        before = self._hooks()
        tool.install(self)
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
        close is logged and the others still close. The tools stay findable (``tool``): a
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
