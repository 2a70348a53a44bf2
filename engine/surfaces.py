"""Where frames go: a glfw window with a wgpu surface, or an offscreen capture texture.

``OffscreenTarget`` never imports glfw, so ``--capture`` works with no display.
"""

from __future__ import annotations

import os

import numpy as np
import wgpu

CAPTURE_FORMAT = "rgba8unorm-srgb"


class SurfaceError(RuntimeError):
    """The window cannot be opened; the message says what to do instead."""


class OffscreenTarget:
    """An ``rgba8unorm-srgb`` render target whose last frame can be read back as a PNG."""

    format = CAPTURE_FORMAT

    def __init__(self, device: wgpu.GPUDevice, size: tuple[int, int]):
        self.device = device
        self.size = size
        self.texture = device.create_texture(
            label="capture",
            size=(size[0], size[1], 1),
            format=self.format,
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT
            | wgpu.TextureUsage.COPY_SRC
            | wgpu.TextureUsage.TEXTURE_BINDING,
        )
        self.view = self.texture.create_view()

    def read_rgba(self) -> np.ndarray:
        """Wait for the GPU and return the target as ``uint8`` array of shape ``(H, W, 4)``.

        The bytes are sRGB-encoded, as a PNG stores them. Blocks: use at shutdown only.
        """
        return read_rgba(self.device, self.texture)

    def save_png(self, path: str) -> None:
        save_texture_png(self.device, self.texture, path)


def read_rgba(device: wgpu.GPUDevice, texture: wgpu.GPUTexture) -> np.ndarray:
    """``uint8 (H, W, 4)`` RGBA of an 8-bit colour ``texture`` (``bgra*`` swizzled to RGBA).
    Waits for the GPU: for captures and commands, never the per-frame path."""
    w, h = texture.size[0], texture.size[1]
    bpr = (w * 4 + 255) // 256 * 256
    data = device.queue.read_texture(
        {"texture": texture}, {"bytes_per_row": bpr, "rows_per_image": h}, (w, h, 1)
    )
    rgba = np.frombuffer(data, np.uint8).reshape(h, bpr // 4, 4)[:, :w].copy()
    if texture.format.startswith("bgra"):
        rgba = rgba[:, :, [2, 1, 0, 3]]
    return rgba


def save_texture_png(device: wgpu.GPUDevice, texture: wgpu.GPUTexture, path: str) -> None:
    """Write ``texture`` (8-bit colour, needs ``COPY_SRC``) to ``path`` as an RGB PNG.

    Raises:
        OSError: the file cannot be written.
    """
    from PIL import Image

    Image.fromarray(read_rgba(device, texture)[:, :, :3], "RGB").save(path)


def _srgb_variant(fmt: str) -> str:
    return fmt if fmt.endswith("-srgb") else fmt + "-srgb"


class WindowSurface:
    """A glfw window presenting through a wgpu canvas context.

    The output format is always an ``-srgb`` view so shaders write linear colour on both
    window and capture targets. Raises ``SurfaceError`` when no display is available.
    """

    def __init__(self, gpu, size: tuple[int, int], title: str, *, vsync: bool = True):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise SurfaceError(
                "no display (DISPLAY is not set): use --capture PATH to render "
                "headless, or run under a display (e.g. xvfb-run)"
            )
        import glfw  # only windows need glfw

        self._glfw = glfw
        if not glfw.init():
            raise SurfaceError(
                "glfw could not open the display: use --capture PATH to render "
                "headless, or set DISPLAY to a running X server"
            )
        glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
        glfw.window_hint(glfw.RESIZABLE, True)
        self.window = glfw.create_window(size[0], size[1], title, None, None)
        if not self.window:
            glfw.terminate()
            raise SurfaceError("glfw could not create a window: use --capture PATH instead")
        from rendercanvas.glfw import get_glfw_present_info

        info = get_glfw_present_info(self.window)
        info["vsync"] = vsync
        self.context = wgpu.gpu.get_canvas_context(info)
        self.device = gpu.device
        native = self.context.get_preferred_format(gpu.adapter)
        self.format = _srgb_variant(native)
        self._native = native
        self.size = (0, 0)
        self.keys: list[int] = []
        # Text entry (the in-game console): ``on_key(key) -> consumed`` and ``on_char(ch)``,
        # called in event order during ``poll``; a consumed key never reaches ``keys``.
        self.text_input = None
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_char_callback(self.window, self._on_char)

    def _on_key(self, window, key, scancode, action, mods):
        if action == self._glfw.RELEASE:
            return
        sink = self.text_input
        if sink is not None and sink.on_key(key, repeat=action == self._glfw.REPEAT):
            return
        if action == self._glfw.PRESS:
            self.keys.append(key)

    def _on_char(self, window, codepoint):
        # the character as typed on the user's layout (glfw's char callback), not the key
        if self.text_input is not None:
            self.text_input.on_char(chr(codepoint))

    def poll(self) -> list[int]:
        """Process window events; return the keys pressed since the last poll."""
        self._glfw.poll_events()
        keys, self.keys = self.keys, []
        return keys

    def wait(self, seconds: float) -> None:
        self._glfw.wait_events_timeout(seconds)

    def key_down(self, key: int) -> bool:
        """Whether the glfw ``key`` is held down now."""
        return self._glfw.get_key(self.window, key) == self._glfw.PRESS

    def should_close(self) -> bool:
        return bool(self._glfw.window_should_close(self.window))

    def request_close(self) -> None:
        self._glfw.set_window_should_close(self.window, True)

    def framebuffer_size(self) -> tuple[int, int]:
        w, h = self._glfw.get_framebuffer_size(self.window)
        return int(w), int(h)

    def configure(self, size: tuple[int, int]) -> None:
        """(Re)configure the surface for a framebuffer of ``size`` pixels (both > 0)."""
        self.context.set_physical_size(*size)
        self.context.configure(
            device=self.device,
            format=self._native,
            view_formats=[self.format] if self.format != self._native else [],
            # COPY_SRC: the console's ``capture PATH`` reads the presented frame back.
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
        )
        self.size = size

    def acquire(self):
        """``(view, texture)`` to render into this frame. Raises ``wgpu.DrawCancelled`` to
        skip it."""
        texture = self.context.get_current_texture()
        return texture.create_view(format=self.format), texture

    def present(self) -> None:
        self.context.present()

    def close(self) -> None:
        """Release the surface before glfw terminates (the other order crashes natively)."""
        if self.context is not None:
            self.context.unconfigure()
            self.context = None
        self._glfw.destroy_window(self.window)
        self._glfw.terminate()
