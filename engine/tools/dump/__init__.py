"""The dump tool: ``--dump NAME[@PASS] PATH`` writes a graph texture or buffer after the last
frame."""

from engine.tools.dump.tool import DumpTool  # noqa: F401
