"""Where frames go: a glfw window with a wgpu surface, or an offscreen capture texture.

``OffscreenTarget`` never imports glfw, so ``--capture`` works with no display.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import sys
from dataclasses import dataclass, field

import numpy as np
import wgpu

from engine.gpu import create_texture_with_view_formats, view_as
from engine.safe_write import save_png

log = logging.getLogger("lantern")

CAPTURE_FORMAT = "rgba8unorm-srgb"


class SurfaceError(RuntimeError):
    """The window cannot be opened; the message says what to do instead."""


STORAGE_TWINS = {"rgba8unorm-srgb": "rgba8unorm", "bgra8unorm-srgb": "bgra8unorm"}
#: Usage that lets compute passes write the output (``RenderGraph.output_storage_format``):
#: a storage view to write, a sampled one to read what is there.
OUTPUT_COMPUTE_USAGE = wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
#: The usage of the ``-srgb`` view passes render into (an sRGB view cannot be a storage one).
SRGB_VIEW_USAGE = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.TEXTURE_BINDING


class OffscreenTarget:
    """An ``rgba8unorm-srgb`` render target whose last frame can be read back as a PNG.

    The texture itself is ``rgba8unorm`` (``storage_format``) viewed as ``rgba8unorm-srgb``
    (``view``, what passes render into): sRGB formats cannot be storage textures, and the
    HUD's compute pass writes the output through a storage view. The bytes are the same."""

    format = CAPTURE_FORMAT
    storage_format = STORAGE_TWINS[CAPTURE_FORMAT]

    def __init__(self, device: wgpu.GPUDevice, size: tuple[int, int]):
        self.device = device
        self.size = size
        usage = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC
        try:
            self.texture = create_texture_with_view_formats(
                device,
                label="capture",
                size=size,
                format=self.storage_format,
                usage=usage | OUTPUT_COMPUTE_USAGE,
                view_formats=(self.format,),
            )
        except (NotImplementedError, wgpu.GPUValidationError) as e:  # a wgpu-py we cannot
            # pass view formats to, or a device without them (OpenGL): the raster HUD then
            log.debug("capture target without a storage view: %s", str(e).splitlines()[0])
            self.storage_format = None
            self.texture = device.create_texture(
                label="capture",
                size=(size[0], size[1], 1),
                format=self.format,
                usage=usage | wgpu.TextureUsage.TEXTURE_BINDING,
            )
        self.view = view_as(self.texture, self.format, SRGB_VIEW_USAGE)

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
        engine.safe_write.UnsafeWrite: ``path`` is a link, or a file that is not a PNG.
    """
    from PIL import Image

    save_png(path, Image.fromarray(read_rgba(device, texture)[:, :, :3], "RGB"))


class _XErrorEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong),
        ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte),
        ("minor_code", ctypes.c_ubyte),
    ]


_X_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_XErrorEvent))
_X_IO_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_X_IO_EXIT_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
BAD_WINDOW, BAD_DRAWABLE = 3, 9  # X protocol error codes


class X11ErrorTrap:
    """An Xlib error handler that notes errors about ``window`` instead of exiting.

    Xlib's default handler prints the error and exits the process; glfw installs its own only
    around a few calls. So when another client destroys our window (``xdotool windowclose``,
    ``XDestroyWindow``) the next glfw call that touches it (``XGetWindowAttributes``) killed
    the sample before its reports. With this handler ``lost`` becomes True on ``BadWindow`` or
    ``BadDrawable`` for ``window``; other errors are logged once per kind and ignored.

    Args:
        window: the X window id (``glfw.get_x11_window``).
    """

    def __init__(self, window: int, display: int | None = None):
        self.window, self.lost, self.disconnected = window, False, False
        self._seen: set[tuple[int, int]] = set()
        self._notes: list[tuple[int, str]] = []
        lib = self._lib = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        for name in ("XSetErrorHandler", "XSetIOErrorHandler"):
            getattr(lib, name).restype = ctypes.c_void_p
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        self._handler = _X_ERROR_HANDLER(self._on_error)  # kept alive as long as installed
        self._previous = lib.XSetErrorHandler(ctypes.cast(self._handler, ctypes.c_void_p))
        self._previous_io = None
        # The connection itself killed (xkill, XKillClient): Xlib calls the I/O error handler,
        # then the display's exit handler (libX11 >= 1.7; default exit(1)). Returning from it
        # leaves the display marked broken and later calls fail quietly.
        if display and hasattr(lib, "XSetIOErrorExitHandler"):
            self._io_handler = _X_IO_ERROR_HANDLER(self._on_io_error)
            self._io_exit = _X_IO_EXIT_HANDLER(self._on_io_exit)
            self._previous_io = lib.XSetIOErrorHandler(
                ctypes.cast(self._io_handler, ctypes.c_void_p)
            )
            lib.XSetIOErrorExitHandler.argtypes = [ctypes.c_void_p] * 3
            lib.XSetIOErrorExitHandler(display, ctypes.cast(self._io_exit, ctypes.c_void_p), None)

    def _on_io_error(self, display) -> int:
        if not self.lost:
            self._note(logging.INFO, "the connection to the X server was lost: shutting down")
        self.lost = self.disconnected = True
        return 0

    def _on_io_exit(self, display, data) -> None:
        self.lost = self.disconnected = True  # return instead of exit(1)

    def _on_error(self, display, event) -> int:
        e = event.contents
        if e.resourceid == self.window and e.error_code in (BAD_WINDOW, BAD_DRAWABLE):
            if not self.lost:
                msg = "the window was destroyed by another X client: shutting down"
                self._note(logging.INFO, msg)
            self.lost = True
        elif (e.error_code, e.request_code) not in self._seen:
            self._seen.add((e.error_code, e.request_code))
            self._note(
                logging.WARNING,
                f"X error {e.error_code} (request {e.request_code}) on resource "
                f"0x{e.resourceid:x} ignored",
            )
        return 0

    def _note(self, level: int, message: str) -> None:
        # logged by flush(), outside the handler: it may run while fd 2 is silenced
        self._notes.append((level, message))

    def flush(self) -> None:
        """Log what the handlers noted since the last call."""
        notes, self._notes = self._notes, []
        for level, message in notes:
            log.log(level, message)

    def restore(self) -> None:
        """Put the previous handler back (after glfw has closed its display)."""
        self._lib.XSetErrorHandler(self._previous)
        if self._previous_io is not None:
            self._lib.XSetIOErrorHandler(self._previous_io)


@contextlib.contextmanager
def _fd2_silenced():
    """Send file descriptor 2 (C libraries' stderr) to /dev/null for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


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
        self.storage_format = self._storage_format(gpu)
        self.size = (0, 0)
        self.keys: list[int] = []
        # Text entry (the in-game console): ``on_key(key) -> consumed`` and ``on_char(ch)``,
        # called in event order during ``poll``; a consumed key never reaches ``keys``.
        self.text_input = None
        self.input = PointerInput()  # mouse, wheel and characters not consumed by text entry
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_mouse_button_callback(self.window, self._on_mouse_button)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        glfw.set_char_callback(self.window, self._on_char)
        self._x11 = None
        if glfw.get_platform() == glfw.PLATFORM_X11:
            self._x11 = X11ErrorTrap(glfw.get_x11_window(self.window), glfw.get_x11_display())
            self._guard_reconfigure()

    def _guard_reconfigure(self) -> None:
        """wgpu-py reconfigures the surface by itself when ``get_current_texture`` finds it
        lost or outdated, and wgpu-native aborts the process when that surface's window is
        gone ("Surface does not support the adapter's queue family"): that happened when
        another X client destroyed the window between our last check and the acquire. So
        the reconfigure first asks the X server whether the window still exists (a glfw
        query: ``BadWindow`` sets ``lost``) and skips the frame if not."""
        real = getattr(self.context, "_configure_screen_real", None)
        if real is None:  # another wgpu-py: nothing to guard
            return

        def guarded(*args, **kwargs):
            if not self.lost:  # a round trip: errors arrive now; on a connection that
                with _fd2_silenced():  # was just killed Xlib prints a line per request
                    self._glfw.get_framebuffer_size(self.window)
            if self.lost:
                raise wgpu.DrawCancelled("the window was destroyed")
            return real(*args, **kwargs)

        self.context._configure_screen_real = guarded

    @property
    def lost(self) -> bool:
        """True once another client destroyed the window: treat it as closed."""
        if self._x11 is None:
            return False
        self._x11.flush()  # the X handlers' lines, logged here (never inside a handler)
        return self._x11.lost

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
        ch = chr(codepoint)
        if self.text_input is None or not self.text_input.on_char(ch):
            self.input.chars.append(ch)

    def _on_mouse_button(self, window, button, action, mods):
        x, y = self.cursor_pos()
        self.input.buttons.append((button, action == self._glfw.PRESS, mods, x, y))

    def _on_scroll(self, window, dx, dy):
        self.input.scroll += dy

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

    @property
    def disconnected(self) -> bool:
        """The X connection itself is gone (xkill): no glfw call may touch it again (each
        request would print an Xlib line)."""
        return self._x11 is not None and self._x11.disconnected

    def poll(self) -> list[int]:
        """Process window events; return the keys pressed since the last poll."""
        if not self.disconnected:
            self._glfw.poll_events()
        keys, self.keys = self.keys, []
        return keys

    def wait(self, seconds: float) -> None:
        """Sleep until a window event arrives (input, resize, ``wake``) or ``seconds``
        pass; the events are processed (callbacks fire) before it returns."""
        if not self.disconnected:
            self._glfw.wait_events_timeout(seconds)

    def wake(self) -> None:
        """End a ``wait`` now; callable from any thread (glfw's empty event)."""
        self._glfw.post_empty_event()

    def key_down(self, key: int) -> bool:
        """Whether the glfw ``key`` is held down now."""
        return self._glfw.get_key(self.window, key) == self._glfw.PRESS

    def should_close(self) -> bool:
        return self.lost or bool(self._glfw.window_should_close(self.window))

    def _storage_format(self, gpu) -> str | None:
        """The surface format as a storage view (``RenderGraph.output_storage_format``) where
        the surface allows ``OUTPUT_COMPUTE_USAGE`` and the device can store that format
        (``bgra8unorm`` needs ``bgra8unorm-storage``), else None."""
        twin = STORAGE_TWINS.get(self.format)
        if twin != self._native:  # the surface's own format must be the non-sRGB one
            return None
        if twin == "bgra8unorm" and "bgra8unorm-storage" not in gpu.features:
            return None
        try:
            usages = self.context._get_capabilities(gpu.adapter)["usages"]
        except Exception:  # noqa: BLE001 (a private API: without it, no compute writes)
            return None
        return twin if usages & OUTPUT_COMPUTE_USAGE == OUTPUT_COMPUTE_USAGE else None

    def request_close(self) -> None:
        self._glfw.set_window_should_close(self.window, True)

    def framebuffer_size(self) -> tuple[int, int]:
        if self.lost:  # gone: no query (on a killed connection Xlib prints per request)
            return 0, 0
        w, h = self._glfw.get_framebuffer_size(self.window)
        if self.lost:  # the query failed: its numbers are garbage
            return 0, 0
        return int(w), int(h)

    def configure(self, size: tuple[int, int]) -> None:
        """(Re)configure the surface for a framebuffer of ``size`` pixels (both > 0)."""
        self.context.set_physical_size(*size)
        try:
            self.context.configure(
                device=self.device,
                format=self._native,
                view_formats=[self.format] if self.format != self._native else [],
                # COPY_SRC: the console's ``capture PATH`` reads the presented frame back;
                # storage and sampling: the HUD's compute pass (``storage_format``).
                usage=wgpu.TextureUsage.RENDER_ATTACHMENT
                | wgpu.TextureUsage.COPY_SRC
                | (OUTPUT_COMPUTE_USAGE if self.storage_format else 0),
            )
        except wgpu.DrawCancelled:  # the window is gone (see _guard_reconfigure): closing
            return
        self.size = size

    def acquire(self):
        """``(view, texture)`` to render into this frame. Raises ``wgpu.DrawCancelled`` to
        skip it."""
        texture = self.context.get_current_texture()
        usage = SRGB_VIEW_USAGE if self.storage_format else 0  # 0: the texture's own
        return view_as(texture, self.format, usage), texture

    def present(self) -> None:
        self.context.present()

    def close(self) -> None:
        """Release the surface before glfw terminates (the other order crashes natively)."""
        if self.context is not None:
            self.context.unconfigure()
            self.context = None
        disconnected = self._x11 is not None and self._x11.disconnected
        # Without a connection Xlib prints a line per request it cannot send; terminate glfw
        # anyway, or rendercanvas does it at interpreter exit and those lines appear then.
        with _fd2_silenced() if disconnected else contextlib.nullcontext():
            self._glfw.destroy_window(self.window)
            self._glfw.terminate()
        if self._x11 is not None:
            self._x11.restore()
            self._x11 = None
