"""The in-game HUD tool: the registered panels drawn by the ``DebugOverlay`` pass.

``Hud`` is a tool (``engine.tool``): its install builds every panel of
``engine.debug.panels.PANELS`` (a panel may add passes of its own, e.g. the live flame
chart), adds the ``DebugOverlay`` render pass after them (it loads the finished frame and
draws over it, and the graph times it like any pass), registers the ``overlay`` command and
binds F1 to ``overlay next``. The HUD alone owns its mode (``--overlay``; ``off`` disables
the pass).

Data source: the telemetry and nothing else: the newest record's stats and cull counters,
the records' GPU scopes for the timeline, the session's profiling state.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

from engine.commands import Choice
from engine.debug.layout import Layout, PanelSpec, plan
from engine.debug.logtail import ERROR
from engine.debug.panels import PANELS, mode_names, mode_panels
from engine.debug.perf import HEADER, PANEL_BG, TEXT
from engine.overlay.debug_overlay import DebugOverlayPass, auto_hud_scale, grid_for
from engine.overlay.grid import DebugOverlay
from engine.overlay.panel import HudData, Panel

log = logging.getLogger("lantern")

KEY_F1 = 290  # glfw
HINT = "F1: HUD"
HINT_S = 3.0  # how long the off-mode hint shows
REFRESH_S = 0.25  # the panels are redrawn at least this often (readable digits, new cull data)


def modes() -> tuple[str, ...]:
    """The HUD's modes in F1 order (``--overlay``'s and ``overlay``'s choices)."""
    return mode_names(PANELS)


class Hud:
    """Lays out and draws the panels of the current mode into the overlay grid.

    Args:
        mode: the start mode (else ``--overlay``, else ``off``).
        clock: seconds for the frame time, FPS, the refresh rate and the off-mode hint; wall
            clock by default (a capture's simulated ``ctx.time`` would claim 60 FPS whatever
            the real rate). ``None`` uses ``ctx.time`` (deterministic: tests, references).
        panels: the panel classes to build (default ``PANELS``).

    Layout (``engine.debug.layout``): the mode's panels that have something to show go side
    by side on shelves under the mode tag; a compact form, then a smaller HUD scale (unless
    ``--hud-scale`` fixes it), then a one-line notice per panel left out when they do not
    fit. ``keep_clear`` keeps a sample's own overlay free of the HUD.

    Off mode: the pass is disabled, except for ``HINT_S`` seconds at the start of a window
    run and after switching to ``off``, while a one-line hint says F1 brings the HUD back
    (captures, with no window, never show it unless the mode was switched).

    Attributes (after install): overlay, overlay_pass (the grid and its pass), render_pass
    (the graph's ``DebugOverlay`` pass), panels (key -> panel), mode, modes.
    """

    name = "hud"

    def __init__(
        self,
        *,
        mode: str | None = None,
        clock: Callable[[], float] | None = time.perf_counter,
        panels=PANELS,
    ):
        self.clock = clock
        self.panel_classes = tuple(panels)
        self.modes = mode_names(self.panel_classes)
        self.mode_panels = mode_panels(self.panel_classes)
        self._start_mode = mode
        self.panels: dict[str, Panel] = {}
        self.mode = "off"
        self.size: tuple[int, int] | None = None
        self.scales: tuple[int, ...] = (1,)
        self.keep_clear_box: tuple[int, int, int, int] | None = None
        self.layout: Layout | None = None
        self._layout_due = True
        self._cull_seen = False
        self._gpu_seen = False
        self._hint_until = -math.inf
        self._hint_drawn = False
        self._console_open = False
        self._shown: list[Panel] = []
        self._last_build = -math.inf
        self._built_names: list[str] | None = None  # the pass names the layout was built for
        self.notice: str | None = None  # one line on the bottom row (set_notice)

    # -- tool ----------------------------------------------------------------------------------
    def install(self, ctx) -> None:
        self.ctx = ctx
        self.graph, self.telemetry = ctx.graph, ctx.telemetry
        self.hud_scale = ctx.option("hud_scale")
        self.final_frame = ctx.final_frame
        self.panels = {cls.key: cls(ctx) for cls in self.panel_classes}  # passes first
        self.overlay = DebugOverlay()
        self.overlay_pass = DebugOverlayPass(
            ctx.graph.device, self.overlay, ctx.graph.output_format
        )
        self.render_pass = ctx.graph.add(self.overlay_pass)  # LAST: it draws over the frame
        self._hint_due = ctx.window is not None  # the start of a window run
        mode = self._start_mode or ctx.option("overlay") or "off"
        self.set_mode(mode, hint=False)
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
        for p in self.panels.values():
            p.close()

    def add_panel(self, panel: Panel) -> None:
        """Add a panel built by another tool (e.g. the console's, shown in every mode)."""
        self.panels[panel.key] = panel
        self._layout_due = True

    def _overlay_command(self, mode: str) -> str:
        if mode == "next":
            mode = self.modes[(self.modes.index(self.mode) + 1) % len(self.modes)]
        self.set_mode(mode)
        return f"overlay: {mode}"

    # -- mode ----------------------------------------------------------------------------------
    def set_mode(self, mode: str, *, hint: bool = True) -> None:
        """Switch mode; switching to ``off`` shows the F1 hint for ``HINT_S`` seconds unless
        ``hint`` is False. Raises ValueError for a name not in ``modes``."""
        if mode not in self.modes:
            raise ValueError(f"overlay mode {mode!r} is not one of {', '.join(self.modes)}")
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
        included, from the next frame on (e.g. a shader's compile error); None removes it."""
        self.notice = text
        self._layout_due = True
        if text is None and self.mode == "off":
            self.overlay.clear()
            self._hint_drawn = False
            self.render_pass.enabled = False

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
            self.final_frame is not None and ctx.frame_index == self.final_frame,
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
            ov.text(col, row, text[: max(0, c1 - col)], TEXT, PANEL_BG)
        if tag_at is not None:
            ov.text(*tag_at, tag[: c1 - tag_at[0]], HEADER, PANEL_BG)
        if self.notice is not None:
            self._draw_notice()
