"""RenderDoc's in-application API through ctypes (``renderdoc_app.h``, API 1.6.0).

RenderDoc captures an application either when it launched it (``renderdoccmd capture``,
``qrenderdoc``: the library is in the process from the start) or when the application loads
the library itself before creating its graphics device. On Linux the library reaches
Vulkan as an implicit layer whose manifest (Debian: ``renderdoc_capture.json``) is enabled
by ``ENABLE_VULKAN_RENDERDOC_CAPTURE=1``, so that variable must be set before the Vulkan
instance exists, too.

    api = RenderDocApi.already_loaded() or RenderDocApi.load()   # RenderDocUnavailable
    api.start(); ...; api.end()                                  # one frame's GPU work
    api.captures()[-1]                                           # the .rdc it wrote

Reference: https://renderdoc.org/docs/in_application_api.html
"""

from __future__ import annotations

import ctypes
import os
import sys

#: The API version asked for (1.6.0: ``SetCaptureTitle``); newer libraries answer it too.
API_VERSION = 10600
#: The Vulkan layer's switch in Debian's manifest (and RenderDoc's own).
LAYER_ENV = "ENABLE_VULKAN_RENDERDOC_CAPTURE"
#: The library to load instead of the platform's (a test names one that does not exist).
LIB_ENV = "LANTERN_RENDERDOC_LIB"
INSTALL = (
    "RenderDoc is not installed (Debian/Ubuntu: apt install renderdoccmd librenderdoc "
    "python3-renderdoc; other systems: https://renderdoc.org)"
)

#: ``RENDERDOC_API_1_6_0``: function pointers in this order (renderdoc_app.h).
_FIELDS = (
    "GetAPIVersion", "SetCaptureOptionU32", "SetCaptureOptionF32", "GetCaptureOptionU32",
    "GetCaptureOptionF32", "SetFocusToggleKeys", "SetCaptureKeys", "GetOverlayBits",
    "MaskOverlayBits", "RemoveHooks", "UnloadCrashHandler", "SetCaptureFilePathTemplate",
    "GetCaptureFilePathTemplate", "GetNumCaptures", "GetCapture", "TriggerCapture",
    "IsTargetControlConnected", "LaunchReplayUI", "SetActiveWindow", "StartFrameCapture",
    "IsFrameCapturing", "EndFrameCapture", "TriggerMultiFrameCapture",
    "SetCaptureFileComments", "DiscardFrameCapture", "ShowReplayUI", "SetCaptureTitle",
)  # fmt: skip
_u32, _p, _s = ctypes.c_uint32, ctypes.c_void_p, ctypes.c_char_p
_TYPES = {
    "GetAPIVersion": (None, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                      ctypes.POINTER(ctypes.c_int)),
    "SetCaptureFilePathTemplate": (None, _s),
    "GetNumCaptures": (_u32,),
    "GetCapture": (_u32, _u32, _s, ctypes.POINTER(_u32), ctypes.POINTER(ctypes.c_uint64)),
    "StartFrameCapture": (None, _p, _p),
    "IsFrameCapturing": (_u32,),
    "EndFrameCapture": (_u32, _p, _p),
    "DiscardFrameCapture": (_u32, _p, _p),
    "SetCaptureFileComments": (None, _s, _s),
    "SetCaptureTitle": (None, _s),
}  # fmt: skip


class RenderDocUnavailable(RuntimeError):
    """RenderDoc cannot be used in this process; the message is one line saying why and
    what to install or do."""


def library_name() -> str:
    """The RenderDoc library to look for: ``$LANTERN_RENDERDOC_LIB``, else the platform's.

    Raises:
        RenderDocUnavailable: on macOS (RenderDoc has no macOS build; wgpu uses Metal there).
    """
    override = os.environ.get(LIB_ENV)
    if override:
        return override
    if sys.platform == "darwin":
        raise RenderDocUnavailable(
            "RenderDoc cannot capture Metal (macOS): use Xcode's GPU frame capture instead"
        )
    return "renderdoc.dll" if sys.platform == "win32" else "librenderdoc.so"


class RenderDocApi:
    """The in-application API of the RenderDoc library in this process.

    Attributes:
        version: ``(major, minor, patch)`` of the API the library serves.
        launched: True when RenderDoc was in the process before Lantern looked (launched
            by ``renderdoccmd`` or ``qrenderdoc``), False when Lantern loaded it.
    """

    def __init__(self, lib, *, launched: bool):
        get_api = lib.RENDERDOC_GetAPI
        get_api.restype = ctypes.c_int
        get_api.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
        table = ctypes.c_void_p()
        if get_api(API_VERSION, ctypes.byref(table)) != 1 or not table.value:
            raise RenderDocUnavailable(
                "this RenderDoc is older than API 1.6 (RenderDoc 1.14); install a newer one"
            )
        pointers = ctypes.cast(table, ctypes.POINTER(ctypes.c_void_p * len(_FIELDS))).contents
        self._fn = {
            name: ctypes.CFUNCTYPE(*_TYPES[name])(pointers[_FIELDS.index(name)]) for name in _TYPES
        }
        self._lib, self.launched = lib, launched  # the handle keeps the library loaded
        v = [ctypes.c_int() for _ in range(3)]
        self._fn["GetAPIVersion"](*(ctypes.byref(x) for x in v))
        self.version = tuple(x.value for x in v)

    @classmethod
    def already_loaded(cls) -> RenderDocApi | None:
        """The API when the library is in the process already (RenderDoc launched it),
        else None. Loads nothing: on Linux a ``dlopen`` with ``RTLD_NOLOAD``."""
        try:
            name = library_name()
        except RenderDocUnavailable:
            return None
        if sys.platform == "win32":
            handle = ctypes.windll.kernel32.GetModuleHandleW(name)  # type: ignore[attr-defined]
            return cls(ctypes.WinDLL(name), launched=True) if handle else None  # type: ignore[attr-defined]
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        except OSError:
            return None
        return cls(lib, launched=True)

    @classmethod
    def load(cls) -> RenderDocApi:
        """Load the library (call before the graphics device exists, with ``LAYER_ENV``
        set for Vulkan) and return its API.

        Raises:
            RenderDocUnavailable: not installed (or not loadable), or too old.
        """
        name = library_name()
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOW | getattr(os, "RTLD_GLOBAL", 0))
        except OSError as e:
            why = str(e).split(":")[-1].strip() or "cannot be loaded"
            raise RenderDocUnavailable(f"{INSTALL}: {name}: {why}") from None
        return cls(lib, launched=False)

    # -- capturing --------------------------------------------------------------------------
    def set_path_template(self, template: str) -> None:
        """Captures from now on are written to ``template`` plus a suffix RenderDoc chooses
        (``captures`` gives the exact paths)."""
        self._fn["SetCaptureFilePathTemplate"](os.fsencode(template))

    def start(self) -> None:
        """Start capturing every API call of any device and window (``NULL, NULL``)."""
        self._fn["StartFrameCapture"](None, None)

    def capturing(self) -> bool:
        """Whether a capture is running (False after ``start`` when RenderDoc hooks no
        device of this process: a backend it does not capture)."""
        return bool(self._fn["IsFrameCapturing"]())

    def end(self) -> bool:
        """End the capture and write it; True when RenderDoc reports success."""
        return bool(self._fn["EndFrameCapture"](None, None))

    def discard(self) -> bool:
        """End the capture without writing anything."""
        return bool(self._fn["DiscardFrameCapture"](None, None))

    def set_title(self, title: str) -> None:
        """The title of the capture being made (shown by qrenderdoc)."""
        self._fn["SetCaptureTitle"](title.encode("utf-8"))

    def set_comments(self, path: str, comments: str) -> None:
        """Store ``comments`` in the capture file ``path`` (qrenderdoc's Capture Comments)."""
        self._fn["SetCaptureFileComments"](os.fsencode(path), comments.encode("utf-8"))

    def captures(self) -> list[str]:
        """The paths of every capture this process made, oldest first."""
        out = []
        for i in range(self._fn["GetNumCaptures"]()):
            n = _u32(0)
            self._fn["GetCapture"](i, None, ctypes.byref(n), None)
            buf = ctypes.create_string_buffer(n.value + 1)
            self._fn["GetCapture"](i, buf, ctypes.byref(n), None)
            out.append(os.fsdecode(buf.value))
        return out
