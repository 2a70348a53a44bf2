// Variants "gtao" and "gtao-half": ground-truth-based ambient occlusion (Jimenez, Wu, Pesce
// and Jarabo 2016, "Practical Realtime Strategies for Accurate Indirect Occlusion", SIGGRAPH
// course; eq. 10). SLICES screen-space directions turned by the pixel's noise; along each,
// both ways, steps up to R's projection find the horizon angles h1, h2 in the slice plane
// (the view vector and the direction), which the projected normal's angle n bounds; the
// cosine-weighted visible arc 1/4 (-cos(2h - n) + cos n + 2 h sin n) for each side, times
// the projected normal's length, averaged over the slices, is the ambient visibility: its
// mean over all slice directions, so one pixel's few slices may read above 1 (the denoise
// averages them; ssao.raw keeps them unclamped).
// The horizon treats what it sees as infinitely thick (samples past R fade over its last
// tenth): the reference's thickness T is not modelled. cs_half: one texel per 2x2 pixels,
// at the top-left pixel of its block, marching the full-resolution depth.
// #include "s04_ssao_common.wgsl"

@group(0) @binding(4) var dst: texture_storage_2d<r32float, write>;

@group(0) @binding(5) var clamp_sampler: sampler;

const STEPS: u32 = 8u;  // along each side of a slice: `samples` / 8 slices

// The depth buffer at pixel coordinates `at` (not snapped to a texel centre, so the point
// stays in the slice's plane): bilinear in reverse-Z depth, which is affine in screen space
// over a plane (exact there), unless the four texels' depths differ by more than a quarter
// (a silhouette: interpolating would invent a surface between), then the nearest texel's.
fn depth_at(at: vec2f) -> f32 {
    let g = textureGather(depth_tex, clamp_sampler, at * view.size.zw);  // (0,1) (1,1) (1,0) (0,0)
    let f = fract(at - 0.5);
    if (max(max(g.x, g.y), max(g.z, g.w)) > 1.25 * min(min(g.x, g.y), min(g.z, g.w))) {
        let near = select(select(g.w, g.z, f.x >= 0.5), select(g.x, g.y, f.x >= 0.5), f.y >= 0.5);
        return near;
    }
    return mix(mix(g.w, g.z, f.x), mix(g.x, g.y, f.x), f.y);
}

// The cosine of the elevation from `pos` (seen along `v`) of the surface at pixel coordinates
// `at`, faded towards `low` (the hemisphere's edge) as its distance reaches R; `low` off
// screen or in the sky.
fn horizon_cos(at: vec2f, pos: vec3f, v: vec3f, low: f32) -> f32 {
    if (any(at < vec2f(0.0)) || any(at >= view.size.xy)) {
        return low;
    }
    let d = depth_at(at);
    if (d <= 0.0) {
        return low;
    }
    let delta = view_position(at, d) - pos;
    let dist = length(delta);
    let fade = clamp((ssao.radius - dist) / (0.1 * ssao.radius), 0.0, 1.0);
    return mix(low, dot(delta, v) / max(dist, 1e-6), fade);
}

// The visible arc's cosine-weighted integral from the view vector to horizon angle `h`.
fn arc(h: f32, n: f32) -> f32 {
    return 0.25 * (-cos(2.0 * h - n) + cos(n) + 2.0 * h * sin(n));
}

fn gtao(src: vec2i, rnd: vec2f) -> f32 {
    let d = textureLoad(depth_tex, src, 0);
    if (d <= 0.0) {
        return 1.0;
    }
    let px = vec2f(src) + 0.5;
    let pos = view_position(px, d);
    let n = oct_decode(textureLoad(normal_tex, src, 0).xy);
    let v = normalize(-pos);
    let radius_px = ssao.radius * view.proj[1][1] * 0.5 * view.size.y / -pos.z;
    if (radius_px < 1.0) {
        return 1.0;  // R within a pixel: nothing to see at this resolution
    }
    let slices = max(1u, u32(ssao.samples) / (2u * STEPS));
    var vis = 0.0;
    var open = 0.0;
    for (var s = 0u; s < slices; s++) {
        let phi = (f32(s) + rnd.x) * PI / f32(slices);
        let omega = vec2f(cos(phi), sin(phi));  // on screen: x right, y down
        let dir = vec3f(omega.x, -omega.y, 0.0);  // in view space: y up
        let ortho = normalize(dir - dot(dir, v) * v);
        let axis = cross(ortho, v);
        let np = n - axis * dot(n, axis);
        let np_len = length(np);
        let cos_n = clamp(dot(np, v) / max(np_len, 1e-6), -1.0, 1.0);
        let ang_n = clamp(sign(dot(np, ortho)) * acos(cos_n), -0.5 * PI, 0.5 * PI);
        let low_pos = -sin(ang_n);  // cos(n + pi/2): the open hemisphere's edge, + side
        let low_neg = sin(ang_n);  // cos(n - pi/2), - side
        var cos_pos = low_pos;
        var cos_neg = low_neg;
        for (var k = 0u; k < STEPS; k++) {
            let f = (f32(k) + rnd.y) / f32(STEPS);
            let off = omega * max(f * radius_px, 1.0);
            cos_pos = max(cos_pos, horizon_cos(px + off, pos, v, low_pos));
            cos_neg = max(cos_neg, horizon_cos(px - off, pos, v, low_neg));
        }
        let h_pos = min(acos(clamp(cos_pos, -1.0, 1.0)), ang_n + 0.5 * PI);
        let h_neg = max(-acos(clamp(cos_neg, -1.0, 1.0)), ang_n - 0.5 * PI);
        vis += np_len * (arc(h_neg, ang_n) + arc(h_pos, ang_n));
        open += np_len * (cos(ang_n) + ang_n * sin(ang_n));  // the same with nothing in the way
    }
    return clamp(vis / max(open, 1e-6), 0.0, 1.0);
}

@compute @workgroup_size(8, 8)
fn cs_full(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    textureStore(dst, id.xy, vec4f(gtao(vec2i(id.xy), noise(id.xy))));
}

@compute @workgroup_size(8, 8)
fn cs_half(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    textureStore(dst, id.xy, vec4f(gtao(2 * vec2i(id.xy), noise(id.xy))));
}
