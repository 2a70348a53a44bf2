"""The console tool: the in-game console (backtick), drawn by the HUD."""

from engine.tools.console.tool import Console, ConsolePanel, ConsoleTool  # noqa: F401
