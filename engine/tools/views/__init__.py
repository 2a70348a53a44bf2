"""The views tool: debug views of the standard frame in place of its picture (``view``, F3,
``--view``), with their legend in the HUD."""

from engine.tools.views.tool import ViewTool  # noqa: F401
