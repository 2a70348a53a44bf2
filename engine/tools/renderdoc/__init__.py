"""RenderDoc captures of Lantern frames (issue 27): the in-application API loaded with ctypes
(``api``), the tool with its flags, command and key (``tool``), and the summary of a capture
through RenderDoc's own replay API (``replay``, run by the Python that has Debian's
``python3-renderdoc``; ``rdc``: the ``lantern rdc`` command)."""

from engine.tools.renderdoc.tool import RenderDocTool

__all__ = ["RenderDocTool"]
