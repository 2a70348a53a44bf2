// The vignette: 1 at the centre, 1 - strength at the corners, quadratic in the distance.
// #include "screen_common.wgsl"

struct Params { strength: f32, pad0: f32, pad1: f32, pad2: f32 };
@group(0) @binding(1) var<uniform> params: Params;

@fragment
fn fs_main(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let p = frag.xy * view.size.zw * 2.0 - 1.0;  // -1..1 across the picture
    let r2 = dot(p, p) * 0.5;  // 0 at the centre, 1 in the corners
    return vec4f(vec3f(1.0 - params.strength * r2), 1.0);
}
