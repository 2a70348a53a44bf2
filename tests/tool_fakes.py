"""Tool contexts built from parts, with no ``App``: what the tool tests install into."""

from __future__ import annotations

from argparse import Namespace

from engine.commands import Choice, CommandRegistry
from engine.loop import FrameLoop
from engine.telemetry import Telemetry
from engine.tool import ToolContext


def make_ctx(gpu=None, graph=None, *, telemetry=None, window=None, final_frame=None, **options):
    """A real ``ToolContext`` over ``graph`` (None: tools that need no GPU), a fresh
    ``Telemetry`` unless given, a real ``CommandRegistry`` drained between frames and
    ``options`` as the parsed command line."""
    telemetry = telemetry if telemetry is not None else Telemetry()
    commands = CommandRegistry()
    loop = None
    if gpu is not None and graph is not None:
        loop = FrameLoop(gpu, graph, telemetry=telemetry)
        loop.between_frames.append(commands.run_pending)
    return ToolContext(
        gpu,
        graph,
        telemetry,
        commands,
        loop,
        Namespace(**options),
        window=window,
        final_frame=final_frame,
    )


def register_overlay_stub(registry: CommandRegistry, calls: list | None = None) -> None:
    """An ``overlay MODE`` command with the HUD's real choices, for tests with no GPU (the
    portal's): it records the mode in ``calls``."""
    from engine.tools import modes

    def overlay(mode: str) -> str:
        if calls is not None:
            calls.append(mode)
        return f"overlay: {mode}"

    registry.register("overlay", overlay, args=[Choice(*modes(), "next")], help="HUD mode")


def install_hud(ctx, *, clock=None, tools=None):
    """The HUD service over the tools whose panels make its modes (``HUD_TOOLS``), installed
    into ``ctx`` as the App does; ``clock`` None: simulated time. Returns the HUD."""
    from engine.app import install_tools
    from engine.hud.service import Hud
    from engine.tools import HUD_TOOLS

    tools = HUD_TOOLS if tools is None else tools
    hud = Hud.for_tools(tools, mode=ctx.option("overlay"), hud_scale=ctx.option("hud_scale"),
                        clock=clock)  # fmt: skip
    return install_tools(ctx, tools, hud)
