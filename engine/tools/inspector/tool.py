"""The resource viewer: ``inspect NAME[@PASS] [mip N] [layer N] [channel r|g|b|a]
[range LO HI]`` in the console and the portal; its figures in the HUD (mode ``inspect``)
and in each ``FrameRecord.readbacks["inspect"]``.

The statistics (min, max, mean, NaN and Inf counts, a 64-bin histogram over the auto-fitted
min..max or the given range) are reduced on the GPU by ``engine.tools.inspector.passes`` and read
back through the ring, a few frames late, never stalling a frame. ``NAME@PASS`` inspects the
graph's snapshot of ``NAME`` right after ``PASS``. Nothing is created before the first
``inspect``; ``inspect off`` disables both passes.
"""

from __future__ import annotations

import logging
import math

from engine.commands import CommandError, Text
from engine.graph import split_ref
from engine.passes.resources import PYRAMID, SHADOW_MAP
from engine.tools.inspector.panel import InspectPanel
from engine.tools.inspector.passes import (
    CHANNELS,
    FLOAT_FORMATS,
    InspectPass,
    StatsReadback,
    TextureReduction,
    TextureStats,
    format_stats,
)

_TURNED_OFF = "a knob turned its pass off (e.g. shadows, occlusion, post, bloom, taa, exposure)"

log = logging.getLogger("lantern")


class InspectorTool:
    """Owns the ``inspect`` command and, once used, the ``Inspect`` passes.

    Attributes:
        selection: ``(ref, mip, layer, channel, range)`` inspected, or None.
        readback: the ``StatsReadback`` (None before the first ``inspect``); ``latest()``
            its newest ``TextureStats``.
    """

    name = "inspector"
    panels = (InspectPanel,)

    def __init__(self):
        self.selection: tuple | None = None
        self.readback: StatsReadback | None = None
        self._views: dict = {}

    def install(self, ctx) -> None:
        self.ctx, self.graph = ctx, ctx.graph
        words = [Text("WORD", optional=True) for _ in range(8)]
        ctx.commands.register(
            "inspect",
            self.command,
            args=[Text("NAME[@PASS]|off", optional=True), *words],
            help="texture statistics on the GPU: inspect NAME[@PASS] [mip N] [layer N] "
            "[channel r|g|b|a] [range LO HI]; off",
        )

    def close(self) -> None:
        self._views.clear()
        if getattr(self, "_undo", None) is not None:
            self._undo()
            self._undo = None

    def latest(self) -> TextureStats | None:
        return None if self.readback is None else self.readback.latest

    # -- the command -----------------------------------------------------------------------
    def command(self, name: str | None, *words: str | None) -> str:
        if name is None:
            return self.summary()
        if name == "off":
            self.select(None)
            return "inspect: off"
        rest = [w for w in words if w is not None]
        opts = _options(rest)
        return self.select(name, **opts)

    def select(self, ref: str | None, *, mip=0, layer=0, channel="r", value_range=None) -> str:
        """Inspect ``ref`` (a texture name, or ``NAME@PASS``) from the next frame on; None
        stops. Returns the output line.

        Raises:
            CommandError: an unknown name (the valid ones listed), a pass that does not
                write it, a mip / layer out of range, a format the reduction cannot read.
        """
        if ref is None:
            self.selection = None
            self._enable(False)
            return "inspect: off"
        base, after = split_ref(ref)
        names = self.graph.readable_textures()
        if base not in names:
            known = f"textures: {', '.join(names)}" if names else "this run's graph has none"
            raise CommandError(f"unknown texture {base!r}; {known}")
        writers = self.graph.writers(base, besides=getattr(self, "pass_", None))
        if not writers and base not in self.graph.imports:
            how = self.graph.how_to_write(base)
            why = _TURNED_OFF if how is None else f"it is written while {how}"
            raise CommandError(f"no pass writes {base!r} now: {why}")
        if after is not None:
            if after not in writers:
                raise CommandError(
                    f"pass {after!r} does not write {base!r} (passes that do: "
                    f"{', '.join(writers) or 'none'})"
                )
        tex = self.graph.texture(base)
        if tex.format not in FLOAT_FORMATS:
            raise CommandError(
                f"{base} is {tex.format}; the viewer reads {', '.join(FLOAT_FORMATS)}"
            )
        if not 0 <= mip < tex.mip_level_count:
            raise CommandError(
                f"mip {mip} out of range: {base} has mips 0..{tex.mip_level_count - 1}"
            )
        if not 0 <= layer < tex.size[2]:
            raise CommandError(
                f"layer {layer} out of range: {base} has layers 0..{tex.size[2] - 1}"
            )
        channels = "rgba"[: _channel_count(tex.format)]
        if channel not in channels:
            raise CommandError(f"channel {channel} out of range: {tex.format} has {channels}")
        self._ensure_passes()
        reads = (ref,) if after is not None or base not in (PYRAMID, SHADOW_MAP) else (base,)
        self.pass_.reads = reads
        self.graph.invalidate()  # a new snapshot may be needed
        self.selection = (ref, mip, layer, CHANNELS[channel], value_range)
        self._enable(True)
        w, h = max(1, tex.size[0] >> mip), max(1, tex.size[1] >> mip)
        rng = (
            "auto (min..max)" if value_range is None else f"{value_range[0]:g}..{value_range[1]:g}"
        )
        return (
            f"inspect: {ref} mip {mip} layer {layer} channel {channel} ({w}x{h} {tex.format}), "
            f"histogram {rng}; figures in a few frames ('inspect', HUD mode inspect)"
        )

    def summary(self) -> str:
        """The newest figures as one line (or what is missing)."""
        if self.selection is None:
            names = self.graph.readable_textures()
            if not names:
                return "inspect: nothing inspected; this run's graph has no textures to inspect"
            return f"inspect: nothing inspected; inspect NAME (textures: {', '.join(names)})"
        s = self.latest()
        if s is None:
            return f"inspect: {self.selection[0]}: no figures read back yet"
        stats = format_stats(s, ceiling=self.ceiling())
        return f"inspect: {self.selection[0]} frame {s.frame_index}: {stats}"

    def ceiling(self) -> float | None:
        """The inspected texture's ``TextureDesc.ceiling`` (values stop there: figures at it
        read ``>=``), or None."""
        if self.selection is None:
            return None
        desc = self.graph.texture_desc(split_ref(self.selection[0])[0])
        return None if desc is None else desc.ceiling

    # -- passes ----------------------------------------------------------------------------
    def _ensure_passes(self) -> None:
        if self.readback is not None:
            return
        d = self.ctx.gpu.device
        self.reduction = TextureReduction(d)
        self.pass_ = self.graph.add(InspectPass(self.reduction, self._source, ()))
        self.readback = self.graph.add(StatsReadback(self.reduction))
        self.graph.add_readback(self.readback)
        self._undo = self.ctx.on_update(self._update_probe)

    def _enable(self, on: bool) -> None:
        if self.readback is not None:
            self.pass_.enabled = self.readback.enabled = on

    def probe_at(self, x: float, y: float) -> None:
        """Read the texel of the inspected mip/layer under output pixel ``(x, y)`` (window
        pixels, top-left origin) with the next figures; off the output: no probe."""
        self._probe_px = (x, y)

    def _update_probe(self, frame_ctx) -> None:
        """Per frame: the cursor in a window (or ``probe_at``) -> the texel the reduction
        copies into its result (mip texels of the inspected texture)."""
        if self.selection is None or self.readback is None:
            return
        if self._starved():
            return
        win = self.ctx.window
        if win is not None:
            self._probe_px = win.cursor_pos()
        px = getattr(self, "_probe_px", None)
        ref, mip, _, _, _ = self.selection
        base, after = split_ref(ref)
        names = self.graph.texture_names()
        if after is not None and ref not in names:  # the snapshot is made with the frame
            self.reduction.probe = None
            return
        tex = self.graph.texture(ref) if after is not None else self.graph.texture(base)
        w, h = frame_ctx.size
        if px is None or not (0 <= px[0] < w and 0 <= px[1] < h):
            self.reduction.probe = None
            return
        tw, th = max(1, tex.size[0] >> mip), max(1, tex.size[1] >> mip)
        self.reduction.probe = (min(int(px[0] * tw / w), tw - 1), min(int(px[1] * th / h), th - 1))
        self.readback.channels = _channel_count(tex.format)

    def _starved(self) -> bool:
        """A knob changed since ``inspect`` (e.g. ``shadows off`` under ``inspect
        shadow.map``) and no enabled pass writes the inspected texture, or not the pass
        after which it is inspected: the viewer turns off with one line (the graph would
        refuse a read nobody writes)."""
        base, after = split_ref(self.selection[0])
        writers = self.graph.writers(base, besides=self.pass_)
        if (writers or base in self.graph.imports) and (after is None or after in writers):
            return False
        log.warning("inspect %s off: no pass writes it now (%s)", self.selection[0], _TURNED_OFF)
        self.select(None)
        return True

    def _source(self):
        ref, mip, layer, channel, value_range = self.selection
        base, after = split_ref(ref)
        tex = self.graph.texture(ref) if after is not None else self.graph.texture(base)
        key = (id(tex), mip, layer)
        view = self._views.get(key)
        if view is None or view[0] is not tex:
            self._views.clear()  # one selection at a time: keep no replaced texture alive
            v = tex.create_view(
                dimension="2d",
                base_mip_level=mip,
                mip_level_count=1,
                base_array_layer=layer,
                array_layer_count=1,
                aspect="depth-only" if tex.format.startswith("depth") else "all",
            )
            view = self._views[key] = (tex, v)
        size = (max(1, tex.size[0] >> mip), max(1, tex.size[1] >> mip))
        return view[1], size, channel, value_range


def _channel_count(fmt: str) -> int:
    return 4 if fmt.startswith("rgba") else 2 if fmt.startswith("rg") else 1


def _options(words: list[str]) -> dict:
    """``mip N``, ``layer N``, ``channel C``, ``range LO HI`` -> keyword arguments."""
    out: dict = {}
    i = 0
    while i < len(words):
        key = words[i]
        if key in ("mip", "layer") and i + 1 < len(words):
            try:
                out[key] = int(words[i + 1])
            except ValueError:
                raise CommandError(f"{key}: expected an integer, got {words[i + 1]!r}") from None
            i += 2
        elif key == "channel" and i + 1 < len(words):
            out["channel"] = words[i + 1]
            i += 2
        elif key == "range" and i + 1 < len(words) and words[i + 1] == "auto":
            out["value_range"] = None
            i += 2
        elif key == "range" and i + 2 < len(words):
            try:
                lo, hi = float(words[i + 1]), float(words[i + 2])
            except ValueError:
                raise CommandError(
                    f"range: expected two numbers, got {words[i + 1 : i + 3]}"
                ) from None
            if not (math.isfinite(lo) and math.isfinite(hi)):  # bins of infinite width
                raise CommandError(f"range: {lo:g} {hi:g}: give two finite numbers LO < HI")
            if not hi > lo:
                raise CommandError(f"range: {lo:g} {hi:g} is empty; give LO < HI")
            out["value_range"] = (lo, hi)
            i += 3
        else:
            raise CommandError(
                f"unexpected {key!r}; options: mip N, layer N, channel r|g|b|a, range LO HI|auto"
            )
    return out
