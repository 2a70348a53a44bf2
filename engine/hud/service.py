"""The HUD service: the tools' panels drawn by the ``DebugOverlay`` pass, over the frame.

The HUD is not a tool among tools: the App makes it before any tool (``ctx.hud``), so a tool
talks to it through a typed service, never by looking it up: ``set_notice`` (a shader's
compile error on the bottom row), ``set_notes`` (per-pass notes in the perf table's NOTE
column), ``set_mode`` / ``mode`` / ``modes``, ``keep_clear`` (a sample's own overlay) and
``on_notice`` (the console echoes notices). Its panels are the tools' declared ``panels``: the
HUD builds each as ``cls(tool)`` once every tool is installed (``start``); a panel may add
passes of its own then (the live flame chart), and the ``DebugOverlay`` pass is added after
them, last: it draws over the finished frame, timed like any pass. Where the output can be
written by compute shaders (``RenderGraph.output_storage_format``) that pass is
``DebugOverlayCompute``, else the raster ``DebugOverlayPass``: the same pixels.

The modes are ``off``, each panel's modes in the tools' order, then ``all`` (F1 cycles them;
``--overlay`` and the ``overlay`` command choose one; ``off`` disables the pass).

Data source: the telemetry and nothing else: the newest record's stats and cull counters,
the records' GPU scopes for the timeline, the session's profiling state.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Callable, Sequence

from engine.commands import Choice, Int
from engine.hud.debug_overlay import (
    DebugOverlayCompute,
    DebugOverlayPass,
    auto_hud_scale,
    grid_for,
)
from engine.hud.grid import DebugOverlay
from engine.hud.layout import Layout, PanelSpec, cut_line, plan
from engine.hud.palette import ERROR, HEADER, PANEL_BG, TEXT
from engine.hud.panel import HudData, Panel, mode_names, mode_panels

log = logging.getLogger("lantern")

KEY_F1 = 290  # glfw
HINT = "F1: HUD"
HINT_S = 3.0  # how long the off-mode hint shows
REFRESH_S = 0.25  # the panels are redrawn at least this often (readable digits, new cull data)
Note = tuple[str, bool, bool]  # (text, significant, slower): one pass's NOTE column entry


def hud_scale_type(text: str) -> int:
    """argparse type of ``--hud-scale``: an integer 1..16."""

    return Int(1, 16, what="an integer HUD scale").argparse_type()(text)


class Hud:
    """Lays out and draws the panels of the current mode into the overlay grid.

    Args:
        panel_classes: the panel classes the tools declare, in the tools' order (their modes
            are the HUD's).
        mode: the start mode (``--overlay``; default ``off``).
        hud_scale: a fixed integer HUD scale (``--hud-scale``), or None: from the size.
        clock: seconds for the frame time, FPS, the refresh rate and the off-mode hint; wall
            clock by default (a capture's simulated ``ctx.time`` would claim 60 FPS whatever
            the real rate). ``None`` uses ``ctx.time`` (deterministic: tests, references).

    Layout (``engine.hud.layout``): the mode's panels that have something to show go side
    by side on shelves under the mode tag; a compact form, then a smaller HUD scale (unless
    ``--hud-scale`` fixes it), then a one-line notice per panel left out when they do not
    fit. ``keep_clear`` keeps a sample's own overlay free of the HUD.

    Off mode: the pass is disabled, except for ``HINT_S`` seconds at the start of a window
    run and after switching to ``off``, while a one-line hint says F1 brings the HUD back
    (captures, with no window, never show it unless the mode was switched).

    Attributes (after ``start``): overlay, overlay_pass (the grid and its pass), render_pass
    (the graph's ``DebugOverlay`` pass), panels (key -> panel), mode, modes, notes.
    """

    name = "hud"

    def __init__(
        self,
        panel_classes: Sequence[type[Panel]] = (),
        *,
        mode: str | None = None,
        hud_scale: int | None = None,
        clock: Callable[[], float] | None = time.perf_counter,
    ):
        self.clock = clock
        self.panel_classes = tuple(panel_classes)
        self.modes = mode_names(self.panel_classes)
        self.mode_panels = mode_panels(self.panel_classes)
        self.hud_scale = hud_scale
        self.panels: dict[str, Panel] = {}
        self.mode = "off"
        self._start_mode = mode or "off"
        if self._start_mode not in self.modes:
            raise ValueError(f"overlay mode {mode!r} is not one of {', '.join(self.modes)}")
        self.size: tuple[int, int] | None = None
        self.scales: tuple[int, ...] = (1,)
        self.keep_clear_box: tuple[int, int, int, int] | None = None
        self.layout: Layout | None = None
        self.render_pass: DebugOverlayPass | DebugOverlayCompute | None = None
        self._layout_due = True
        self._cull_seen = False
        self._gpu_seen = False
        self._hint_until = -math.inf
        self._hint_drawn = False
        self._hint_due = False
        self._console_open = False
        self._shown: list[Panel] = []
        self._last_build = -math.inf
        self._built_names: list[str] | None = None  # the pass names the layout was built for
        self.notice: str | None = None  # one line on the bottom row (set_notice)
        self._notice_listeners: list[Callable[[str | None], None]] = []
        self.notes: dict[str, dict[str, Note]] = {}  # source -> pass -> note (set_notes)
        self.notes_version = 0

    @classmethod
    def for_tools(cls, tools, **kw) -> Hud:
        """A HUD whose modes are those of the panels ``tools`` (classes or instances)
        declare; ``kw`` as the constructor's."""
        classes = [t if isinstance(t, type) else type(t) for t in tools]
        return cls([p for c in classes for p in getattr(c, "panels", ())], **kw)

    # -- options -------------------------------------------------------------------------------
    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser, modes: Sequence[str]) -> None:
        """``--overlay MODE`` (choices: ``modes``, the tools' panels) and ``--hud-scale N``."""
        g = parser.add_argument_group("HUD")
        g.add_argument(
            "--overlay",
            choices=modes,
            metavar="MODE",
            default=None,
            help="HUD mode: " + ", ".join(modes) + " (default: perf when profiling, else off; "
            "F1 cycles)",
        )
        g.add_argument(
            "--hud-scale",
            type=hud_scale_type,
            metavar="N",
            default=None,
            help="integer HUD scale (default: chosen from the output size)",
        )

    # -- start and stop ------------------------------------------------------------------------
    def start(self, ctx, tools: Sequence = ()) -> None:
        """Build each tool's declared panels (``cls(tool)``, in order: a panel's own passes
        first), add the ``DebugOverlay`` pass LAST (it draws over the frame), register the
        ``overlay`` command, bind F1 and switch to the start mode."""
        self.ctx = ctx
        self.graph, self.telemetry = ctx.graph, ctx.telemetry
        self.final_frame = ctx.final_frame
        before = list(ctx.graph.passes)
        for tool in tools:
            for cls in getattr(type(tool), "panels", ()):
                self.add_panel(cls(tool))
        self._panel_passes = [p for p in ctx.graph.passes if p not in before]
        self.overlay = DebugOverlay()
        storage = ctx.graph.output_storage_format
        self.overlay_pass = (
            DebugOverlayCompute(ctx.graph.device, self.overlay, ctx.graph.output_format, storage)
            if storage
            else DebugOverlayPass(ctx.graph.device, self.overlay, ctx.graph.output_format)
        )
        self.render_pass = ctx.graph.add(self.overlay_pass)
        self._hint_due = ctx.window is not None  # the start of a window run
        self.set_mode(self._start_mode if self.mode == "off" else self.mode, hint=False)
        self.resize(ctx.graph.size)
        ctx.graph.on_resize(self.resize)
        ctx.on_update(self.update)
        ctx.commands.register(
            "overlay",
            self._overlay_command,
            args=[Choice(*self.modes, "next")],
            help="HUD mode",
        )
        ctx.commands.bind("F1", KEY_F1, "overlay next")

    def close(self) -> None:
        """Close the panels and take back what ``start`` added: the passes (its own and its
        panels'), the command (and its F1 key), the per-frame and resize hooks."""
        for p in self.panels.values():
            p.close()
        if self.render_pass is None:
            return
        ctx = self.ctx
        for p in (*self._panel_passes, self.render_pass):
            ctx.graph.remove(p)
        if self.resize in ctx.graph._resize_callbacks:
            ctx.graph._resize_callbacks.remove(self.resize)
        if self.update in ctx.updates:
            ctx.updates.remove(self.update)
        if "overlay" in ctx.commands.commands:
            ctx.commands.unregister("overlay")  # its F1 binding goes with it

    @property
    def current_mode(self) -> str:
        """The mode shown now, or before ``start`` the one it will start in."""
        return self.mode if self.started else self._start_mode

    @property
    def started(self) -> bool:
        """Whether ``start`` ran (the HUD's pass is in the graph)."""
        return self.render_pass is not None

    def add_panel(self, panel: Panel) -> None:
        """Add a panel (its ``key`` replaces a panel of the same key); a mode of its that the
        HUD lacks joins the F1 cycle before ``all``."""
        self.panels[panel.key] = panel
        if type(panel) not in self.panel_classes:
            self.panel_classes += (type(panel),)
            self.modes = mode_names(self.panel_classes)
            self.mode_panels = mode_panels(self.panel_classes)
        self._layout_due = True
        if self.render_pass is not None and panel.key in self.mode_panels.get(self.mode, ()):
            self._shown.append(panel)
            panel.activate(True)

    def _overlay_command(self, mode: str) -> str:
        if mode == "next":
            mode = self.modes[(self.modes.index(self.mode) + 1) % len(self.modes)]
        self.set_mode(mode)
        return f"overlay: {mode}"

    # -- mode ----------------------------------------------------------------------------------
    def set_mode(self, mode: str, *, hint: bool = True) -> None:
        """Switch mode; switching to ``off`` shows the F1 hint for ``HINT_S`` seconds unless
        ``hint`` is False. Before ``start`` it only chooses the mode started in.

        Raises:
            ValueError: a name not in ``modes``.
        """
        if mode not in self.modes:
            raise ValueError(f"overlay mode {mode!r} is not one of {', '.join(self.modes)}")
        if self.render_pass is None:
            self.mode = self._start_mode = mode
            return
        keys = self.mode_panels[mode]
        shown = [p for k, p in self.panels.items() if k in keys]
        for p in self._shown:
            if p not in shown:
                p.activate(False)
        for p in shown:
            if p not in self._shown or mode != self.mode:
                p.activate(True)
        self._shown = shown
        self.mode = mode
        self.render_pass.enabled = mode != "off"
        self._hint_due = self._hint_due or (hint and mode == "off")
        self._hint_drawn = False
        self._layout_due = True

    def set_notice(self, text: str | None) -> None:
        """Show ``text`` (one line, red) on the HUD's bottom row in every mode, ``off``
        included, from the next frame on (e.g. a shader's compile error); None removes it.
        ``on_notice`` listeners hear of it (the console prints it)."""
        self.notice = text
        self._layout_due = True
        for fn in self._notice_listeners:
            fn(text)
        if text is None and self.mode == "off" and self.render_pass is not None:
            self.overlay.clear()
            self._hint_drawn = False
            self.render_pass.enabled = False

    def on_notice(self, fn: Callable[[str | None], None]) -> Callable[[], None]:
        """Call ``fn(text)`` whenever the notice changes (None: removed); returns the undo."""
        self._notice_listeners.append(fn)
        return lambda: self._notice_listeners.remove(fn) if fn in self._notice_listeners else None

    def set_notes(self, source: str, notes: dict[str, Note]) -> None:
        """Per-pass notes from ``source`` (``"reload"``, ``"baseline"``): ``{pass: (text,
        significant, slower)}``, shown in the perf table's NOTE column from the next frame (a
        source set first wins a pass)."""
        self.notes[source] = dict(notes)
        self.notes_version += 1
        self._layout_due = True

    def _draw_notice(self) -> None:
        ov = self.overlay
        text = self.notice[: ov.cols]
        ov.text(0, ov.rows - 1, text.ljust(min(ov.cols, len(self.notice))), ERROR, PANEL_BG)

    def keep_clear(self, box: tuple[int, int, int, int] | None) -> None:
        """Keep the HUD out of the pixel box ``(x0, y0, x1, y1)`` (a sample's own overlay,
        e.g. s03's gallery); None gives the whole output back. The HUD then uses the largest
        strip beside the box where its panels fit."""
        self.keep_clear_box = None if box is None else tuple(int(v) for v in box)
        self._layout_due = True

    def resize(self, size: tuple[int, int]) -> None:
        """Pick the HUD scales to try (``--hud-scale`` fixes one, else from the size down to
        1) and the grid for ``size``."""
        forced = self.hud_scale
        top = forced or auto_hud_scale(size)
        self.scales = (forced,) if forced else tuple(range(top, 0, -1))
        self._set_grid(top, grid_for(size, top))
        self.overlay_pass.target_size = tuple(size)
        self.size = tuple(size)
        self._layout_due = True
        self._hint_drawn = False  # a resize cleared the grid

    def _set_grid(self, scale: int, grid: tuple[int, int]) -> None:
        if self.overlay_pass.scale != scale or (self.overlay.cols, self.overlay.rows) != grid:
            self.overlay_pass.set_scale(scale)
            self.overlay.resize(*grid)

    # -- per frame -----------------------------------------------------------------------------
    def update(self, ctx) -> None:
        """Per frame, before recording: tick the shown panels and (re)build the layout."""
        if self.size != tuple(ctx.size):
            self.resize(ctx.size)
        now = ctx.time if self.clock is None else self.clock()
        always = [p for p in self.panels.values() if p.always]
        light = HudData([], now=now, size=self.size)  # what an always-shown panel may read
        if any([p.tick(light) for p in always]):  # e.g. the console typed into: redraw
            self._layout_due = True
        console_open = any(p.has_content(light) for p in always)
        closed, self._console_open = self._console_open and not console_open, console_open
        if self.mode == "off" and not console_open:
            if closed:  # the console just closed over an off HUD: nothing left to draw
                self.overlay.clear()
                self._hint_drawn = False
            if self.notice is not None:  # the notice alone over an off HUD
                if self._layout_due:
                    self._layout_due = False
                    self.overlay.clear()
                    self._draw_notice()
                self.render_pass.enabled = True
                return
            self._update_hint(now)
            return
        self.render_pass.enabled = True
        data = self._data(self.graph.pass_names(), now, ctx)
        refreshed = False
        for p in self._shown:  # (off: nothing shown, no stats computed at all)
            refreshed = p.tick(data) or refreshed
        stale = not 0 <= now - self._last_build < REFRESH_S
        passes = data.names != self._built_names  # a knob turned a pass on or off: the
        if refreshed or self._layout_due or stale or passes:  # panels' rows and series change
            self._layout_due = False
            self._last_build = now
            self._built_names = data.names
            self._build(data)
        elif self.layout is not None:
            placed = {pl.key for pl in self.layout.placements}
            for p in self._shown:
                if p.key in placed:
                    p.update(self.overlay, data)

    def _data(self, names: list[str], now: float, ctx) -> HudData:
        latest = self.telemetry.latest
        cull = None if latest is None else latest.cull
        self._cull_seen = self._cull_seen or cull is not None
        self._gpu_seen = self._gpu_seen or (latest is not None and latest.gpu is not None)
        prof = self.telemetry.session.profiling
        return HudData(
            names,
            cull,
            self._cull_seen,
            prof is not None and prof.gpu and prof.gpu_available,
            self._gpu_seen,
            now,
            tuple(ctx.size),
            self.ctx.final_frame is not None and ctx.frame_index == self.ctx.final_frame,
            self.notes,
            self.notes_version,
            () if latest is None else latest.counters,
            frozenset(getattr(r, "channel", None) for r in self.graph.readbacks),
        )

    def _update_hint(self, now: float) -> None:
        """Off mode: show the hint until ``_hint_until``, then disable the pass."""
        if self._hint_due:
            self._hint_due = False
            self._hint_until = now + HINT_S
        show = now < self._hint_until
        if show and not self._hint_drawn:
            lay = plan([], self.size, self.scales[:1], len(HINT), self.keep_clear_box)
            self._set_grid(lay.scale, lay.grid)
            self.overlay.clear()
            if lay.tag is not None:
                self.overlay.text(*lay.tag, HINT, HEADER, PANEL_BG)
            self.layout = lay
        elif not show and self._hint_drawn:
            self.overlay.clear()
        self._hint_drawn = show
        self.render_pass.enabled = show

    def _build(self, data: HudData) -> None:
        keys = self.mode_panels[self.mode]
        always = [p for p in self.panels.values() if p.always and p.has_content(data)]
        grid = [p for p in self._shown if not p.underlay]
        shown = [p for p in grid if p.has_content(data)] + always
        specs = [PanelSpec(p.key, tuple(p.sizes(data)), p.anchor) for p in shown]
        tag = f"HUD {self.mode} [F1]" if self.mode != "off" else "console [`]"
        lay = plan(specs, self.size, self.scales, len(tag), self.keep_clear_box)
        self.layout = lay
        self._set_grid(lay.scale, lay.grid)
        ov = self.overlay
        ov.clear()
        for pl in lay.placements:
            panel = self.panels[pl.key]
            panel.width = pl.size[0]
            panel.draw(ov, pl.col, pl.row, pl.form, data)
        c0, r0, c1, r1 = lay.region
        lines, tag_at = list(lay.notices), lay.tag
        if grid and not [p for p in shown if p.key in keys]:  # nothing to show: say so
            empty = [p.empty_line(data) for p in grid]
            if r1 - r0 > len(empty):
                lines += [(c0 + 1, r0 + 1 + i, text) for i, text in enumerate(empty)]
            else:  # a one-row region: the line takes the tag's place
                lines, tag_at = [(c0, r0, "; ".join(empty))], None
        for col, row, text in lines:
            ov.text(col, row, cut_line(text, c1 - col), TEXT, PANEL_BG)
        if tag_at is not None:
            ov.text(*tag_at, tag[: c1 - tag_at[0]], HEADER, PANEL_BG)
        if self.notice is not None:
            self._draw_notice()
