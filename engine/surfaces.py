"""Where frames go: a glfw window with a wgpu surface, or an offscreen capture texture.

``OffscreenTarget`` never imports glfw, so ``--capture`` works with no display.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

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
        w, h = self.size
        data = self.device.queue.read_texture(
            {"texture": self.texture}, {"bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1)
        )
        return np.frombuffer(data, np.uint8).reshape(h, w, 4).copy()

    def save_png(self, path: str) -> None:
        from PIL import Image

        rgba = self.read_rgba()
        Image.fromarray(rgba[:, :, :3], "RGB").save(path)


@dataclass
class PointerInput:
    """Window input gathered between two ``take_input`` calls.

    Attributes:
        buttons: ``(button, pressed, mods, x, y)`` per mouse button event, in order; glfw
            button (0 left, 1 right, 2 middle) and modifier bits (1 shift, 2 control); ``x``,
            ``y`` in framebuffer pixels.
        scroll: wheel steps (positive: away from the user).
        chars: typed characters (glfw char callback: text, not keys).
    """

    buttons: list[tuple[int, bool, int, float, float]] = field(default_factory=list)
    scroll: float = 0.0
    chars: list[str] = field(default_factory=list)


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
        self.input = PointerInput()
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_mouse_button_callback(self.window, self._on_mouse_button)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        glfw.set_char_callback(self.window, self._on_char)

    def _on_key(self, window, key, scancode, action, mods):
        if action == self._glfw.PRESS:
            self.keys.append(key)

    def _on_mouse_button(self, window, button, action, mods):
        x, y = self.cursor_pos()
        self.input.buttons.append((button, action == self._glfw.PRESS, mods, x, y))

    def _on_scroll(self, window, dx, dy):
        self.input.scroll += dy

    def _on_char(self, window, codepoint):
        self.input.chars.append(chr(codepoint))

    def cursor_pos(self) -> tuple[float, float]:
        """Cursor position in framebuffer pixels (top-left origin), also outside the window."""
        x, y = self._glfw.get_cursor_pos(self.window)
        w, h = self._glfw.get_window_size(self.window)
        fw, fh = self.framebuffer_size()
        return x * fw / max(w, 1), y * fh / max(h, 1)

    def take_input(self) -> PointerInput:
        """Mouse buttons, wheel and typed characters since the last call (then cleared)."""
        got, self.input = self.input, PointerInput()
        return got

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
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT,
        )
        self.size = size

    def acquire(self):
        """The view to render into this frame. Raises ``wgpu.DrawCancelled`` to skip it."""
        return self.context.get_current_texture().create_view(format=self.format)

    def present(self) -> None:
        self.context.present()

    def close(self) -> None:
        """Release the surface before glfw terminates (the other order crashes natively)."""
        if self.context is not None:
            self.context.unconfigure()
            self.context = None
        self._glfw.destroy_window(self.window)
        self._glfw.terminate()
