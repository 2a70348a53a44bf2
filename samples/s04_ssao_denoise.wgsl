// The spatial denoise and the half-resolution variant's upsample, both depth-aware (joint
// bilateral filtering, Kopf et al. 2007, "Joint Bilateral Upsampling", SIGGRAPH): a tap's
// weight falls with its surface's distance from the centre pixel's tangent plane (so a
// plane seen at a grazing angle keeps its taps, another surface behind a silhouette does
// not). `src` texels sit at the top-left pixel of their SCALE x SCALE block.
// #include "s04_ssao_common.wgsl"

@group(0) @binding(4) var src: texture_2d<f32>;
@group(0) @binding(5) var dst: texture_storage_2d<r32float, write>;

// The weight of the surface at full-resolution pixel `q` for the centre at `pos` with normal
// `n`: Gaussian in its distance from the centre's tangent plane, in units of `tol`.
fn plane_weight(q: vec2i, pos: vec3f, n: vec3f, tol: f32) -> f32 {
    let d = textureLoad(depth_tex, q, 0);
    if (d <= 0.0) {
        return 0.0;
    }
    let x = dot(n, view_position(vec2f(q) + 0.5, d) - pos) / tol;
    return exp(-x * x);
}

struct Centre {
    pos: vec3f,
    n: vec3f,
    tol: f32,  // plane distance of weight exp(-1): a tenth of R, more far away
    sky: bool,
};

fn centre(q: vec2i) -> Centre {
    let d = textureLoad(depth_tex, q, 0);
    let pos = view_position(vec2f(q) + 0.5, max(d, 1e-30));
    let n = oct_decode(textureLoad(normal_tex, q, 0).xy);
    return Centre(pos, n, 0.1 * ssao.radius + 0.01 * -pos.z, d <= 0.0);
}

// A 5x5 filter at `p` of `src` (scale: full-resolution pixels a texel): weights 1/2, 1, 1,
// 1, 1/2 along each axis, so each of the 4x4 noise values counts once, times plane_weight.
fn denoise(p: vec2i, scale: i32) -> f32 {
    let raw = textureLoad(src, p, 0).r;
    let c = centre(p * scale);
    if (ssao.denoise < 0.5 || c.sky) {
        return raw;
    }
    let last = vec2i(textureDimensions(src)) - 1;
    var sum = 0.0;
    var total = 0.0;
    for (var dy = -2; dy <= 2; dy++) {
        for (var dx = -2; dx <= 2; dx++) {
            let q = clamp(p + vec2i(dx, dy), vec2i(0), last);
            let edge = select(1.0, 0.5, abs(dx) == 2) * select(1.0, 0.5, abs(dy) == 2);
            let w = edge * plane_weight(q * scale, c.pos, c.n, c.tol);
            sum += w * textureLoad(src, q, 0).r;
            total += w;
        }
    }
    return select(raw, sum / total, total > 1e-4);
}

@compute @workgroup_size(8, 8)
fn cs_full(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    textureStore(dst, id.xy, vec4f(min(denoise(vec2i(id.xy), 1), 1.0)));
}

@compute @workgroup_size(8, 8)
fn cs_half(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    textureStore(dst, id.xy, vec4f(denoise(vec2i(id.xy), 2)));  // clamped after the upsample
}

// Half resolution to full: the (up to) four texels around the pixel, bilinear weights times
// plane_weight; where none lies on the pixel's surface, the one nearest its plane.
@compute @workgroup_size(8, 8)
fn cs_upsample(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    let p = vec2i(id.xy);
    let c = centre(p);
    if (c.sky) {
        textureStore(dst, p, vec4f(1.0));
        return;
    }
    let last = vec2i(textureDimensions(src)) - 1;
    let base = min(p / 2, last);
    let f = vec2f(p - 2 * base) * 0.5;  // 0 on a texel's own pixel, 1/2 between two
    var sum = 0.0;
    var total = 0.0;
    var best = vec2f(-1.0, textureLoad(src, base, 0).r);  // (weight, value) of the nearest
    for (var j = 0; j <= 1; j++) {
        for (var i = 0; i <= 1; i++) {
            let bil = select(1.0 - f.x, f.x, i == 1) * select(1.0 - f.y, f.y, j == 1);
            if (bil <= 0.0) {
                continue;
            }
            let q = min(base + vec2i(i, j), last);
            let geo = plane_weight(2 * q, c.pos, c.n, c.tol);
            let ao = textureLoad(src, q, 0).r;
            sum += bil * geo * ao;
            total += bil * geo;
            best = select(best, vec2f(geo, ao), geo > best.x);
        }
    }
    textureStore(dst, p, vec4f(min(select(best.y, sum / total, total > 1e-4), 1.0)));
}
