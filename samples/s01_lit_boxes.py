"""s01: spinning lit boxes on a ground plane: the smallest complete Lantern sample."""

from __future__ import annotations

import numpy as np
import wgpu

from engine.app import Sample, main
from engine.graph import OUTPUT, RenderPass, TextureDesc
from engine.math3d import look_at, perspective_reverse_z, to_gpu
from engine.scene.meshes import VERTEX_LAYOUT, box, plane
from engine.shader_registry import shader_pipeline

DEPTH_FORMAT = "depth32float"


class LitBoxes(Sample):
    name = "s01"
    category = "basics"
    description = "Spinning lit boxes on a ground plane (one render pass, reverse-Z depth)."

    def build(self, graph):
        device = self.app.gpu.device
        meshes = [plane(1.0), box()]
        verts = np.concatenate([m.vertices for m in meshes])
        self.draws = []  # (index_count, first_index, base_vertex, instance_count, first_inst)
        first, base = 0, 0
        idx = []
        for m, (count, first_inst) in zip(meshes, ((1, 0), (9, 1)), strict=True):
            self.draws.append((len(m.indices), first, base, count, first_inst))
            idx.append(m.indices)
            first += len(m.indices)
            base += len(m.vertices)
        self.vbuf = _upload(device, verts, wgpu.BufferUsage.VERTEX)
        self.ibuf = _upload(device, np.concatenate(idx), wgpu.BufferUsage.INDEX)
        self.ubuf = device.create_buffer(
            size=112, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
        )
        self.shader = shader_pipeline(device, "s01_lit.wgsl", lambda m: _lit(device, m, graph))
        self.shader.on_reload(self._bind)  # its "auto" layout is the new pipeline's own
        self._bind()
        graph.create_texture(
            "depth", TextureDesc(DEPTH_FORMAT, wgpu.TextureUsage.RENDER_ATTACHMENT)
        )
        graph.add(RenderPass("Main", record=self.record, targets=self.targets, writes=(OUTPUT,)))

    def _bind(self) -> None:
        self.bind_group = self.app.gpu.device.create_bind_group(
            layout=self.shader.get().get_bind_group_layout(0),
            entries=[{"binding": 0, "resource": {"buffer": self.ubuf}}],
        )

    def update(self, ctx):
        w, h = ctx.size
        angle = 0.25 * ctx.time
        eye = np.array([9.0 * np.sin(angle), 5.0, 9.0 * np.cos(angle)])
        view_proj = perspective_reverse_z(50.0, w / h, 0.1) @ look_at(eye, (0, 0.8, 0))
        sun = np.array([0.5, 0.8, 0.3])
        sun /= np.linalg.norm(sun)
        data = (
            to_gpu(view_proj)
            + np.array([*eye, 1, *sun, 0, ctx.time, 0, 0, 0], np.float32).tobytes()
        )
        ctx.device.queue.write_buffer(self.ubuf, 0, data)

    def targets(self, ctx):
        return {
            "color_attachments": [
                {
                    "view": ctx.output,
                    "clear_value": (0.32, 0.45, 0.62, 1.0),
                    "load_op": "clear",
                    "store_op": "store",
                }
            ],
            "depth_stencil_attachment": {
                "view": ctx.graph.view("depth"),
                "depth_clear_value": 0.0,
                "depth_load_op": "clear",
                "depth_store_op": "store",
            },
        }

    def record(self, ctx, rpass):
        rpass.set_pipeline(self.shader.get())
        rpass.set_bind_group(0, self.bind_group)
        rpass.set_vertex_buffer(0, self.vbuf)
        rpass.set_index_buffer(self.ibuf, "uint32")
        for count, first, base, instances, first_inst in self.draws:
            rpass.draw_indexed(count, instances, first, base, first_inst)


def _lit(device, module, graph) -> wgpu.GPURenderPipeline:
    return device.create_render_pipeline(
        label="s01 lit",
        layout="auto",
        vertex={
            "module": module,
            "entry_point": "vs_main",
            "buffers": [VERTEX_LAYOUT],
        },
        primitive={"topology": "triangle-list", "cull_mode": "back"},
        depth_stencil={
            "format": DEPTH_FORMAT,
            "depth_write_enabled": True,
            "depth_compare": "greater",  # reverse-Z
        },
        fragment={
            "module": module,
            "entry_point": "fs_main",
            "targets": [{"format": graph.output_format}],
        },
    )


def _upload(device, array: np.ndarray, usage: int) -> wgpu.GPUBuffer:
    return device.create_buffer_with_data(data=array.tobytes(), usage=usage)


if __name__ == "__main__":
    main(LitBoxes)
