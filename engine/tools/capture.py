"""The ``capture PATH`` command: write the next rendered frame to a PNG file."""

from __future__ import annotations

import logging

import wgpu

from ..commands import PngPath
from ..surfaces import save_texture_png

log = logging.getLogger("lantern")


class CaptureTool:
    """Registers ``capture PATH``; the frame after the command is written (after its submit,
    from the output texture) and the outcome logged."""

    name = "capture"

    def __init__(self):
        self._path: str | None = None

    def install(self, ctx) -> None:
        self.device = ctx.gpu.device
        ctx.commands.register(
            "capture", self.request, args=[PngPath()], help="write the next frame as PNG"
        )
        ctx.frame_done.append(self._write)

    def close(self) -> None:
        self._path = None

    def request(self, path: str) -> str:
        """Write the next frame to ``path`` (PNG) once it is rendered."""
        self._path = path
        return f"capture: the next frame goes to {path}"

    def _write(self, texture) -> None:
        path, self._path = self._path, None
        if path is None:
            return
        try:
            save_texture_png(self.device, texture, path)
            log.info("capture: wrote %s", path)
        except (OSError, ValueError, wgpu.GPUError) as e:
            log.error("capture: cannot write %s: %s", path, e)
