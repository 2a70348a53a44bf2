// Sky: the sky model into the HDR target where nothing was drawn. A fullscreen triangle at
// depth 0 tested `equal` against the reverse-Z depth (cleared to 0): only empty pixels pass,
// so the post chain (histogram, bloom, TAA) sees the sky it will show.
// #include "frame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;

struct SkyOut {
    @builtin(position) @invariant clip: vec4f,  // exact depth 0 for the equal test
    @location(0) ndc: vec2f,  // interpolated: the pixel centre's NDC
};

@vertex
fn vs_sky(@builtin(vertex_index) i: u32) -> SkyOut {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    let ndc = uv * 2.0 - 1.0;
    return SkyOut(vec4f(ndc, 0.0, 1.0), ndc);
}

@fragment
fn fs_sky(in: SkyOut) -> @location(0) vec4f {
    let ndc = in.ndc;
    let a = view.inv_view_proj * vec4f(ndc, 1.0, 1.0);
    let b = view.inv_view_proj * vec4f(ndc, 0.5, 1.0);
    return vec4f(sky_color(view, normalize(b.xyz / b.w - a.xyz / a.w)), 1.0);
}
