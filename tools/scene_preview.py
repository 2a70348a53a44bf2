"""Render a Scene to a PNG without the standard frame: a developer check of scene content.

    python tools/scene_preview.py --city 20000 --time 1.0 out.png
    python tools/scene_preview.py --scene assets/meshes/house.gltf --instances 4 out.png
    python tools/scene_preview.py --city 5000 --camera 0,300,400:0,0,0 out.png

One instanced ``draw_indexed`` per mesh (finest LOD), sun-lit Lambert with a sky/ground
ambient term and distance fog; no culling, no shadows (that is the standard frame's job).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import wgpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.scene.camera import Camera, parse_camera  # noqa: E402
from engine.scene.meshes import VERTEX_LAYOUT  # noqa: E402
from engine.scene.scene import Scene  # noqa: E402

SHADER = """
struct Frame { view_proj: mat4x4f, eye: vec4f, sun: vec4f, fog: vec4f };
@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> models: array<mat4x4f>;
@group(0) @binding(2) var<storage, read> colors: array<vec4f>;

struct VOut {
    @builtin(position) pos: vec4f,
    @location(0) world: vec3f,
    @location(1) normal: vec3f,
    @location(2) color: vec4f,
};

@vertex
fn vs_main(@location(0) p: vec3f, @location(1) n: vec3f,
           @builtin(instance_index) i: u32) -> VOut {
    let m = models[i];
    let world = m * vec4f(p, 1.0);
    // Cofactor matrix = det * inverse-transpose: right for non-uniform scale; the sign of
    // det keeps normals outward under mirroring transforms.
    let c0 = cross(m[1].xyz, m[2].xyz);
    let c1 = cross(m[2].xyz, m[0].xyz);
    let c2 = cross(m[0].xyz, m[1].xyz);
    var out: VOut;
    out.pos = frame.view_proj * world;
    out.world = world.xyz;
    out.normal = mat3x3f(c0, c1, c2) * n * sign(dot(m[0].xyz, c0));
    out.color = colors[i];
    return out;
}

@fragment
fn fs_main(v: VOut) -> @location(0) vec4f {
    let n = normalize(v.normal);
    let sun = max(dot(n, frame.sun.xyz), 0.0) * 2.6;
    let ambient = mix(vec3f(0.10, 0.09, 0.08), vec3f(0.22, 0.28, 0.38), n.y * 0.5 + 0.5);
    let lit = v.color.rgb * (ambient + vec3f(sun));
    let dist = length(v.world - frame.eye.xyz);
    let fog = 1.0 - exp(-dist * frame.fog.w);
    return vec4f(mix(lit, frame.fog.rgb, fog), 1.0);
}
"""

SKY = (0.45, 0.58, 0.75)


def render(
    device: wgpu.GPUDevice, scene: Scene, camera: Camera, size: tuple[int, int]
) -> np.ndarray:
    """Render ``scene`` from ``camera``; returns ``(H, W, 3)`` uint8 sRGB. Blocks (a tool)."""
    w, h = size
    order = np.argsort(scene.mesh_ids, kind="stable")
    models = np.ascontiguousarray(scene.transforms[order].transpose(0, 2, 1))
    colors = np.ascontiguousarray(scene.colors[order])
    lods = [m.lods[0] for m in scene.meshes]
    verts = np.concatenate([lod.vertices for lod in lods])
    idx = np.concatenate([lod.indices for lod in lods])
    first_index = np.cumsum([0] + [len(lod.indices) for lod in lods])
    base_vertex = np.cumsum([0] + [len(lod.vertices) for lod in lods])
    per_mesh = np.bincount(scene.mesh_ids, minlength=len(lods))
    first_instance = np.cumsum(np.concatenate([[0], per_mesh]))

    def upload(data: np.ndarray, usage: int) -> wgpu.GPUBuffer:
        return device.create_buffer_with_data(data=np.ascontiguousarray(data), usage=usage)

    S = wgpu.BufferUsage
    vbuf, ibuf = upload(verts, S.VERTEX), upload(idx, S.INDEX)
    mbuf, cbuf = upload(models, S.STORAGE), upload(colors, S.STORAGE)
    span = float(np.linalg.norm(scene.extent[1] - scene.extent[0]))
    uniform = np.zeros(28, np.float32)
    uniform[:16] = (camera.proj(w / h) @ camera.view()).T.reshape(-1)
    uniform[16:19] = camera.eye
    uniform[20:23] = scene.sun_direction
    uniform[24:28] = (*np.power(SKY, 2.2), 1.5 / max(span, 200.0))
    ubuf = upload(uniform, S.UNIFORM)

    pipeline = create_pipeline(device)
    bind = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": ubuf}},
            {"binding": 1, "resource": {"buffer": mbuf}},
            {"binding": 2, "resource": {"buffer": cbuf}},
        ],
    )
    color = device.create_texture(
        size=(w, h, 1),
        format="rgba8unorm-srgb",
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    depth = device.create_texture(
        size=(w, h, 1), format="depth32float", usage=wgpu.TextureUsage.RENDER_ATTACHMENT
    )
    enc = device.create_command_encoder()
    rp = enc.begin_render_pass(
        color_attachments=[
            {
                "view": color.create_view(),
                "load_op": "clear",
                "store_op": "store",
                "clear_value": (*np.power(SKY, 2.2), 1.0),
            }
        ],
        depth_stencil_attachment={
            "view": depth.create_view(),
            "depth_load_op": "clear",
            "depth_store_op": "store",
            "depth_clear_value": 0.0,
        },
    )
    rp.set_pipeline(pipeline)
    rp.set_bind_group(0, bind)
    rp.set_vertex_buffer(0, vbuf)
    rp.set_index_buffer(ibuf, "uint32")
    for k, lod in enumerate(lods):
        if per_mesh[k]:
            rp.draw_indexed(
                len(lod.indices),
                int(per_mesh[k]),
                int(first_index[k]),
                int(base_vertex[k]),
                int(first_instance[k]),
            )
    rp.end()
    device.queue.submit([enc.finish()])
    data = device.queue.read_texture(
        {"texture": color}, {"bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1)
    )
    return np.frombuffer(data, np.uint8).reshape(h, w, 4)[:, :, :3].copy()


def create_pipeline(device: wgpu.GPUDevice) -> wgpu.GPURenderPipeline:
    """The preview's one pipeline: reverse-Z depth (cleared to 0, compare greater), back-face
    culling of counter-clockwise front faces."""
    module = device.create_shader_module(code=SHADER)
    return device.create_render_pipeline(
        label="scene preview",
        layout="auto",
        vertex={
            "module": module,
            "entry_point": "vs_main",
            "buffers": [VERTEX_LAYOUT],
        },
        primitive={"topology": "triangle-list", "cull_mode": "back", "front_face": "ccw"},
        depth_stencil={
            "format": "depth32float",
            "depth_write_enabled": True,
            "depth_compare": "greater",
        },
        fragment={
            "module": module,
            "entry_point": "fs_main",
            "targets": [{"format": "rgba8unorm-srgb"}],
        },
    )


def main(argv: list[str] | None = None) -> int:
    from PIL import Image

    from engine.gpu import create_gpu
    from engine.options import size_type
    from engine.scene.gltf import SceneError, default_camera, load_gltf, repeat_grid
    from engine.scene.procedural import city

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group()
    src.add_argument("--city", type=int, metavar="N", help="procedural city of N instances")
    src.add_argument("--scene", metavar="FILE", help="a glTF 2.0 file (.gltf or .glb)")
    p.add_argument("--instances", type=int, default=1, help="copies of --scene on a grid")
    p.add_argument("--camera", type=parse_camera, help="EX,EY,EZ:TX,TY,TZ[:FOV_DEG]")
    p.add_argument("--time", type=float, default=1.0, help="seconds along the camera path")
    p.add_argument("--size", type=size_type, default=(1280, 720), metavar="WxH")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("output", help="PNG path")
    args = p.parse_args(argv)
    try:
        if args.scene:
            scene = load_gltf(args.scene)
            scene = repeat_grid(scene, args.instances) if args.instances > 1 else scene
            path = default_camera(scene, aspect=min(args.size[0] / args.size[1], 1.0))
        else:
            scene, path = city(args.city or 20_000, seed=args.seed)
    except (SceneError, ValueError) as e:
        print(f"scene_preview: error: {e}", file=sys.stderr)
        return 2
    camera = args.camera or path.at(args.time)
    rgb = render(create_gpu().device, scene, camera, args.size)
    Image.fromarray(rgb).save(args.output)
    print(f"wrote {args.output}: {scene.count} instances, eye {camera.eye}, target {camera.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
