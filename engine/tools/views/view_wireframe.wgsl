// The wireframe view (engine/tools/views/passes.py ViewWirePass): the frame's drawn instances again
// by vertex pulling, non-indexed: vertex k of a draw reads index first_index + k from a copy
// of the index buffer, so k % 3 is its corner in the triangle and the barycentrics are set
// in the vertex stage (wgpu here has no polygon-mode line everywhere and lavapipe no shader
// barycentrics). Lines of constant screen width (fwidth) alpha-blended over the picture,
// depth-tested against the frame's depth (biased towards the eye).
// #include "mesh_view.wgsl"

// #include "mesh_draw.wgsl"

struct Batch {
    first_index: u32,
    index_count: u32,
    base_vertex: u32,
    pad: u32,
};
@group(2) @binding(0) var<storage, read> positions: array<f32>;  // 6 floats a vertex
@group(2) @binding(1) var<storage, read> indices: array<u32>;
@group(2) @binding(2) var<storage, read> batches: array<Batch>;
@group(2) @binding(3) var<uniform> wire: vec4u;  // x: batches

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) bary: vec3f,
};

@vertex
fn vs_wire(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VsOut {
    var b = batches[0];
    for (var k = 0u; k < wire.x; k++) {  // the batch whose index range holds vi
        let c = batches[k];
        if (vi >= c.first_index && vi < c.first_index + c.index_count) {
            b = c;
        }
    }
    let v = (b.base_vertex + indices[vi]) * 6u;
    let pos = vec3f(positions[v], positions[v + 1u], positions[v + 2u]);
    let id = remap[draw.base + ii];
    var out: VsOut;
    out.clip = view.view_proj * (transforms[id] * vec4f(pos, 1.0));
    let corner = (vi - b.first_index) % 3u;
    out.bary = vec3f(f32(corner == 0u), f32(corner == 1u), f32(corner == 2u));
    return out;
}

@fragment
fn fs_wire(in: VsOut) -> @location(0) vec4f {
    let d = fwidth(in.bary);
    let edge = smoothstep(vec3f(0.0), d * 1.5, in.bary);
    let a = 1.0 - min(edge.x, min(edge.y, edge.z));
    if (a < 0.01) {
        discard;
    }
    return vec4f(0.02, 0.02, 0.02, a * 0.9);
}
