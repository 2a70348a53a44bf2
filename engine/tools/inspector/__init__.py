"""The inspector tool: ``inspect NAME`` reduces a texture on the GPU to its statistics, shown
in the HUD's ``inspect`` mode."""

from engine.tools.inspector.tool import InspectorTool  # noqa: F401
