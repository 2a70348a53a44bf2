"""The debug views tool: ``view NAME [N]`` in the console and the portal, F3 for the next one,
``--view NAME[:N]`` on the command line (so captures show them).

The views themselves are ``engine.tools.views.passes`` (one fullscreen pass over targets the frame
already has); this tool owns the ``View`` pass, switches it on in place of ``Post`` and
checks that the run has what a view reads (a one-line error naming the flag otherwise).
A sample without the standard frame has no views: the command says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from engine.commands import Arg, CommandError, Int
from engine.culling.pyramid import pyramid_base, pyramid_levels
from engine.culling.reference import VISIBLE
from engine.passes.resources import frame_resources
from engine.passes.shadow import BLEND_BAND
from engine.settings import local_light_count
from engine.tool import Key, OptionError
from engine.tools.views.panel import ViewPanel
from engine.tools.views.passes import (
    OVERDRAW_CEILING,
    OVERDRAW_MAX,
    TEXELS_LOG2,
    ViewCulledPass,
    ViewGeometryPass,
    ViewPass,
    ViewWirePass,
    WireArgsPass,
    parse_view,
    view_type,
)
from engine.tools.views.reference import CASCADE_COLOUR_NAMES
from engine.tools.views.views import BY_NAME, NAMES

log = logging.getLogger("lantern")

KEY_F3 = 292  # glfw
DEFAULT_LEVEL = 1  # hiz: level 1 (level 0 is the depth buffer at power-of-two size)


class ViewName(Arg):
    """A view name, ``hiz:N``, ``off`` or ``next``."""

    metavar = "NAME|off|next"

    def parse(self, text: str):
        if text in ("off", "next"):
            return text, None
        try:
            return parse_view(text)
        except ValueError as e:
            raise CommandError(f"{e}; or off, next") from None

    def choices(self) -> Sequence[str]:
        return (*NAMES, "off", "next")


def check_view_option(args) -> str | None:
    """Why ``--view`` cannot be shown with the rest of the command line (one line naming
    the flag), checked before any GPU work; None when it can (or no ``--view``)."""
    view = getattr(args, "view", None)
    if view is None:
        return None
    name = view[0]
    flag = BY_NAME[name].refused_by(args)
    if flag is not None:
        return f"view {name} cannot be shown with {flag}"
    if name == "cost" and getattr(args, "gpu_profile", None) != "draws":
        return "view cost needs per-draw GPU timing: add --gpu-profile draws"
    if name == "lights" and local_light_count(args) == 0:
        return "view lights needs local lights, and this run has none: add --lights N"
    if name == "culled" and getattr(args, "cull_camera", None) is None and args.capture:
        return "view culled needs a frozen culling camera: add --cull-camera EX,EY,EZ:TX,TY,TZ"
    size = getattr(args, "size", None)  # a capture's output size (a window's may differ)
    headless = getattr(args, "capture", None) or getattr(args, "dump", None)
    if name == "hiz" and view[1] is not None and size is not None and headless:
        n = pyramid_levels(pyramid_base(size[0]), pyramid_base(size[1]))
        if view[1] >= n:
            return (
                f"--view hiz:{view[1]} is out of range: at {size[0]}x{size[1]} the pyramid has "
                f"levels 0..{n - 1}"
            )
    return None


class ViewTool:
    """Owns the ``View`` pass and the ``view`` command.

    Attributes:
        current: the view shown (a name in ``engine.tools.views.views.VIEWS``) or None.
        view_pass: the ``ViewPass`` (None in a sample without the standard frame).
    """

    name = "views"
    keys = (Key("F3", KEY_F3, "view next", "next debug view"),)
    panels = (ViewPanel,)

    @classmethod
    def add_arguments(cls, parser) -> None:
        g = parser.add_argument_group("debug views")
        g.add_argument(
            "--view",
            type=view_type,
            default=None,
            metavar="NAME",
            help="start with a debug view in place of the tone-mapped picture: "
            + ", ".join(NAMES)
            + " (hiz:N for Hi-Z level N, overdraw:after, cascades:texels); F3 / 'view NAME' "
            "switch it",
        )

    @classmethod
    def check_options(cls, args) -> None:
        why = check_view_option(args)
        if why is not None:
            raise OptionError(f"argument --view: {why}")

    def __init__(self):
        self.current: str | None = None
        self.view_pass: ViewPass | None = None
        self.cost_frame: int | None = None  # the record the cost weights came from
        self.cost_weights = None  # (4, batches) ns per fragment (tool.cost_weights)
        self.clamped_from: int | None = None  # hiz: the level a resize took away
        self._undo = []

    def install(self, ctx) -> None:
        self.ctx = ctx
        self.res = frame_resources(ctx.graph)
        start = ctx.option("view")
        ctx.commands.register(
            "view",
            self.command,
            args=[ViewName(optional=True), Int(0, what="a level", optional=True)],
            help="debug view of the frame: " + ", ".join(NAMES) + "; off; next (F3)",
        )
        if self.res is None:
            if start is not None:
                raise OptionError("--view: this sample has no standard frame (s13 has one)")
            return
        self.geometry_pass = ctx.graph.add(ViewGeometryPass(self.res))
        self.view_pass = ctx.graph.add(ViewPass(self.res))
        self.culled_pass = ctx.graph.add(ViewCulledPass(self.res))
        self.wire_args = ctx.graph.add(WireArgsPass(self.res))
        self.wire_pass = ctx.graph.add(ViewWirePass(self.res, self.wire_args.args))
        self._culled_key = None
        self.culled_ready = False  # the culler's classes for the frozen camera arrived
        self.post = self.res.output_pass  # Post, or the sample's stand-in for it
        self._undo.append(ctx.on_update(self._update))
        if start is not None:
            try:
                self.set_view(*start)
            except CommandError as e:
                raise OptionError(f"--view: {e}") from None

    def close(self) -> None:
        for undo in self._undo:
            undo()
        self._undo.clear()

    # -- switching -------------------------------------------------------------------------
    def available(self) -> list[str]:
        """The views this run can show now (its knobs: e.g. no ``shadow`` without shadows)."""
        s = self.res.settings
        draws = self._cost_requirement() is None
        frozen = self.res.cull_camera is not None
        return [
            n
            for n in NAMES
            if BY_NAME[n].requirement(s) is None
            and (n != "cost" or draws)
            and (n != "culled" or frozen)
        ]

    def _cost_requirement(self) -> str | None:
        """Why the cost view cannot be shown now (per-draw timing off, or a GPU opened
        without pipeline statistics, which only start-up can ask for), or None."""
        gpu, prof = self.ctx.gpu, self.ctx.graph.profiler
        can = set(gpu.adapter.features)  # what the GPU offers; gpu.features: what was enabled
        missing = [f for f in ("timestamp-query", "pipeline-statistics-query") if f not in can]
        if missing:
            return (
                f"view cost needs GPU timestamps and fragment counts, and {gpu.summary} has no "
                f"{' or '.join(missing)}: not available on this GPU"
            )
        if prof is None or getattr(prof, "draws", None) is None:
            return (
                "view cost needs per-draw GPU timing: 'profile draws on' (or start with "
                "--gpu-profile draws)"
            )
        if "pipeline-statistics-query" not in gpu.features:
            return (
                "view cost needs fragment counts (pipeline statistics), which the GPU is asked "
                "for at start-up: restart with --gpu-profile draws"
            )
        return None

    def set_view(self, name: str | None, level: int | None = None) -> str:
        """Show view ``name`` (None: the normal picture) from the next frame on; ``level``
        is the Hi-Z level of ``hiz`` (default ``DEFAULT_LEVEL``). Returns the output line.

        Raises:
            CommandError: no standard frame, a view the run lacks data for (naming the flag),
                or a level outside the pyramid's ``0 .. levels - 1``.
        """
        if self.res is None:
            raise CommandError("this sample has no standard frame: no debug views")
        if name is None:
            self.current = None
            self._apply()
            self._hud_mode(False)
            return "view: off (the normal picture)"
        why = BY_NAME[name].requirement(self.res.settings)
        if why is None and name == "cost":
            why = self._cost_requirement()
        if why is None and name == "culled" and self.res.cull_camera is None:
            why = (
                "view culled needs a frozen culling camera: F2 in a window, 'cull freeze', "
                "or --cull-camera EX,EY,EZ:TX,TY,TZ"
            )
        if why is not None:
            raise CommandError(why)
        vp = self.view_pass
        self.clamped_from = None
        if name == "hiz":
            n = vp.levels()
            level = min(DEFAULT_LEVEL, n - 1) if level is None else level
            if not 0 <= level < n:
                raise CommandError(
                    f"hiz level {level} is out of range: the pyramid has levels 0..{n - 1}"
                )
            vp.level = level
        elif name == "overdraw":
            if level not in (None, 0, 1):
                raise CommandError(
                    f"overdraw level {level}: 0 counts before the depth test, 1 after "
                    "(view overdraw:before, view overdraw:after)"
                )
            vp.level = 0 if level is None else level
        elif name == "cascades":
            if level not in (None, 0, 1):
                raise CommandError(
                    f"cascades level {level}: 0 shows the cascade index, 1 the texel density "
                    "(view cascades:index, view cascades:texels)"
                )
            vp.level = 0 if level is None else level
        elif level is not None:
            raise CommandError(f"view {name} takes no level (only hiz, overdraw and cascades "
                               "do)")  # fmt: skip
        if BY_NAME[name].geometry is not None:
            self.geometry_pass.ensure_targets()
            mode, _, quantity = BY_NAME[name].geometry.partition(":")
            self.geometry_pass.mode = mode
            self.geometry_pass.quantity = int(quantity or 0)
        vp.name_shown, self.current = name, name
        self.res.graph.invalidate()  # the pass reads what this view needs
        self._apply()
        self._hud_mode(True)
        return f"view: {self.describe()}"

    def command(self, choice, level: int | None) -> str:
        if choice is None:
            now = self.describe() if self.current else "off"
            return f"view: {now}; views: {', '.join(NAMES)}"
        name, lvl = choice
        if name == "off":
            return self.set_view(None)
        if name == "next":
            return self.next_view()
        return self.set_view(name, lvl if lvl is not None else level)

    def next_view(self) -> str:
        """F3: the next view this run can show, after the last one the normal picture."""
        if self.res is None:
            raise CommandError("this sample has no standard frame: no debug views")
        avail = self.available()
        if self.current is None:
            return self.set_view(avail[0]) if avail else "view: none available"
        later = [n for n in avail if NAMES.index(n) > NAMES.index(self.current)]
        return self.set_view(later[0]) if later else self.set_view(None)

    def describe(self) -> str:
        """The shown view and how to read it (the legend's first line)."""
        vp = self.view_pass
        name = self.current
        if name == "culled":
            self._update_culled()
            if not self.culled_ready:
                return "culled: waiting for the culler's classes for the frozen camera"
            f, sm, occ = self.culled_pass.counts
            return (
                f"culled by the frozen camera, ghosted over the picture: frustum {f:,} red, "
                f"sub-pixel {sm:,} amber, occluded {occ:,} purple (Hi-Z of the frozen "
                "camera's depth)"
            )
        if name == "cost":
            if self.cost_frame is None:
                return (
                    "cost: waiting for per-draw timings with fragment counts (--gpu-profile "
                    "draws; pipeline statistics needed)"
                )
            lo, hi = vp.cost_range
            return (
                f"cost: measured GPU ns per pixel (each shaded fragment adds its draw's ns per "
                f"fragment), Turbo on log2 {lo:.3g}..{hi:.3g} ns, a tick per power of two; "
                f"timings of frame {self.cost_frame}"
            )
        if name == "overdraw":
            when = "after" if vp.level else "before"
            return (
                f"overdraw: fragments per pixel {when} the depth test, Turbo on log2 1 .. "
                f">={OVERDRAW_MAX} (ticks at 1 2 4 8 16 32; {OVERDRAW_MAX} and more: the top "
                f"colour); counts stop at {OVERDRAW_CEILING:.0f} (inspect and --dump say "
                f">={OVERDRAW_CEILING:.0f}); 'view overdraw:{'before' if vp.level else 'after'}'"
                " for the other count; drawn again (View.Geometry)"
            )
        if name == "cascades":
            return self._describe_cascades(vp.level)
        if name == "hiz":
            w, h = (max(1, b >> vp.level) for b in self.res.pyramid.base)
            was = self.clamped_from
            gone = "" if was is None else f" (level {was} is gone at this size)"
            return f"hiz level {vp.level} ({w}x{h}) of {vp.levels()}{gone}, shown like depth"
        return f"{name}: {BY_NAME[name].legend.format(far=vp.far)}"

    def _describe_cascades(self, level: int) -> str:
        """The cascades view's legend: its colours and splits, or the density ramp."""
        fit, s = self.res.cascade_fit, self.res.settings
        splits = "" if fit is None else "/".join(f"{d:.3g}" for d in fit.splits)
        snap = "texel-snapped" if s.shadow_snap else "NOT snapped (shadow-snap off)"
        if level == 1:
            lo, hi = TEXELS_LOG2
            return (
                f"cascades:texels: shadow-map texels per pixel (sqrt of the area ratio) of "
                f"each pixel's cascade, Turbo on log2 {2**lo:g}..{2**hi:g}, a tick per power "
                "of two; below 1 a texel spans several pixels (blocky), above 1 the map is "
                f"sampled sparsely (aliasing); grey: no cascade; {s.cascades} cascade(s), {snap}"
            )
        names = ", ".join(f"C{c} {CASCADE_COLOUR_NAMES[c]}" for c in range(s.cascades))
        return (
            f"cascades: the shadow cascade of each pixel, {names}; mixed in the blend bands "
            f"(the last {BLEND_BAND:.0%} of each); grey: no cascade (unshadowed); splits at "
            f"view depth {splits} (lambda {s.cascade_lambda:g}), {snap}; "
            "'view cascades:texels' for the texel density"
        )

    # -- per frame -------------------------------------------------------------------------
    def _update(self, frame_ctx) -> None:
        """Before recording: View in place of Post while a view is on; a knob changed since
        (e.g. ``shadows off``) turns a view it starves off, with one line; a resize that took
        the shown Hi-Z level away clamps it to the last level, with one line."""
        s = self.res.settings
        if self.current is not None:
            why = BY_NAME[self.current].requirement(s)
            if why is not None:
                log.warning("view %s off: %s", self.current, why)
                self.current = None
                self._hud_mode(False)
        if self.current == "culled" and self.res.cull_camera is None:
            log.warning("view culled off: culling is no longer frozen")
            self.current = None
            self._hud_mode(False)
        if self.current == "hiz":
            self._clamp_hiz()
        self._apply()
        if self.current == "culled":
            self._update_culled()
        if self.current == "cost":
            self._update_cost()

    def _apply(self) -> None:
        """Enable the passes the shown view draws with (and Post only without one): run on
        every switch, so a tool installed after this one (``--dump view.overdraw``) already
        finds the view's passes writing their targets, and every frame (knobs)."""
        cur = self.current
        on = cur is not None and not BY_NAME[cur].over
        self.view_pass.enabled = on
        self.geometry_pass.enabled = on and BY_NAME[cur].geometry is not None
        self.post.enabled = self.res.settings.post and not on
        self.culled_pass.enabled = cur == "culled"
        self.wire_args.enabled = self.wire_pass.enabled = cur == "wireframe"

    def _clamp_hiz(self) -> None:
        """The shown Hi-Z level is gone (the output shrank): show the last level and say so
        once (the level stays clamped when the output grows again)."""
        vp = self.view_pass
        n = vp.levels()
        if vp.level < n:
            return
        w, h = self.res.graph.size
        log.warning(
            "view hiz: level %d is gone at %dx%d (the pyramid has levels 0..%d): showing "
            "level %d",
            vp.level, w, h, n - 1, n - 1,
        )  # fmt: skip
        self.clamped_from, vp.level = vp.level, n - 1

    def _update_culled(self) -> None:
        """Ghost what the culler removed for the frozen camera, by its own classes (read
        back once per freeze, asynchronously: ``engine.culling.frozen``). Also run by the
        legend, so a new freeze never shows the last one's counts."""

        classes = self.res.frozen.classes if self.res.frozen is not None else None
        key = (self.res.cull_camera, classes)  # the objects, not ids: an id can be reused
        old = self._culled_key
        if old is not None and old[0] is key[0] and old[1] is key[1]:
            return
        self._culled_key = key
        if classes is None:  # waiting for the readback
            self.culled_pass.set_culled(np.zeros(0, np.int64), np.zeros(0, np.uint32))
            self.culled_ready = False
            return
        rows = np.flatnonzero(classes != VISIBLE)
        self.culled_pass.set_culled(rows, classes[rows])  # 0 frustum, 1 small, 2 occluded
        self.culled_ready = True

    def _update_cost(self) -> None:
        """The newest record's per-draw ns per fragment of Main.Early / Main.Late as the
        cost weights (uploaded when a new record came), and the ramp's range."""
        rec = self.ctx.telemetry.latest
        if rec is None or not rec.draw_passes() or rec.frame_index == self.cost_frame:
            return
        w = cost_weights(rec.draw_passes(), self.res.gs.batch_labels)
        if w is None:
            return
        self.cost_frame, self.cost_weights = rec.frame_index, w
        self.geometry_pass.set_weights(w)
        pos = w[w > 0]
        if pos.size:  # half the cheapest fragment .. 16 fragments of the dearest draw
            self.view_pass.cost_range = (float(pos.min()) / 2, float(pos.max()) * 16)

    def _hud_mode(self, on: bool) -> None:
        """Show the legend panel (HUD mode ``view``) while a view is on, if the HUD was off
        by default (an explicit ``--overlay off`` keeps it off: a clean capture of the view)."""
        hud = self.ctx.hud
        asked_off = self.ctx.option("overlay") == "off" and "overlay" in self.ctx.option(
            "options_given", ()
        )  # (the run sets "off" for no --overlay too: only the flag tells them apart)
        if hud is None or "view" not in hud.mode_panels or asked_off:
            return
        if on and hud.current_mode == "off":  # (not an --overlay MODE the HUD starts in)
            hud.set_mode("view", hint=False)
        elif not on and hud.current_mode == "view":
            hud.set_mode("off", hint=False)


def cost_weights(draws, labels: list[str]) -> np.ndarray | None:
    """``(4, batches)`` float32 GPU ns per fragment of each batch's draws from a record's
    ``PassDraws``: rows 0 and 1 the fragments of ``Main.Early`` and ``Main.Late`` that pass
    the depth test in draw order (the whole draw, or its depth prepass draw ``"depth
    <batch>"``), rows 2 and 3 the shading after that pass's prepass (depth ``equal``: one
    fragment a pixel); 0 where a draw has no reading or drew no fragment; None when
    neither pass has any reading."""
    out = np.zeros((4, len(labels)), np.float32)
    found = False
    for p in draws:
        if p.name not in ("Main.Early", "Main.Late"):
            continue
        row = 0 if p.name == "Main.Early" else 1
        prepass = any(d.label.startswith("depth ") for d in p.draws)
        for d in p.draws:
            if d.ns is None or not d.fragment:
                continue
            if prepass and d.label.startswith("depth ") and d.label[6:] in labels:
                r, label = row, d.label[6:]
            elif d.label in labels:
                r, label = (row + 2 if prepass else row), d.label
            else:
                continue
            out[r, labels.index(label)] = d.ns / d.fragment
            found = True
    return out if found else None
