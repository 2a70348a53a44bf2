// Counter step charts and flow arrows over the flame chart: instanced antialiased line
// segments (engine/flamechart/extras.py), clipped to the chart area, "over" blending.
// #include "flame_common.wgsl"

struct Seg { x0: f32, y0: f32, x1: f32, y1: f32, half: f32, rgba: u32, pad0: u32, pad1: u32, };

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> segs: array<Seg>;

struct VOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) @interpolate(flat) ends: vec4<f32>,   // output px
    @location(1) @interpolate(flat) color: vec4<f32>,
    @location(2) @interpolate(flat) half: f32,
};

fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    let lo = c / 12.92;
    let hi = pow((c + 0.055) / 1.055, vec3<f32>(2.4));
    return select(hi, lo, c <= vec3<f32>(0.04045));
}

@vertex
fn vs_seg(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VOut {
    let s = segs[ii];
    let o = vec2<f32>(view.origin_x, view.origin_y);
    let a = o + vec2<f32>(s.x0, s.y0);
    let b = o + vec2<f32>(s.x1, s.y1);
    let pad = s.half + 1.0;
    let lo = min(a, b) - pad;
    let hi = max(a, b) + pad;
    let corner = vec2<f32>(f32(vi == 1u || vi == 2u || vi == 4u), f32(vi >= 2u && vi <= 4u));
    let p = mix(lo, hi, corner);
    var out: VOut;
    out.pos = vec4<f32>(p.x / view.out_w * 2.0 - 1.0, 1.0 - p.y / view.out_h * 2.0, 0.0, 1.0);
    out.ends = vec4<f32>(a, b);
    let c = vec4<f32>(f32(s.rgba & 255u), f32((s.rgba >> 8u) & 255u),
                      f32((s.rgba >> 16u) & 255u), f32(s.rgba >> 24u)) / 255.0;
    out.color = vec4<f32>(srgb_to_linear(c.rgb), c.a);
    out.half = s.half;
    return out;
}

@fragment
fn fs_seg(v: VOut) -> @location(0) vec4<f32> {
    let p = v.pos.xy;
    if (p.x < view.origin_x || p.x >= view.origin_x + view.width ||
        p.y < view.origin_y || p.y >= view.origin_y + view.height) { discard; }
    let a = v.ends.xy;
    let ab = v.ends.zw - a;
    let t = clamp(dot(p - a, ab) / max(dot(ab, ab), 1e-6), 0.0, 1.0);
    let d = length(p - (a + t * ab));  // distance to the segment
    let cov = clamp(v.half + 0.5 - d, 0.0, 1.0) * v.color.a;
    if (cov <= 0.0) { discard; }
    return vec4<f32>(v.color.rgb, cov);
}
