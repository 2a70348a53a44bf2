"""GPU setup: the one place that chooses the adapter and creates the device.

Adapter choice, in order: ``--adapter SUBSTRING`` (case-insensitive match on the adapter
summary), then the ``WGPUPY_WGPU_ADAPTER_NAME`` environment variable, then wgpu's
high-performance default. ``WGPU_BACKEND_TYPE`` (``Vulkan``, ``OpenGL``, ...) restricts the
backend; wgpu-py reads it itself. Optional features are requested only where the adapter
has them. The instance flags (``INSTANCE_FLAGS``) switch on wgpu-native's automatic
timestamp normalisation, so that resolved timestamp queries are nanoseconds on every
adapter, and its ``Debug`` flag, so that graphics debuggers see Lantern's names.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field

import wgpu

log = logging.getLogger("lantern")

#: Features Lantern uses when the adapter offers them; none is required.
OPTIONAL_FEATURES = (
    "timestamp-query",
    "timestamp-query-inside-encoders",
    "indirect-first-instance",
    "bgra8unorm-storage",  # a bgra8unorm window surface the HUD's compute pass can write
)

#: More features ``--gpu-profile draws`` asks for where the adapter has them (timestamps
#: between draws, pipeline statistics per draw): see ``engine.profiling.draws``.
DRAW_PROFILE_FEATURES = ("timestamp-query-inside-passes", "pipeline-statistics-query")

#: wgpu-native instance flags of every run. ``AutomaticTimestampNormalization``: resolved
#: timestamps are nanoseconds. ``Debug``: pass labels, debug groups and object labels reach
#: the driver, so a graphics debugger (RenderDoc) shows Lantern's pass, draw and resource
#: names; its cost is below the noise of a frame's CPU time (``bench.py renderdoc``).
INSTANCE_FLAGS = ("Default", "AutomaticTimestampNormalization", "Debug")

_instance_configured = False
_flags: list[str] = list(INSTANCE_FLAGS)
_backends: list[str] = ["All"]  # wgpu-native InstanceBackend names


def set_instance_flags(*flags: str) -> None:
    """Replace this process's wgpu-native instance flags (names of ``InstanceFlag``, e.g.
    ``"Debug"``). Instance flags are per process and fixed by the first adapter request.

    Raises:
        KeyError: a name wgpu-native does not know.
        RuntimeError: the instance exists already (after the first ``create_gpu``) and the
            flags differ from its own.
    """
    from wgpu.backends.wgpu_native._mappings import native_flags

    for f in flags:
        if f"InstanceFlag.{f}" not in native_flags:
            raise KeyError(f"unknown wgpu instance flag {f!r}")
    if _instance_configured and sorted(flags) != sorted(_flags):
        raise RuntimeError(f"instance flags {list(flags)} come too late: the GPU instance exists")
    _flags[:] = list(dict.fromkeys(flags))


def add_instance_flags(*flags: str) -> None:
    """Add flags to ``instance_flags()`` (see ``set_instance_flags`` for the errors)."""
    set_instance_flags(*_flags, *(f for f in flags if f not in _flags))


def set_instance_backend(backend: str) -> None:
    """Create only ``backend``'s adapters in this process (one of ``BACKENDS``; default:
    every backend). A graphics debugger that hooks several APIs (RenderDoc under
    ``renderdoccmd`` hooks OpenGL ES too) then has one device to capture, not an OpenGL
    context wgpu made while listing adapters.

    Raises:
        KeyError: not one of ``BACKENDS``. RuntimeError: the instance exists already.
    """
    native = {"Vulkan": "Vulkan", "Metal": "Metal", "D3D12": "DX12", "OpenGL": "GL",
              "OpenGLES": "GL"}[backend]  # fmt: skip
    if _instance_configured and _backends != [native]:
        raise RuntimeError(f"backend {backend} comes too late: the GPU instance exists")
    _backends[:] = [native]


def instance_flags() -> tuple[str, ...]:
    """The instance flags of this process (set, or to be set by the first ``create_gpu``)."""
    return tuple(_flags)


class GpuError(RuntimeError):
    """No usable adapter or device; the message says what to do."""


def _configure_instance() -> None:
    """Set ``instance_flags()`` once, before the first adapter request."""
    global _instance_configured
    if _instance_configured:
        return
    # Mesa's EGL probe complains on every adapter enumeration without it (headless machines).
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="lantern-xdg-")
    from wgpu.backends.wgpu_native.extras import set_instance_extras

    set_instance_extras(backends=list(_backends), flags=list(instance_flags()))
    _instance_configured = True


@dataclass
class Gpu:
    """The adapter and device every part of Lantern shares.

    Attributes:
        adapter: the chosen ``wgpu.GPUAdapter``.
        device: the ``wgpu.GPUDevice`` created with ``features``.
        features: the optional features that were enabled (subset of ``OPTIONAL_FEATURES``).
    """

    adapter: wgpu.GPUAdapter
    device: wgpu.GPUDevice
    features: frozenset[str] = field(default_factory=frozenset)

    @property
    def queue(self) -> wgpu.GPUQueue:
        return self.device.queue

    @property
    def summary(self) -> str:
        """``"<device> (<type>) via <backend>"``, as wgpu reports it."""
        return self.adapter.summary

    @property
    def has_timestamps(self) -> bool:
        return "timestamp-query" in self.features

    @property
    def has_encoder_timestamps(self) -> bool:
        return "timestamp-query-inside-encoders" in self.features

    def describe(self) -> str:
        """The one start-up line: adapter, backend, and which optional features are on."""
        flags = " ".join(f"{f}={'on' if f in self.features else 'off'}" for f in OPTIONAL_FEATURES)
        extra = sorted(self.features - set(OPTIONAL_FEATURES))
        return f"GPU: {self.summary} | {flags}" + "".join(f" {f}=on" for f in extra)


BACKENDS = ("Vulkan", "Metal", "D3D12", "OpenGL", "OpenGLES")
NO_ADAPTER = (
    "no GPU adapter found: install a Vulkan driver "
    "(on a machine without a GPU: apt-get install mesa-vulkan-drivers libvulkan1)"
)


def check_backend_env() -> str | None:
    """``WGPU_BACKEND_TYPE`` as wgpu-py will read it; a one-line GpuError if it is unknown."""
    backend = os.environ.get("WGPU_BACKEND_TYPE", "").strip()
    if backend and backend not in BACKENDS:
        raise GpuError(
            f"WGPU_BACKEND_TYPE={backend!r} is not a backend; use one of {', '.join(BACKENDS)} "
            "or unset it"
        )
    return backend or None


def _pick_adapter(name: str | None) -> wgpu.GPUAdapter:
    backend = check_backend_env()
    wanted = name or os.environ.get("WGPUPY_WGPU_ADAPTER_NAME") or None
    adapters = wgpu.gpu.enumerate_adapters_sync()
    if backend:
        adapters = [a for a in adapters if a.summary.endswith(f"via {backend}")]
    if not adapters:
        if backend:
            raise GpuError(
                f"no adapter for WGPU_BACKEND_TYPE={backend}: unset it, or pick "
                "a backend this machine has a driver for"
            )
        raise GpuError(NO_ADAPTER)
    if wanted:
        matches = [a for a in adapters if wanted.lower() in a.summary.lower()]
        if not matches:
            names = "; ".join(a.summary for a in adapters)
            source = "--adapter" if name else "WGPUPY_WGPU_ADAPTER_NAME"
            raise GpuError(f"{source} {wanted!r} matches no adapter; available: {names}")
        return matches[0]
    try:
        return wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except RuntimeError as e:  # wgpu-native rejects the request: no usable adapter
        raise GpuError(f"{NO_ADAPTER} ({str(e).splitlines()[0]})") from None


def create_gpu(
    adapter_name: str | None = None,
    *,
    disable: tuple[str, ...] = (),
    extra_features: tuple[str, ...] = (),
) -> Gpu:
    """Choose an adapter and create the device.

    Args:
        adapter_name: case-insensitive substring of the adapter summary, or None.
        disable: optional features not to request even if present (tests use this to
            emulate an adapter without timestamp queries).
        extra_features: more optional features (e.g. ``"pipeline-statistics-query"``),
            requested only where the adapter has them; they appear in ``Gpu.features``.

    Raises:
        GpuError: no adapter, or none matching ``adapter_name``.
    """
    _configure_instance()
    adapter = _pick_adapter(adapter_name)
    wanted = (*OPTIONAL_FEATURES, *extra_features)
    features = frozenset(f for f in wanted if f in adapter.features and f not in disable)
    # Large scenes need big storage buffers, and many textures deep arrays: ask for what the
    # adapter allows (WebGPU's defaults: 256 layers, 8192 texels; the material arrays split
    # and downscale to whatever the device has).
    limits = {
        k: adapter.limits[k]
        for k in (
            "max-storage-buffer-binding-size",
            "max-buffer-size",
            "max-texture-array-layers",
            "max-texture-dimension-2d",
            # the lit pipelines' fifth group (the lights), the deferred path's G-buffer
            "max-bind-groups",
            "max-color-attachments",
            "max-color-attachment-bytes-per-sample",
        )
        if k in adapter.limits
    }
    try:
        device = adapter.request_device_sync(
            label="lantern", required_features=sorted(features), required_limits=limits
        )
    except Exception as e:  # the driver refused (seen: NVIDIA's OpenGL via wgpu)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise GpuError(
            f"cannot create a device on {adapter.summary} ({first}); pick another adapter "
            "(--adapter) or backend (WGPU_BACKEND_TYPE)"
        ) from None
    return Gpu(adapter=adapter, device=device, features=features)


def create_texture_with_view_formats(
    device: wgpu.GPUDevice,
    *,
    label: str,
    size: tuple[int, int],
    format: str,
    usage: int,
    view_formats: tuple[str, ...],
) -> wgpu.GPUTexture:
    """``device.create_texture`` of a 2D texture (1 mip, 1 sample) that may also be viewed as
    ``view_formats`` (e.g. ``rgba8unorm`` viewed as ``rgba8unorm-srgb``). wgpu-py 0.32 raises
    ``NotImplementedError`` for ``view_formats`` though wgpu-native takes them, so the
    descriptor is built with wgpu-py's own FFI helpers (the project pins wgpu < 0.33).

    Raises:
        NotImplementedError: this wgpu-py has no such helpers (the caller falls back).
        wgpu.GPUValidationError: what ``create_texture`` raises for a bad descriptor.
    """
    try:
        from wgpu.backends.wgpu_native import _api
    except ImportError as e:
        raise NotImplementedError(f"no wgpu-native backend: {e}") from e
    try:
        codes = [_api.enummap["TextureFormat." + f] for f in view_formats]
        c_formats = _api.new_array("WGPUTextureFormat[]", codes)
        c_size = _api.new_struct(
            "WGPUExtent3D", width=size[0], height=size[1], depthOrArrayLayers=1
        )
        struct = _api.new_struct_p(
            "WGPUTextureDescriptor *",
            label=_api.to_c_string_view(label),
            size=c_size,
            mipLevelCount=1,
            sampleCount=1,
            dimension="2d",
            format=format,
            usage=int(usage),
            viewFormatCount=len(codes),
            viewFormats=c_formats,
        )
        create, texture = _api.libf.wgpuDeviceCreateTexture, _api.GPUTexture
    except (AttributeError, KeyError) as e:
        raise NotImplementedError(f"wgpu-py's FFI helpers changed: {e}") from e
    info = {
        "size": (size[0], size[1], 1),
        "mip_level_count": 1,
        "sample_count": 1,
        "dimension": "2d",
        "format": format,
        "usage": int(usage),
        "texture_binding_view_dimension": None,
    }
    return texture(label, create(device._internal, struct), device, info)


def view_as(texture: wgpu.GPUTexture, fmt: str, usage: int = 0) -> wgpu.GPUTextureView:
    """A view of ``texture`` as ``fmt`` (one of its view formats) with ``usage`` (0: the
    texture's), whose format ``view_format`` can tell (wgpu-py's views do not keep it)."""
    view = texture.create_view(format=fmt, usage=usage)
    view._lantern_format = fmt
    return view


def view_format(view: wgpu.GPUTextureView) -> str:
    """The format ``view`` reads and writes as: the one given to ``view_as``, else its
    texture's (a pipeline drawing into it must be built for this one)."""
    return getattr(view, "_lantern_format", None) or view.texture.format
