"""The passes that draw a ``DebugOverlay`` over the frame: ``DebugOverlayCompute`` writes the
occupied cells from a compute shader, where the output can be written by one (a storage view
of its non-sRGB twin format: the capture target, and windows whose surface allows it), and
``DebugOverlayPass`` draws them with instanced quads over the occupied cell rectangles, in
three draws by what their pixels need, everywhere else. Both make the same pixels (opaque
cells to the byte, blended ones within 1), from the same buffers (``_OverlayResources``) and
the same WGSL (``debug_overlay.wgsl``).

Why compute: the raster pass costs fragment shading of every covered pixel, dear on a GPU
with little raster throughput. On an NVIDIA H200 at 1920x1080 the ``all`` HUD drawn as quads
cost 0.171 ms, and one constant colour over its pixels 0.048 ms: the raster floor is the
goal. The compute pass has no such floor: 0.0095 ms (``tools/bench.py hud``).

The raster pass. Why not one fullscreen triangle (the first design): its cost scales with the
framebuffer, not with the HUD. On an NVIDIA H200 at 1920x1080 a bare fullscreen alpha-blended
triangle costs 0.264 ms and a bare clear 0.147 ms, while the HUD covers about 30% of the screen
in its fullest mode. So the pass draws quads: one per rectangle of ``DebugOverlay.draw_rects``
(recomputed only when the uploaded cells change); an empty grid draws nothing.

Why three draws: the panels are opaque, so what the HUD must rasterise is already the
minimum (``bench.py hud`` prints the fragment count); what is left is the cost of each
fragment. Most are panel text: an opaque background and a glyph, no primitive. Those cells
(``DRAW_CLASSES`` ``text``) use ``fs_text``, the main shader without its primitive loop and
discard, and a pipeline without blending (an opaque colour written, not read-modify-written);
opaque cells with primitives use ``fs_main`` without blending; only cells that let the frame
show through are blended. The arithmetic per pixel is the same in all three, so the picture
is identical pixel for pixel (the HUD reference images hold it).

GPU resources: the 128x64 font atlas (``r8unorm``), a cell storage buffer sized for the largest
grid (280x90 cells x 16 bytes = 403 200 bytes, allocated once), a primitive storage buffer and a
chart-data storage buffer (both grow by doubling), a rectangle vertex buffer (16 bytes per
instance, grows by doubling), a 1 KiB sRGB-to-linear table and a 32-byte uniform block.
``upload()`` writes only what changed since the last upload: the rows of cells that differ from
the last uploaded copy (contiguous row ranges) plus the rectangles, and the primitive / chart
bytes when they differ. The compute pass adds a cell list (4 bytes per occupied cell, written
when the rectangles change) and a scratch buffer for blended pixels (4 bytes each).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import wgpu

from engine.graph import OUTPUT, ComputePass, RenderPass
from engine.hud.grid import CELL_PX, DRAW_CLASSES, MAX_COLS, MAX_ROWS, DebugOverlay, font_atlas
from engine.shader_registry import compute_pipelines, shader_pipeline

HERE = Path(__file__).parent  # this package's WGSL

log = logging.getLogger("lantern")

PASS_NAME = "DebugOverlay"
REFERENCE_HEIGHT = 540  # auto HUD scale: one step per 540 framebuffer rows (1080p -> 2)


def auto_hud_scale(size: tuple[int, int]) -> int:
    """Integer HUD scale for a framebuffer ``(width, height)`` in pixels: ``max(1, h // 540)``
    (720p -> 1, 1080p -> 2, 2160p -> 4)."""
    return max(1, int(size[1]) // REFERENCE_HEIGHT)


def grid_for(size: tuple[int, int], scale: int) -> tuple[int, int]:
    """Cells ``(cols, rows)`` that cover a framebuffer of ``size`` pixels at ``scale``, capped
    at 280x90 (at least 1x1)."""
    px = CELL_PX * scale
    return (
        max(1, min(MAX_COLS, int(size[0]) // px)),
        max(1, min(MAX_ROWS, int(size[1]) // px)),
    )


class _OverlayResources:
    """The GPU side of a ``DebugOverlay`` shared by the raster and the compute pass: the font
    atlas, the cell / primitive / chart-data / rectangle buffers, the uniform block, and the
    uploads of what changed (``upload``, ``write_rects``)."""

    def _setup(
        self, device: wgpu.GPUDevice, overlay: DebugOverlay, output_format: str, scale: int
    ) -> None:
        self.device = device
        self.overlay = overlay
        self.output_format = output_format
        self.scale = 1
        self.set_scale(scale)
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        self.uniform = device.create_buffer(
            label="hud params", size=32, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self.cell_buffer = device.create_buffer(
            label="hud cells", size=MAX_COLS * MAX_ROWS * 16, usage=usage
        )
        self.prim_buffer = device.create_buffer(label="hud prims", size=48 * 64, usage=usage)
        self.data_buffer = device.create_buffer(label="hud chart data", size=4 * 4096, usage=usage)
        self.rect_buffer = device.create_buffer(
            label="hud rects",
            size=16 * 64,
            usage=wgpu.BufferUsage.VERTEX | wgpu.BufferUsage.COPY_DST,
        )
        self.rect_count = 0
        self.draw_counts: tuple[int, ...] = (0,) * len(DRAW_CLASSES)
        self._rects = b""
        self.target_size: tuple[int, int] | None = None
        self.srgb_lut = device.create_buffer_with_data(
            label="hud srgb lut", data=srgb_decode_table().tobytes(), usage=usage
        )
        self.atlas = self._make_atlas()
        self.layout = self._make_layout()
        self._bind()
        self._shadow = np.zeros((0, 0, 4), np.uint32)
        self._prims = self._data = self._params = None
        self._version = -1

    # -- setup ----------------------------------------------------------------------------
    def set_scale(self, scale: int) -> None:
        if not isinstance(scale, int | np.integer) or scale < 1:
            raise ValueError(f"HUD scale must be an integer >= 1, got {scale!r}")
        self.scale = int(scale)

    def _make_atlas(self) -> wgpu.GPUTexture:
        bits = font_atlas() * np.uint8(255)
        h, w = bits.shape
        tex = self.device.create_texture(
            label="hud font atlas",
            size=(w, h, 1),
            format="r8unorm",
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
        )
        self.device.queue.write_texture(
            {"texture": tex}, bits.tobytes(), {"bytes_per_row": w, "rows_per_image": h}, (w, h, 1)
        )
        return tex

    def _make_layout(self) -> wgpu.GPUBindGroupLayout:
        """Group 0 of every pipeline, render and compute (an ``auto`` layout is its pipeline's
        own)."""
        v = wgpu.ShaderStage.VERTEX
        f = wgpu.ShaderStage.FRAGMENT | wgpu.ShaderStage.COMPUTE
        ro = {"type": "read-only-storage"}
        return self.device.create_bind_group_layout(
            label="hud",
            entries=[
                {"binding": 0, "visibility": f | v, "buffer": {"type": "uniform"}},
                {"binding": 1, "visibility": f, "buffer": ro},
                {"binding": 2, "visibility": f, "buffer": ro},
                {"binding": 3, "visibility": f, "buffer": ro},
                {"binding": 4, "visibility": f, "texture": {"sample_type": "float"}},
                {"binding": 5, "visibility": f, "buffer": ro},
            ],
        )

    def _bind(self) -> None:
        self.bind_group = self.device.create_bind_group(
            label="hud",
            layout=self.layout,
            entries=[
                {"binding": 0, "resource": {"buffer": self.uniform}},
                {"binding": 1, "resource": {"buffer": self.cell_buffer}},
                {"binding": 2, "resource": {"buffer": self.prim_buffer}},
                {"binding": 3, "resource": {"buffer": self.data_buffer}},
                {"binding": 4, "resource": self.atlas.create_view()},
                {"binding": 5, "resource": {"buffer": self.srgb_lut}},
            ],
        )

    def _ensure(self, name: str, nbytes: int) -> None:
        """Grow buffer ``name`` of group 0 to hold ``nbytes`` (and rebind the group)."""
        if (new := _grown(self.device, getattr(self, name), nbytes)) is not None:
            setattr(self, name, new)
            self._bind()

    # -- per frame ------------------------------------------------------------------------
    def upload(self, size: tuple[int, int] | None = None) -> int:
        """Write what changed since the last upload to the GPU; return the bytes written.

        ``size``: framebuffer ``(width, height)`` in pixels (default ``target_size``, else the
        grid's size in pixels)."""
        ov = self.overlay
        w, h = (
            size
            or self.target_size
            or (ov.cols * CELL_PX * self.scale, ov.rows * CELL_PX * self.scale)
        )
        srgb = self.output_format.endswith("-srgb")
        params = np.array(
            [ov.cols, ov.rows, self.scale, srgb, ov.prim_count, w, h, 0], np.uint32
        ).tobytes()
        written = 0
        if params != self._params:
            self.device.queue.write_buffer(self.uniform, 0, params)
            self._params = params
            written += len(params)
        if ov.version == self._version:
            return written
        written += self._upload_cells()
        prims = ov.prim_bytes()
        if prims != self._prims:
            self._ensure("prim_buffer", len(prims))
            if prims:
                self.device.queue.write_buffer(self.prim_buffer, 0, prims)
            self._prims = prims
            written += len(prims)
        data = ov.data_bytes()
        if data != self._data:
            self._ensure("data_buffer", len(data))
            if data:
                self.device.queue.write_buffer(self.data_buffer, 0, data)
            self._data = data
            written += len(data)
        self._version = ov.version
        return written

    def _upload_cells(self) -> int:
        ov = self.overlay
        cells = ov.cells
        r0, r1 = ov.dirty_rows
        ov.dirty_rows = (0, 0)
        if self._shadow.shape != cells.shape:  # first upload (or a new grid): every row
            self._shadow = np.full_like(cells, 0xFFFFFFFF)
            r0, r1 = 0, ov.rows
        if r0 >= r1:
            return 0
        changed = (cells[r0:r1] != self._shadow[r0:r1]).any(axis=(1, 2))
        rows = np.flatnonzero(changed) + r0
        if len(rows) == 0:
            return 0
        # contiguous runs of changed rows -> one write each
        breaks = np.flatnonzero(np.diff(rows) > 1)
        starts = np.concatenate([[rows[0]], rows[breaks + 1]])
        ends = np.concatenate([rows[breaks], [rows[-1]]]) + 1
        row_bytes = ov.cols * 16
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            self.device.queue.write_buffer(self.cell_buffer, a * row_bytes, cells[a:b].tobytes())
            self._shadow[a:b] = cells[a:b]
        return int((ends - starts).sum()) * row_bytes + self.write_rects(*ov.draw_rects())

    def write_rects(self, rects: np.ndarray, counts: tuple[int, ...] | None = None) -> int:
        """Upload the quads to draw: ``uint32 (n, 4)`` cell rectangles ``(col0, row0, col1,
        row1)``, half-open, disjoint, and how many of them each of ``DRAW_CLASSES`` draws, in
        that order (None: all by the general, blended pipeline). Called by ``upload`` whenever
        the cells change; tools may call it to draw other rectangles (e.g. the whole grid).
        Returns the bytes written."""
        rects = np.ascontiguousarray(rects, np.uint32).reshape(-1, 4)
        if counts is None:
            counts = (0,) * (len(DRAW_CLASSES) - 1) + (len(rects),)
        if sum(counts) != len(rects) or len(counts) != len(DRAW_CLASSES):
            raise ValueError(f"{len(rects)} rectangles, but draw counts {counts}")
        self.draw_counts = tuple(int(n) for n in counts)
        data = rects.tobytes()
        if data == self._rects:
            return 0
        self._rects = data
        self.rect_buffer = _grown(self.device, self.rect_buffer, len(data)) or self.rect_buffer
        if data:
            self.device.queue.write_buffer(self.rect_buffer, 0, data)
        self.rect_count = len(data) // 16
        return len(data)

    def draw_summary(self) -> tuple[int, int]:
        """``(quads, cells)``: instances the next draw makes and the cells they cover."""
        r = np.frombuffer(self._rects or b"", np.uint32).reshape(-1, 4).astype(np.int64)
        return len(r), int(((r[:, 2] - r[:, 0]) * (r[:, 3] - r[:, 1])).sum())


class DebugOverlayPass(_OverlayResources, RenderPass):
    """The ``DebugOverlay`` render pass: owns the pipelines and buffers that draw ``overlay``
    over the finished frame in a target of ``output_format`` (reads and writes ``output``),
    as instanced quads over the occupied cells (see the module docstring). The HUD uses it
    where the output cannot be written by a compute shader (``DebugOverlayCompute``).

    Args:
        device: the wgpu device.
        overlay: the cell grid to draw.
        output_format: colour format of the target; on ``*-srgb`` formats the shader outputs
            linear colour so the stored bytes equal the requested sRGB bytes.
        scale: integer HUD scale (framebuffer pixels per HUD pixel), >= 1.
        name: the pass name (``"DebugOverlay"`` for the engine's HUD).

    Attributes:
        target_size: framebuffer ``(width, height)`` in pixels used when ``record`` gets no
            context (``ctx=None``); ``None`` means the grid's own size in pixels.
        rect_count: quads (instances) the next frame draws; ``draw_counts`` how many of them
            each of ``DRAW_CLASSES`` draws.

    Raises:
        ValueError: ``scale`` is not an integer >= 1.
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        overlay: DebugOverlay,
        output_format: str,
        scale: int = 1,
        *,
        name: str = PASS_NAME,
    ):
        RenderPass.__init__(self, name, reads=(OUTPUT,), writes=(OUTPUT,))
        self._setup(device, overlay, output_format, scale)
        self.shader = shader_pipeline(
            self.device, HERE / "debug_overlay.wgsl", self._make_pipelines
        )

    @property
    def pipeline(self):  # the general one (blended); hot reload replaces them all
        return self.shader.get()["blend"]

    def _make_pipelines(self, module) -> dict[str, wgpu.GPURenderPipeline]:
        """``DRAW_CLASSES`` -> pipeline: ``text`` (``fs_text``) and ``opaque`` (``fs_main``)
        write without blending, ``blend`` (``fs_main``) blends "over" the frame."""
        blend = {
            "color": {"src_factor": "src-alpha", "dst_factor": "one-minus-src-alpha"},
            "alpha": {"src_factor": "one", "dst_factor": "one-minus-src-alpha"},
        }
        layout = self.device.create_pipeline_layout(bind_group_layouts=[self.layout])

        def make(name: str, entry: str, blended: bool) -> wgpu.GPURenderPipeline:
            target = {"format": self.output_format}
            if blended:
                target["blend"] = blend
            return self.device.create_render_pipeline(
                label=f"{PASS_NAME} {name}",
                layout=layout,
                vertex={
                    "module": module,
                    "entry_point": "vs_main",
                    "buffers": [
                        {
                            "array_stride": 16,
                            "step_mode": "instance",
                            "attributes": [
                                {"format": "uint32x4", "offset": 0, "shader_location": 0}
                            ],
                        }
                    ],
                },
                primitive={"topology": "triangle-list"},
                fragment={"module": module, "entry_point": entry, "targets": [target]},
            )

        return {
            "text": make("text", "fs_text", False),
            "opaque": make("opaque", "fs_main", False),
            "blend": make("blend", "fs_main", True),
        }

    def targets(self, ctx) -> dict:
        """Render pass descriptor: load the finished frame in ``ctx.output`` and draw over it."""
        return {"color_attachments": [{"view": ctx.output, "load_op": "load", "store_op": "store"}]}

    def record(self, ctx, rpass: wgpu.GPURenderPassEncoder) -> None:
        """Upload changes and draw one quad per occupied rectangle, one draw per
        ``DRAW_CLASSES`` entry that has any (``draw(6, n, 0, first)``; nothing at all for an
        empty grid). ``ctx.size`` gives the framebuffer size; with ``ctx=None`` it is
        ``target_size`` or the grid's size."""
        self.upload(None if ctx is None else tuple(ctx.size))
        if self.rect_count == 0:
            return
        pipes = self.shader.get()
        rpass.set_bind_group(0, self.bind_group)
        rpass.set_vertex_buffer(0, self.rect_buffer)
        first = 0
        for name, n in zip(DRAW_CLASSES, self.draw_counts, strict=True):
            if n:
                rpass.set_pipeline(pipes[name])
                rpass.draw(6, n, 0, first)
                first += n


class DebugOverlayCompute(_OverlayResources, ComputePass):
    """The ``DebugOverlay`` pass as compute: the same pixels as ``DebugOverlayPass``, written
    into the output texture through a storage view of its non-sRGB twin format, with no
    rasteriser. One workgroup per occupied cell, one thread per HUD pixel.

    Why: the raster pass's cost is fragment shading of the covered pixels, and a compute GPU
    has little raster throughput beside its compute: on an NVIDIA H200 at 1920x1080 a bare
    fullscreen blend costs 0.264 ms, the ``all`` HUD 0.171 ms drawn as quads (one constant
    colour over the same pixels 0.048 ms), and 0.0095 ms in compute (``tools/bench.py hud``).

    Opaque cells (``DRAW_CLASSES`` ``text``, ``opaque``) are written directly: the bytes equal
    the raster pass's. Cells that let the frame show through (``blend``) need the frame, which
    a storage view cannot read: a first dispatch samples it through ``ctx.output`` and blends
    as the raster pass's blend state does (linear on ``-srgb`` targets, then the IEC 61966-2-1
    encode; within 1 of the raster bytes), into a scratch buffer the second dispatch stores.

    Args:
        device, overlay, output_format, scale, name: as ``DebugOverlayPass``.
        storage_format: the output texture's format as a storage view, ``"rgba8unorm"`` or
            ``"bgra8unorm"``; the texture must have ``STORAGE_BINDING`` and
            ``TEXTURE_BINDING`` usage (``RenderGraph.output_storage_format``).

    Raises:
        ValueError: ``scale`` is not an integer >= 1, or an unsupported ``storage_format``.
    """

    STORAGE_FORMATS = ("rgba8unorm", "bgra8unorm")

    def __init__(
        self,
        device: wgpu.GPUDevice,
        overlay: DebugOverlay,
        output_format: str,
        storage_format: str,
        scale: int = 1,
        *,
        name: str = PASS_NAME,
    ):
        if storage_format not in self.STORAGE_FORMATS:
            raise ValueError(
                f"HUD storage format {storage_format!r}: one of {', '.join(self.STORAGE_FORMATS)}"
            )
        ComputePass.__init__(self, name, reads=(OUTPUT,), writes=(OUTPUT,))
        self.storage_format = storage_format
        self._setup(device, overlay, output_format, scale)
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        self.cell_list = device.create_buffer(label="hud cell list", size=4 * 1024, usage=usage)
        self.blended = device.create_buffer(label="hud blended", size=64 * 1024, usage=usage)
        self.cell_count = self.blend_cells = 0
        self._listed: tuple = (b"", ())
        self._frame_groups: tuple = (None, None, None)  # (output view, sampled, storage)
        self.frame_layouts = [self._frame_layout(sampled) for sampled in (True, False)]
        self.shader = shader_pipeline(
            device,
            HERE / "debug_overlay.wgsl",
            self._make_pipelines,
            defines={"BGRA": storage_format == "bgra8unorm"},
        )

    def _frame_layout(self, sampled: bool) -> wgpu.GPUBindGroupLayout:
        """Group 1: the frame (sampled for ``cs_blend``, a storage view for ``cs_store``),
        the cell list and the blended scratch."""
        c = wgpu.ShaderStage.COMPUTE
        frame = (
            {"binding": 0, "visibility": c, "texture": {"sample_type": "float"}}
            if sampled
            else {
                "binding": 1,
                "visibility": c,
                "storage_texture": {
                    "access": "write-only",
                    "format": self.storage_format,
                    "view_dimension": "2d",
                },
            }
        )
        return self.device.create_bind_group_layout(
            label=f"hud frame {'sampled' if sampled else 'storage'}",
            entries=[
                frame,
                {"binding": 2, "visibility": c, "buffer": {"type": "read-only-storage"}},
                {"binding": 3, "visibility": c, "buffer": {"type": "storage"}},
            ],
        )

    def _make_pipelines(self, module) -> dict[str, wgpu.GPUComputePipeline]:
        layouts = {
            entry: self.device.create_pipeline_layout(bind_group_layouts=[self.layout, fl])
            for entry, fl in zip(("cs_blend", "cs_store"), self.frame_layouts, strict=True)
        }
        return compute_pipelines(
            self.device, module, layouts, label=PASS_NAME, layout=layouts.__getitem__
        )

    def write_rects(self, rects: np.ndarray, counts: tuple[int, ...] | None = None) -> int:
        """As ``DebugOverlayPass.write_rects``, and the cell list the dispatches run over:
        one ``uint32`` per occupied cell, ``col | row << 12 | class << 24``, the ``blend``
        cells first."""
        written = super().write_rects(rects, counts)
        if (self._rects, self.draw_counts) == self._listed:  # the same cells in the same classes
            return written
        self._listed = (self._rects, self.draw_counts)
        r = np.frombuffer(self._rects, np.uint32).reshape(-1, 4)
        kinds = np.repeat(np.arange(len(DRAW_CLASSES), dtype=np.uint32), self.draw_counts)
        parts = []
        for (c0, r0, c1, r1), k in zip(r.tolist(), kinds.tolist(), strict=True):
            rows, cols = np.mgrid[r0:r1, c0:c1]
            parts.append((cols | rows << 12 | k << 24).ravel().astype(np.uint32))
        cells = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
        blend = DRAW_CLASSES.index("blend")
        cells = np.concatenate([cells[cells >> 24 == blend], cells[cells >> 24 != blend]])
        self.cell_count = len(cells)
        self.blend_cells = int((cells >> 24 == blend).sum())
        if self.cell_count:
            self._grow("cell_list", cells.nbytes)
            self.device.queue.write_buffer(self.cell_list, 0, cells.tobytes())
        return written + cells.nbytes

    def _grow(self, name: str, nbytes: int) -> None:
        """Grow buffer ``name`` of group 1 to hold ``nbytes`` (its bind groups made anew)."""
        if (new := _grown(self.device, getattr(self, name), nbytes)) is not None:
            setattr(self, name, new)
            self._frame_groups = (None, None, None)

    def _groups(self, view) -> tuple:
        """Group 1 for ``cs_blend`` and ``cs_store`` over the output ``view`` (kept while the
        view and the buffers stay the same)."""
        if self._frame_groups[0] is view:
            return self._frame_groups[1:]
        storage = view.texture.create_view(
            format=self.storage_format, usage=wgpu.TextureUsage.STORAGE_BINDING
        )
        groups = tuple(
            self.device.create_bind_group(
                label=f"hud frame {name}",
                layout=layout,
                entries=[
                    {"binding": 0 if name == "sampled" else 1, "resource": frame},
                    {"binding": 2, "resource": {"buffer": self.cell_list}},
                    {"binding": 3, "resource": {"buffer": self.blended}},
                ],
            )
            for name, layout, frame in zip(
                ("sampled", "storage"), self.frame_layouts, (view, storage), strict=True
            )
        )
        self._frame_groups = (view, *groups)
        return groups

    def record(self, ctx, cpass: wgpu.GPUComputePassEncoder) -> None:
        """Upload changes, then ``cs_blend`` over the blended cells (if any) and ``cs_store``
        over every occupied cell, into ``ctx.output``'s texture (nothing for an empty grid).
        ``ctx.size`` gives the framebuffer size."""
        self.upload(tuple(ctx.size))
        if self.cell_count == 0:
            return
        self._grow("blended", self.blend_cells * 64 * self.scale**2 * 4)
        pipes = self.shader.get()
        sampled, storage = self._groups(ctx.output)
        cpass.set_bind_group(0, self.bind_group)
        if self.blend_cells:
            cpass.set_pipeline(pipes["cs_blend"])
            cpass.set_bind_group(1, sampled)
            cpass.dispatch_workgroups(self.blend_cells)
        cpass.set_pipeline(pipes["cs_store"])
        cpass.set_bind_group(1, storage)
        cpass.dispatch_workgroups(self.cell_count)


def _grown(device: wgpu.GPUDevice, buf: wgpu.GPUBuffer, nbytes: int) -> wgpu.GPUBuffer | None:
    """A buffer like ``buf`` (label, usage) doubled in size until it holds ``nbytes``, ``buf``
    destroyed; None when ``buf`` already holds them."""
    if nbytes <= buf.size:
        return None
    size = buf.size
    while size < nbytes:
        size *= 2
    buf.destroy()
    return device.create_buffer(label=buf.label, size=size, usage=buf.usage)


def srgb_decode_table() -> np.ndarray:
    """``float32 (256,)``: the linear value of each 8-bit sRGB code, IEC 61966-2-1 transfer
    function evaluated in float64 (``c/12.92`` up to 0.04045, else ``((c+0.055)/1.055)^2.4``)."""
    c = np.arange(256) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4).astype(np.float32)
