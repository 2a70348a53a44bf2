// The frozen culling camera's frustum as 12 lines (line-list, 24 vertices, no vertex buffer).
// Corner k of `corners` is x = k & 1, y = (k >> 1) & 1, far = k >> 2 (engine/passes/frustum_lines.py).

struct Lines {
    view_proj: mat4x4f,          // world -> clip of the camera rendering the frame
    corners: array<vec4f, 8>,    // world positions of the frozen frustum's corners (w unused)
    color: vec4f,                // linear colour written to the target
};  // 208 bytes

@group(0) @binding(0) var<uniform> lines: Lines;

@vertex
fn vs_lines(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    // near face, far face, then the four side edges
    var edges = array<u32, 24>(
        0u, 1u, 2u, 3u, 0u, 2u, 1u, 3u,
        4u, 5u, 6u, 7u, 4u, 6u, 5u, 7u,
        0u, 4u, 1u, 5u, 2u, 6u, 3u, 7u,
    );
    return lines.view_proj * vec4f(lines.corners[edges[i]].xyz, 1.0);
}

@fragment
fn fs_lines() -> @location(0) vec4f {
    return lines.color;
}
