"""The frozen culling frustum drawn as lines (F2 in s13), so what culling keeps is visible.

Twelve edges of the frozen camera's view volume, from its near plane to the NDC depth
``far_depth`` (reverse-Z: ``near / view depth``; the far plane itself is at infinity), drawn
as a line list into the main colour target with the reverse-Z depth test (``greater-equal``)
and depth writes, so buildings hide the lines behind them and Post does not take the line
pixels for sky.
"""

from __future__ import annotations

import numpy as np
import wgpu

from engine.shader_registry import shader_pipeline

UNIFORM_SIZE = 208  # mat4 + 8 vec4 + vec4
LINE_COLOR = (1.0, 0.75, 0.0)  # amber, linear
HDR_GAIN = 4.0  # on a float (HDR) target: still amber after tone mapping
# Corner k: x = k & 1, y = (k >> 1) & 1, far = k >> 2 (shaders/frustum_lines.wgsl)
EDGES = (
    (0, 1), (2, 3), (0, 2), (1, 3),
    (4, 5), (6, 7), (4, 6), (5, 7),
    (0, 4), (1, 5), (2, 6), (3, 7),
)  # fmt: skip


def frustum_corners(inv_view_proj: np.ndarray, far_depth: float) -> np.ndarray:
    """World corners ``(8, 3)`` float64 of the volume NDC x, y in [-1, 1], depth in
    [``far_depth``, 1] (reverse-Z: 1 is the near plane), corner order as in ``EDGES``."""
    ndc = np.array(
        [[2 * (k & 1) - 1, 2 * ((k >> 1) & 1) - 1, far_depth if k >> 2 else 1.0, 1.0]
         for k in range(8)]
    )  # fmt: skip
    w = ndc @ np.asarray(inv_view_proj, np.float64).T
    return w[:, :3] / w[:, 3:]


class FrustumLines:
    """Owns the line pipeline and its uniform; records 24 vertices into a render pass.

    Args:
        device: the ``wgpu.GPUDevice``.
        color_format: format of the colour attachment of the pass it records into.
        extra_formats: formats of that pass's further colour attachments (left unwritten).
        depth_format: format of that pass's depth attachment (reverse-Z), or None for none.
        far_depth: NDC depth of the far face (reverse-Z ``near / distance``; 1e-3 draws the
            frustum 1000 near-plane distances long).
    """

    def __init__(
        self,
        device: wgpu.GPUDevice,
        color_format: str,
        depth_format: str | None,
        *,
        extra_formats: tuple[str, ...] = (),
        far_depth: float = 1e-3,
    ):
        if not 0.0 < far_depth < 1.0:
            raise ValueError(f"far_depth must be in (0, 1), got {far_depth}")
        self.device, self.far_depth = device, far_depth
        gain = HDR_GAIN if color_format.endswith("float") else 1.0
        self._data = np.zeros(UNIFORM_SIZE // 4, np.float32)
        self._data[48:52] = (*(c * gain for c in LINE_COLOR), 1.0)
        self.uniform = device.create_buffer(
            label="frustum lines",
            size=UNIFORM_SIZE,
            usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
        )
        depth = None
        if depth_format is not None:
            depth = {
                "format": depth_format,
                "depth_write_enabled": True,
                "depth_compare": "greater-equal",
            }
        self.shader = shader_pipeline(
            device,
            "frustum_lines.wgsl",
            lambda m: self._make(m, color_format, depth, extra_formats),
        )
        self._bind()
        self.shader.on_reload(self._bind)

    def _make(self, m, color_format: str, depth, extra=()) -> wgpu.GPURenderPipeline:
        unwritten = [{"format": f, "write_mask": 0} for f in extra]
        return self.device.create_render_pipeline(
            label="frustum lines",
            layout="auto",
            vertex={"module": m, "entry_point": "vs_lines"},
            primitive={"topology": "line-list"},
            depth_stencil=depth,
            fragment={
                "module": m,
                "entry_point": "fs_lines",
                "targets": [{"format": color_format}, *unwritten],
            },
        )

    @property
    def pipeline(self):  # the current one: hot reload replaces it (engine/shader_registry.py)
        return self.shader.get()

    def _bind(self) -> None:
        self.bind_group = self.device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": self.uniform}}],
        )

    def set_frustum(self, inv_view_proj: np.ndarray) -> None:
        """The frustum to draw: the inverse ``(4, 4)`` of the frozen camera's world→clip."""
        corners = frustum_corners(inv_view_proj, self.far_depth)
        self._data[16:48] = np.c_[corners, np.ones(8)].reshape(-1)

    def set_view(self, view_proj: np.ndarray) -> None:
        """World→clip ``(4, 4)`` of the camera rendering this frame."""
        self._data[0:16] = np.asarray(view_proj, np.float32).T.reshape(-1)

    def record(self, ctx, rpass: wgpu.GPURenderPassEncoder) -> None:
        """Upload the uniform and draw the 12 edges (``ctx`` is unused; pass API)."""
        self.device.queue.write_buffer(self.uniform, 0, self._data.tobytes())
        rpass.set_pipeline(self.pipeline)
        rpass.set_bind_group(0, self.bind_group)
        rpass.draw(24)
