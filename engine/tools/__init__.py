"""Lantern's tools, one package each (the protocol: ``engine.tool``). ``DEFAULT_TOOLS`` is
what a sample run installs: a new tool is its package and one line here."""

from __future__ import annotations

from engine.hud.service import Hud
from engine.tool import ToolSpec
from engine.tools.capture import CaptureTool
from engine.tools.console import ConsoleTool
from engine.tools.cull import CullTool
from engine.tools.dump import DumpTool
from engine.tools.export import ExportTool
from engine.tools.flame import FlameTool
from engine.tools.inspector import InspectorTool
from engine.tools.lines import LinesTool
from engine.tools.log import LogTool
from engine.tools.memory import MemoryTool
from engine.tools.perf import PerfTool
from engine.tools.portal import PortalTool
from engine.tools.reload import ReloadTool
from engine.tools.renderdoc import RenderDocTool
from engine.tools.timeline import TimelineTool
from engine.tools.views import ViewTool

#: The tools a sample run installs, in order: their HUD panels' modes follow this order (F1),
#: and their passes come after the sample's, before the HUD's. A new tool is one line here.
DEFAULT_TOOLS: tuple[type, ...] = (
    PerfTool,  # --gpu-profile / --profile, ``profile``, ``stats``; the perf table
    CullTool,  # the cull counters panel
    TimelineTool,  # the GPU timeline panel
    LogTool,  # the log panel
    FlameTool,  # the live flame chart (a HUD underlay)
    ViewTool,  # debug views (``view``, F3, --view): its passes before the HUD's, under it
    InspectorTool,  # ``inspect NAME``: texture statistics reduced on the GPU
    MemoryTool,  # ``memory``: the texture table against --gpu-budget
    LinesTool,  # debug lines from any subsystem, over the picture, under the HUD
    ConsoleTool,  # the in-game console, drawn by the HUD
    CaptureTool,  # ``capture PATH``
    RenderDocTool,  # --renderdoc START[:COUNT], ``renderdoc [COUNT]``, F12: RenderDoc captures
    DumpTool,  # --dump NAME[@PASS] PATH, after the last frame
    ReloadTool,  # WGSL watched and rebuilt (F5, ``reload``); cost before/after; --baseline
    PortalTool,  # --portal
    ExportTool,  # --telemetry (its session line holds the facts the tools above set), --trace,
    # the shutdown timelines (closed first, so they print first)
)

#: The tools whose panels make the HUD's modes (a test's or a benchmark's HUD).
HUD_TOOLS = tuple(t for t in DEFAULT_TOOLS if ToolSpec.of(t).panels and t is not ConsoleTool)


def modes(tools=DEFAULT_TOOLS) -> tuple[str, ...]:
    """The HUD's modes in F1 order for ``tools`` (``--overlay``'s and ``overlay``'s choices)."""
    return Hud.for_tools(tools).modes
