"""The HUD panel protocol: what a panel offers the layout and how the HUD drives it.

A panel is a class its tool declares (``panels = (MyPanel,)`` on the tool class). The HUD
builds it once every tool is installed, as ``cls(tool)``, and shows it in the modes it names
(``modes``; every panel is also in ``all`` unless it sets ``in_all = False``). ``Panel``
gives the defaults; a panel overrides what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.culling.counters import CullCounts
    from engine.hud.grid import DebugOverlay


@dataclass
class HudData:
    """What the panels draw from, gathered once per build from the telemetry.

    Attributes:
        names: the graph's enabled pass names, in execution order.
        cull: the newest cull counters, or None.
        cull_seen: whether the telemetry has ever carried cull counters.
        gpu_available: GPU timing is on and works on this adapter.
        gpu_seen: whether any record so far carried GPU scopes.
        now: the HUD clock, seconds. size: the output size, pixels.
        final: the last frame of a capture run: show the newest figures, whatever the
            refresh rate says.
        notes: per-pass notes by source (``Hud.set_notes``); notes_version changes with them.
        counters: the newest counts of every counter block (``engine.counters.Counts``).
        channels: the readback channels the graph's passes registered (``"cull"`` while a
            culler runs): what is on its way before its first counts arrive.
    """

    names: list[str]
    cull: CullCounts | None = None
    cull_seen: bool = False
    gpu_available: bool = False
    gpu_seen: bool = False
    now: float = 0.0
    size: tuple[int, int] = (0, 0)
    final: bool = False
    notes: dict = field(default_factory=dict)
    notes_version: int = 0
    counters: tuple = ()
    channels: frozenset = frozenset()


class Panel:
    """Base of the HUD's panels.

    Class attributes:
        key: the panel's name (layout, notices). modes: the HUD modes it is shown in, in F1
            order. in_all: also shown in mode ``all``. anchor: ``"top"`` (shelves under the
            mode tag) or ``"bottom"`` (stacked up from the bottom edge, see
            ``engine.hud.layout``). always: shown in every mode while it has content (the
            console). underlay: draws itself with its own passes under the HUD text and
            takes no grid room (the live flame chart).
    """

    key = "panel"
    modes: tuple[str, ...] = ()
    in_all = True
    anchor = "top"
    always = False
    underlay = False
    width = 0  # cells: set from the layout's placement before ``draw`` (a stretched panel)

    def activate(self, on: bool) -> None:
        """The mode changed and this panel is now shown (``on``) or hidden."""

    def tick(self, data: HudData) -> bool:
        """Per frame while shown: True when its figures changed and the HUD must redraw."""
        return False

    def update(self, ov: DebugOverlay, data: HudData) -> None:
        """Per frame while placed, when no redraw is due: cheap in-place changes (charts)."""

    def has_content(self, data: HudData) -> bool:
        """False: leave the panel out (nothing to show in this run)."""
        return True

    def empty_line(self, data: HudData) -> str:
        """The one line shown instead when this panel is the mode's only one and is empty."""
        return ""

    def sizes(self, data: HudData) -> tuple[tuple[int, int], ...]:
        """Its forms' sizes in cells ``(cols, rows)``, best first."""
        return ((0, 0),)

    def draw(self, ov: DebugOverlay, col: int, row: int, form: int, data: HudData) -> None:
        """Write the panel in ``form`` with its top-left cell at ``(col, row)``."""

    def close(self) -> None:
        """Release what the panel created (GPU objects, subscriptions)."""


def mode_names(panels) -> tuple[str, ...]:
    """``off``, each panel class's modes in order, then ``all`` (every panel with ``in_all``):
    the F1 cycle."""
    modes = ["off"]
    for p in panels:
        modes += [m for m in p.modes if m not in modes and m != "all"]
    return (*modes, "all")


def mode_panels(panels) -> dict[str, tuple[str, ...]]:
    """Mode name -> the keys of the panels it shows, in order."""
    out = {m: tuple(p.key for p in panels if m in p.modes) for m in mode_names(panels)}
    out["all"] = tuple(p.key for p in panels if p.in_all or "all" in p.modes)
    return out
