"""The capture tool: ``capture PATH`` writes the next frame to a PNG file."""

from engine.tools.capture.tool import CaptureTool  # noqa: F401
