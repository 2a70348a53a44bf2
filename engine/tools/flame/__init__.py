"""The flame tool: the HUD's live flame chart of the last seconds."""

from engine.tools.flame.tool import FlamePanel, FlameTool, LiveFlame  # noqa: F401
