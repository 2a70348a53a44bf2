"""Pass descriptors built once and reused: the render graph's begin of every pass.

wgpu-py builds a pass's C descriptor from Python dicts on every ``begin_render_pass`` /
``begin_compute_pass`` call (about 40 us for a render pass with a colour and a depth
attachment on the H200 host, a fifth of recording the standard frame). A pass's attachments
change only on a resize, a history swap or a knob, so ``PassDescriptors`` keys the finished C
descriptor on what it holds (each view's identity, the load/store ops, the clear values, the
timestamp writes) and hands the same one to wgpu-native while the key repeats. Each entry
keeps its views alive, so an ``id`` in a key is never reused by another view meanwhile. A
window's output view is new every frame: a pass that draws or resolves into a frame's output
is cached only while the output stays the same view (an offscreen target), so no presented
swapchain view is kept.

On a miss the descriptor is built by wgpu-py's own helpers (its checks and errors apply);
an argument those helpers do not take, and any wgpu backend other than wgpu-native, goes to
the public call (wgpu-py's own error messages). Those
helpers are wgpu-py 0.32's internals (pyproject pins ``wgpu>=0.32,<0.33``); without any of
the names in ``_NEEDS`` it calls the public API too.
"""

from __future__ import annotations

import weakref

try:  # wgpu-py's wgpu-native backend: its struct helpers and its error-checked C calls
    from wgpu.backends.wgpu_native import _api as _native
except ImportError:  # pragma: no cover - a build of wgpu-py without wgpu-native
    _native = None

_NEEDS = ("ffi", "lib", "libf", "new_struct_p", "new_array", "to_c_string_view", "check_struct",
          "GPUCommandEncoder", "GPURenderPassEncoder", "GPUComputePassEncoder")  # fmt: skip
_ENCODER_NEEDS = ("_create_render_pass_color_attachment", "_create_render_pass_stencil_attachment")
_RENDER_KEYS = frozenset(
    ("color_attachments", "depth_stencil_attachment", "occlusion_query_set", "max_draw_count")
)  # begin_render_pass's arguments besides label and timestamp_writes (wgpu-py ignores the last)
_VIEWS = ("view", "resolve_target")
MAX_PER_PASS = 16  # entries kept per pass label; history parity x profiler query pools fit


def _attachment_key(a: dict) -> tuple:
    """What an attachment dict holds, hashable: views by identity, a clear colour as a tuple."""
    out = []
    for k, v in a.items():
        if k in _VIEWS:
            v = id(v)
        elif isinstance(v, dict):
            v = tuple(sorted(v.items()))
        elif isinstance(v, list) or hasattr(v, "__array__"):
            v = tuple(v)  # clear values as a list or an array
        out.append((k, v))
    return tuple(out)


def _timestamp_key(tw) -> tuple | None:
    """Every entry of a timestamp-writes dict (the query set by identity): a misspelt key
    is a new descriptor, which wgpu-py's check then refuses."""
    if tw is None:
        return None
    return tuple((k, id(v) if k == "query_set" else v) for k, v in tw.items())


class PassDescriptors:
    """Begin render and compute passes with cached C descriptors (one per graph).

    Raises what wgpu-py's ``begin_render_pass`` raises for a bad attachment dict (its own
    checks run when a descriptor is built).
    """

    def __init__(self) -> None:
        self._cache: dict[str, dict[tuple, tuple]] = {}
        self._last_output = None  # weakref to the previous frame's output view
        self._volatile = None  # this frame's output view when it is not last frame's
        self.native = (
            _native is not None
            and all(hasattr(_native, n) for n in _NEEDS)
            and all(hasattr(_native.GPUCommandEncoder, m) for m in _ENCODER_NEEDS)
        )

    def clear(self) -> None:
        """Drop every descriptor (and the views they keep alive)."""
        self._cache.clear()

    def begin_frame(self, output) -> None:
        """Note the frame's output view (``FrameContext.output``) before its passes begin."""
        last = self._last_output() if self._last_output is not None else None
        self._volatile = None if output is None or output is last else output
        try:
            self._last_output = None if output is None else weakref.ref(output)
        except TypeError:  # not weak-referenceable (a test's stand-in): never cached
            self._last_output = None

    def _entry(self, label: str, key, build):
        """The cached descriptor of ``key`` (built on a miss); ``key`` None: built, not kept."""
        if key is None:
            return build()
        per = self._cache.setdefault(label, {})
        try:
            entry = per.get(key)
        except TypeError:  # something unhashable in an attachment: not cached
            return build()
        if entry is None:
            if len(per) >= MAX_PER_PASS:
                per.clear()
            entry = per[key] = build()
        return entry

    def render(self, encoder, label: str, targets: dict, timestamp_writes=None):
        """``encoder.begin_render_pass(label=label, timestamp_writes=..., **targets)``."""
        if not self.native or not isinstance(encoder, _native.GPUCommandEncoder):
            return encoder.begin_render_pass(
                label=label, timestamp_writes=timestamp_writes, **targets
            )
        if not _RENDER_KEYS.issuperset(targets) or "color_attachments" not in targets:
            return encoder.begin_render_pass(  # wgpu-py's own error for what it refuses
                label=label, timestamp_writes=timestamp_writes, **targets
            )
        colors = targets["color_attachments"]
        if not isinstance(colors, (list, tuple)):  # an iterator: read it once
            colors = list(colors or ())
            targets = {**targets, "color_attachments": colors}
        new = self._volatile
        try:
            depth = targets.get("depth_stencil_attachment")
            key = (
                tuple(_attachment_key(a) for a in colors),
                None if depth is None else _attachment_key(depth),
                targets.get("occlusion_query_set") and id(targets["occlusion_query_set"]),
                _timestamp_key(timestamp_writes),
            )
            if new is not None and any(a.get(k) is new for a in colors for k in _VIEWS):
                key = None  # a window's output: built for this frame only
        except (TypeError, AttributeError, KeyError):  # not plain dicts: wgpu-py judges
            key = None

        def build():
            return _render_descriptor(encoder, label, targets, timestamp_writes)

        entry = self._entry(label, key, build)
        raw = _native.libf.wgpuCommandEncoderBeginRenderPass(encoder._internal, entry[0])
        return _native.GPURenderPassEncoder(label, raw, encoder._device)

    def compute(self, encoder, label: str, timestamp_writes=None):
        """``encoder.begin_compute_pass(label=label, timestamp_writes=...)``."""
        if not self.native or not isinstance(encoder, _native.GPUCommandEncoder):
            return encoder.begin_compute_pass(label=label, timestamp_writes=timestamp_writes)
        try:
            key = ("compute", _timestamp_key(timestamp_writes))
        except (TypeError, KeyError):  # not a plain dict: wgpu-py judges
            key = None
        entry = self._entry(label, key, lambda: _compute_descriptor(label, timestamp_writes))
        raw = _native.libf.wgpuCommandEncoderBeginComputePass(encoder._internal, entry[0])
        return _native.GPUComputePassEncoder(label, raw, encoder._device)


def _timestamp_struct(tw, kind: str):
    if tw is None:
        return _native.ffi.NULL
    _native.check_struct(kind + "PassTimestampWrites", tw)
    undefined = _native.lib.WGPU_QUERY_SET_INDEX_UNDEFINED
    return _native.new_struct_p(
        "WGPUPassTimestampWrites *",
        querySet=tw["query_set"]._internal,
        beginningOfPassWriteIndex=tw.get("beginning_of_pass_write_index", undefined),
        endOfPassWriteIndex=tw.get("end_of_pass_write_index", undefined),
    )


def _render_descriptor(encoder, label: str, targets: dict, tw) -> tuple:
    """(the C ``WGPURenderPassDescriptor *``, what it points at), as wgpu-py builds it."""
    colors = [encoder._create_render_pass_color_attachment(a)
              for a in targets["color_attachments"]]  # fmt: skip
    depth = targets.get("depth_stencil_attachment")
    c_depth = _native.ffi.NULL
    if depth is not None:
        _native.check_struct("RenderPassDepthStencilAttachment", depth)
        c_depth = encoder._create_render_pass_stencil_attachment(depth)
    query = targets.get("occlusion_query_set")
    struct = _native.new_struct_p(
        "WGPURenderPassDescriptor *",
        label=_native.to_c_string_view(label),
        colorAttachments=_native.new_array("WGPURenderPassColorAttachment[]", colors),
        colorAttachmentCount=len(colors),
        depthStencilAttachment=c_depth,
        timestampWrites=_timestamp_struct(tw, "Render"),
        occlusionQuerySet=_native.ffi.NULL if query is None else query._internal,
    )
    views = [a.get(k) for a in targets["color_attachments"] for k in _VIEWS]
    return struct, views, depth and depth["view"], query, tw


def _compute_descriptor(label: str, tw) -> tuple:
    struct = _native.new_struct_p(
        "WGPUComputePassDescriptor *",
        label=_native.to_c_string_view(label),
        timestampWrites=_timestamp_struct(tw, "Compute"),
    )
    return struct, tw
