"""Screen-space passes a technique is built from, bound for you: a fullscreen fragment shader
(``ScreenPass``) or a compute shader over a texture (``ScreenCompute``), reading the frame's
named resources (``engine.passes.resources``: ``frame.depth``, ``frame.normals``, ...) and
writing one target. Insert them into the standard frame with ``StandardFrame.insert``.

Bindings of group 0, in this order (declare them so in your WGSL)::

    @binding(0)        var<uniform> view: View;          // frame_common.wgsl
    @binding(1)        var<uniform> params: YourParams;  // ``params()`` bytes (16 if none)
    @binding(2 + i)    inputs[i]: a texture (by its format: texture_depth_2d, texture_2d<f32>
                       or texture_2d<u32>) or a buffer (var<storage, read>), by graph name;
                       ``NAME@prev`` is last frame's (a history resource)
    next, for each     ``storage`` graph buffer, in order: var<storage, read_write> (counters
                       a pass adds to, lists it updates: the pass reads and writes them)
    next               ScreenCompute only: the target, texture_storage_2d<FORMAT, write>
    next               a linear clamp-to-edge sampler, when ``sampler=True``

``ScreenPass`` draws ``vs_fullscreen`` (yours to write, or include ``screen_common.wgsl``)
and your fragment entry into its target; ``ScreenCompute`` dispatches one invocation per
target texel in workgroups of 8x8 (or the ``workgroup`` you give it). Both declare what
they read and write, so the graph checks and orders them, and every tool times, lists,
dumps and hot-reloads them like any pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import wgpu

from engine.graph import OUTPUT, ComputePass, GraphError, RenderPass, split_ref
from engine.shader_registry import shader_pipeline

WORKGROUP = 8  # ScreenCompute: @workgroup_size(8, 8)
#: ``ScreenPass(blend=...)`` states: the target multiplied by the shader's output (modulate
#: ``frame.ambient`` with an AO term, darken with a vignette), or the output added to it.
MULTIPLY = {
    "color": {"src_factor": "dst", "dst_factor": "zero", "operation": "add"},
    "alpha": {"src_factor": "zero", "dst_factor": "one", "operation": "add"},
}
ADD = {
    "color": {"src_factor": "one", "dst_factor": "one", "operation": "add"},
    "alpha": {"src_factor": "zero", "dst_factor": "one", "operation": "add"},
}
_VIS = wgpu.ShaderStage.FRAGMENT | wgpu.ShaderStage.COMPUTE


def fullscreen_pipeline(device, module, entry: str, fmt: str, *, label: str, layout="auto",
                        blend: dict | None = None,
                        vertex: str = "vs_fullscreen") -> wgpu.GPURenderPipeline:  # fmt: skip
    """A fullscreen triangle's pipeline (``vertex`` draws it: 3 vertices, no buffers) into
    one colour target of ``fmt``, optionally blended (``ADD``, ``MULTIPLY``); ``layout``:
    ``"auto"`` or a pipeline layout."""
    state = {"format": fmt, **({"blend": blend} if blend else {})}
    return device.create_render_pipeline(
        label=label, layout=layout,
        vertex={"module": module, "entry_point": vertex},
        primitive={"topology": "triangle-list"},
        fragment={"module": module, "entry_point": entry, "targets": [state]},
    )  # fmt: skip


def _sample_type(fmt: str) -> str:
    if fmt.startswith("depth"):
        return "depth"
    if fmt.endswith(("uint",)):
        return "uint"
    if fmt.endswith("sint"):
        return "sint"
    return "unfilterable-float"


class _Bound:
    """What both kinds share: the layout from the inputs' kinds, the params uniform, the
    bind group rebuilt when a named resource may be another object (resize, history)."""

    def _setup(self, res, inputs: Sequence[str], params, sampler: bool, extra=(),
               storage: Sequence[str] = ()) -> None:  # fmt: skip
        self.res, self.inputs, self.params = res, tuple(inputs), params
        self.storage = tuple(storage)
        d, g = res.device, res.graph
        entries = [
            {"binding": 0, "visibility": _VIS, "buffer": {"type": "uniform"}},
            {"binding": 1, "visibility": _VIS, "buffer": {"type": "uniform"}},
        ]
        for i, ref in enumerate(self.inputs):
            base = split_ref(ref)[0]
            if base in g.buffer_names() or ref in g.buffer_names():
                kind = {"buffer": {"type": "read-only-storage"}}
            else:
                kind = {"texture": {"sample_type": _sample_type(g.texture_format(ref))}}
            entries.append({"binding": 2 + i, "visibility": _VIS, **kind})
        for name in self.storage:
            if name not in g.buffer_names():
                raise GraphError(f"pass {self.name!r}: storage {name!r} is not a graph buffer "
                                 "(graph.create_buffer)")  # fmt: skip
            entries.append({"binding": len(entries), "visibility": _VIS,
                            "buffer": {"type": "storage"}})  # fmt: skip
        entries += [{"binding": len(entries), "visibility": _VIS, **e} for e in extra]
        if sampler:
            entries.append({"binding": len(entries), "visibility": _VIS,
                            "sampler": {"type": "filtering"}})  # fmt: skip
        self.layout = d.create_bind_group_layout(label=self.name, entries=entries)
        self.sampler = (
            d.create_sampler(mag_filter="linear", min_filter="linear") if sampler else None
        )
        size = max(16, len(params()) if params is not None else 16)
        self.uniform = d.create_buffer(
            label=f"{self.name} params", size=-(-size // 16) * 16,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
        )  # fmt: skip
        self._written: bytes | None = None
        self._group = None

    def _resources(self, extra=()) -> list:
        g = self.res.graph
        out = [{"buffer": self.res.view_uniform}, {"buffer": self.uniform}]
        for ref in self.inputs:
            out.append({"buffer": g.buffer(ref)} if ref in g.buffer_names() else g.view(ref))
        out += [{"buffer": g.buffer(name)} for name in self.storage]
        out += list(extra)
        if self.sampler is not None:
            out.append(self.sampler)
        return out

    def _bind(self, extra=()):
        g = self.res.graph
        key = (g.resource_key(), self.shader.version)
        if self._group is None or self._group[0] != key:
            res = self._resources(extra)
            entries = [{"binding": i, "resource": r} for i, r in enumerate(res)]
            group = self.res.device.create_bind_group(layout=self.layout, entries=entries)
            self._group = (key, group)
        if self.params is not None:
            data = self.params()
            if data != self._written:  # written when a knob changed it
                self.res.device.queue.write_buffer(self.uniform, 0, data)
                self._written = data
        return self._group[1]


class ScreenPass(RenderPass, _Bound):
    """A fullscreen triangle with your fragment shader into one target.

    Args:
        name: the pass name every table shows.
        res: the frame's ``FrameResources`` (``StandardFrame.res``).
        shader: your WGSL file (a path: beside your sample).
        inputs: graph resource names bound from binding 2 on (see the module docstring).
        target: a graph texture name, or ``OUTPUT`` (the picture).
        entry: the fragment entry point; ``vertex``: the vertex entry point.
        params: returns the ``params`` uniform's bytes each frame (written when changed).
        blend: a ``wgpu`` blend state for the target (None: replace).
        load: keep what the target holds (True) or clear it first.
        sampler: bind a linear clamp sampler last.
        storage: graph buffers bound ``read_write`` after the inputs (the pass reads and
            writes them: counters it adds to).
        defines: shader defines (``engine.shader_registry.expand``: ``// #if NAME``
            blocks, integer constants), one WGSL file for several passes.

    Raises:
        wgpu.GPUValidationError: the shader does not compile or fit the bindings.
        GraphError: a ``storage`` name that is not a graph buffer.
    """

    def __init__(self, name: str, res, shader: str | Path, *, inputs: Sequence[str] = (),
                 target: str = OUTPUT, entry: str = "fs_main", vertex: str = "vs_fullscreen",
                 params: Callable[[], bytes] | None = None, blend: dict | None = None,
                 load: bool = True, sampler: bool = False, storage: Sequence[str] = (),
                 defines: dict | None = None):  # fmt: skip
        RenderPass.__init__(self, name, reads=(*inputs, *storage), writes=(target, *storage))
        self.target = target
        self._setup(res, inputs, params, sampler, storage=storage)
        fmt = res.graph.texture_format(target)
        self.load = load

        def make(m):
            layout = res.device.create_pipeline_layout(bind_group_layouts=[self.layout])
            return fullscreen_pipeline(res.device, m, entry, fmt, label=name, layout=layout,
                                       blend=blend, vertex=vertex)  # fmt: skip

        self.shader = shader_pipeline(res.device, Path(shader), make, label=name, defines=defines)

    def targets(self, ctx) -> dict:
        view = ctx.output if self.target == OUTPUT else self.res.graph.view(self.target)
        color = {"view": view, "store_op": "store", "load_op": "load" if self.load else "clear"}
        if not self.load:
            color["clear_value"] = (0, 0, 0, 0)
        return {"color_attachments": [color]}

    def record(self, ctx, rpass) -> None:
        rpass.set_pipeline(self.shader.get())
        rpass.set_bind_group(0, self._bind())
        rpass.draw(3)


class ScreenCompute(ComputePass, _Bound):
    """A compute shader over a target texture: one invocation per texel of ``target`` (8x8
    workgroups unless ``workgroup`` says otherwise), writing it as a storage texture.

    Args:
        name, res, shader, inputs, params, sampler, storage, defines: as ``ScreenPass``
            (the target's binding follows the storage buffers).
        target: a graph texture with ``STORAGE_BINDING`` usage (its format must be a
            storage format: ``r32float``, ``rgba16float``, ``rgba8unorm``, ...).
        entry: the compute entry point (``@workgroup_size(8, 8)``).
        workgroup: ``(x, y)``, the entry's ``@workgroup_size(x, y)``: the dispatch is
            ``ceil(width / x)`` by ``ceil(height / y)`` workgroups (a row tile: ``(128, 1)``).
    """

    def __init__(self, name: str, res, shader: str | Path, *, target: str,
                 inputs: Sequence[str] = (), entry: str = "cs_main",
                 params: Callable[[], bytes] | None = None, sampler: bool = False,
                 workgroup: tuple[int, int] = (WORKGROUP, WORKGROUP),
                 storage: Sequence[str] = (), defines: dict | None = None):  # fmt: skip
        ComputePass.__init__(self, name, reads=(*inputs, *storage), writes=(target, *storage))
        self.target, self.workgroup = target, tuple(workgroup)
        fmt = res.graph.texture_format(target)
        image = {"storage_texture": {"access": "write-only", "format": fmt}}
        self._setup(res, inputs, params, sampler, extra=(image,), storage=storage)

        def make(m):
            layout = res.device.create_pipeline_layout(bind_group_layouts=[self.layout])
            return res.device.create_compute_pipeline(
                label=name, layout=layout, compute={"module": m, "entry_point": entry}
            )

        self.shader = shader_pipeline(res.device, Path(shader), make, label=name, defines=defines)

    def record(self, ctx, cpass) -> None:
        tex = self.res.graph.texture(self.target)
        cpass.set_pipeline(self.shader.get())
        cpass.set_bind_group(0, self._bind(extra=(self.res.graph.view(self.target),)))
        (w, h), (gx, gy) = tex.size[:2], self.workgroup
        cpass.dispatch_workgroups(math.ceil(w / gx), math.ceil(h / gy))
