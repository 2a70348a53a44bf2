"""The HUD's panels, in F1 order. A new panel is one module (a ``engine.overlay.panel.Panel``
subclass naming its ``modes``) and one line here; the HUD's modes, the ``overlay`` command's
choices and ``--overlay``'s choices all follow from this list."""

from __future__ import annotations

from engine.debug.cull_panel import CullPanel
from engine.debug.inspect_panel import InspectPanel
from engine.debug.logtail import LogHudPanel
from engine.debug.memory_panel import MemoryPanel
from engine.debug.perf import PerfPanel
from engine.debug.timeline import TimelinePanel
from engine.debug.view_panel import ViewPanel
from engine.inspect.live import FlamePanel

PANELS = (
    PerfPanel,
    CullPanel,
    TimelinePanel,
    LogHudPanel,
    FlamePanel,
    ViewPanel,
    InspectPanel,
    MemoryPanel,
)


def mode_names(panels=PANELS) -> tuple[str, ...]:
    """``off``, each panel's modes in registration order, then ``all`` (every panel with
    ``in_all``): the F1 cycle."""
    modes = ["off"]
    for p in panels:
        modes += [m for m in p.modes if m not in modes and m != "all"]
    return (*modes, "all")


def mode_panels(panels=PANELS) -> dict[str, tuple[str, ...]]:
    """Mode name -> the keys of the panels it shows, in registration order."""
    out = {m: tuple(p.key for p in panels if m in p.modes) for m in mode_names(panels)}
    out["all"] = tuple(p.key for p in panels if p.in_all or "all" in p.modes)
    return out
