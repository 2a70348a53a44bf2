// For screen-space passes (engine/passes/screen.py): the fullscreen triangle, and the frame's
// View uniform as binding 0 of group 0.
// #include "frame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;

@vertex
fn vs_fullscreen(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

// World position of pixel centre `px` (pixels, y down) at reverse-Z depth `d` of a
// `size`-pixel target: the jittered inverse view-projection the frame drew with.
fn world_position(px: vec2f, d: f32, size: vec2f) -> vec3f {
    let ndc = vec2f(px.x / size.x * 2.0 - 1.0, 1.0 - px.y / size.y * 2.0);
    let w = view.inv_view_proj * vec4f(ndc, d, 1.0);
    return w.xyz / w.w;
}
