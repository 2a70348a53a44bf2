// Sky: the sky model into the HDR target where nothing was drawn. A fullscreen triangle at
// depth 0 tested `equal` against the reverse-Z depth (cleared to 0): only empty pixels pass,
// so the post chain (histogram, bloom, TAA) sees the sky it will show. With OUT_MOTION (while
// a pass reads frame.motion): the sky's motion vectors too, its directions reprojected with
// last frame's camera (rotation only: the sky is at infinity).
// #include "frame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;

struct SkyOut {
    @builtin(position) @invariant clip: vec4f,  // exact depth 0 for the equal test
    @location(0) ndc: vec2f,  // interpolated: the pixel centre's NDC
};

struct SkyColor {
    @location(0) color: vec4f,
// #if OUT_MOTION
    @location(OUT_MOTION) motion: vec4f,
// #endif
};

@vertex
fn vs_sky(@builtin(vertex_index) i: u32) -> SkyOut {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    let ndc = uv * 2.0 - 1.0;
    return SkyOut(vec4f(ndc, 0.0, 1.0), ndc);
}

@fragment
fn fs_sky(in: SkyOut) -> SkyColor {
    let ndc = in.ndc;
    let a = view.inv_view_proj * vec4f(ndc, 1.0, 1.0);
    let b = view.inv_view_proj * vec4f(ndc, 0.5, 1.0);
    let dir = normalize(b.xyz / b.w - a.xyz / a.w);
    var out: SkyColor;
    out.color = vec4f(sky_color(view, dir), 1.0);
// #if OUT_MOTION
    out.motion = vec4f(motion_pixels(view, in.clip.xy, view.prev_view_proj * vec4f(dir, 0.0)), 0.0, 0.0);
// #endif
    return out;
}
