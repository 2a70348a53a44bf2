"""The ``capture PATH`` command: write the next rendered frame to a PNG file."""

from __future__ import annotations

import logging
import os

import wgpu

from engine.commands import CommandError, Later, PngPath
from engine.safe_write import UnsafeWrite, png_target
from engine.surfaces import save_texture_png

log = logging.getLogger("lantern")


class CaptureTool:
    """Registers ``capture PATH``; the frame after the command is written (after its submit,
    from the output texture) and the outcome logged."""

    name = "capture"

    def __init__(self):
        self._path: str | None = None
        self._later: Later | None = None  # the command's pending outcome

    def install(self, ctx) -> None:
        self.device = ctx.gpu.device
        ctx.commands.register(
            "capture", self.request, args=[PngPath()], help="write the next frame as PNG"
        )
        ctx.frame_done.append(self._write)

    def close(self) -> None:
        if self._later is not None:
            self._later.finish(False, f"capture: {self._path} not written: the run ended")
        self._path = self._later = None

    def request(self, path: str) -> Later:
        """Write the next frame to ``path`` (PNG) once it is rendered; the returned ``Later``
        is finished with the outcome (the portal's reply waits for it). A link or a file
        that is not a PNG is refused now, in one line (``engine.safe_write``)."""
        try:
            target = png_target(path)
        except UnsafeWrite as e:
            raise CommandError(str(e)) from None
        where = "" if os.path.isabs(path) else f" (relative to {os.getcwd()})"
        later = Later(f"capture: the next frame goes to {target}{where}")
        if self._later is not None:
            self._later.finish(False, f"capture: {self._path} replaced by {target}")
        self._path, self._later = str(target), later
        return later

    def _write(self, texture) -> None:
        path, self._path = self._path, None
        later, self._later = self._later, None
        if path is None:
            return
        try:
            save_texture_png(self.device, texture, path)
            ok, text = True, f"capture: wrote {path} ({texture.size[0]}x{texture.size[1]})"
            log.info("%s", text)
        except (OSError, ValueError, wgpu.GPUError) as e:
            ok, text = False, f"capture: cannot write {path}: {getattr(e, 'strerror', None) or e}"
            log.error("%s", text)
        if later is not None:
            later.finish(ok, text)
