"""The log tool: the HUD's ``log`` mode."""

from engine.tools.log.tool import LogHudPanel, LogPanel, LogTool  # noqa: F401
