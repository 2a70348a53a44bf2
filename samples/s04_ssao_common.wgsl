// Screen-space ambient occlusion's shared part (samples/s04_ssao.py): its parameters, the
// frame's depth and normals (bindings 2 and 3 of every SSAO stage), view-space positions from
// the reverse-Z depth, the occlusion test the reference and the hemisphere variant share, and
// the 4x4 per-pixel noise the denoise averages out. The numpy twin of the reference is in
// tests/test_s04.py: change both together.
// #include "screen_common.wgsl"

struct Ssao {
    radius: f32,     // R, world units: what lies farther from the point does not occlude it
    thickness: f32,  // T, world units: a surface is taken to be this thick behind its depth
    intensity: f32,  // SSAO.Apply: the ambient light times ao^intensity
    samples: f32,    // depth samples a pixel (the hemisphere's points; GTAO's steps x 4)
    denoise: f32,    // 1: the bilateral denoise; 0: none (a copy)
    pad0: f32,
    pad1: f32,
    pad2: f32,
};  // 32 bytes
@group(0) @binding(1) var<uniform> ssao: Ssao;
@group(0) @binding(2) var depth_tex: texture_depth_2d;
@group(0) @binding(3) var normal_tex: texture_2d<f32>;

const PI: f32 = 3.14159265;
const GOLDEN_ANGLE: f32 = 2.39996323;  // pi (3 - sqrt(5)): the Fibonacci spiral's turn
const BEHIND_EPS: f32 = 1e-4;  // relative depth a point must lie behind a surface by

// View-space position of the surface at pixel coordinates `px` (pixels, y down; a pixel's
// centre at +0.5) with reverse-Z depth `d`, through the (jittered) projection the frame drew.
fn view_position(px: vec2f, d: f32) -> vec3f {
    let ndc = vec2f(px.x * view.size.z * 2.0 - 1.0, 1.0 - px.y * view.size.w * 2.0);
    let h = view.inv_proj * vec4f(ndc, d, 1.0);
    return h.xyz / h.w;
}

// Pixel coordinates (xy) of the view-space point `p`, and its clip w (z: <= 0 behind the eye).
fn project(p: vec3f) -> vec3f {
    let c = view.proj * vec4f(p, 1.0);
    let ndc = c.xy / c.w;
    return vec3f((0.5 + 0.5 * ndc.x) * view.size.x, (0.5 - 0.5 * ndc.y) * view.size.y, c.w);
}

// Distance in front of the eye (-z, view space) of reverse-Z depth `d` > 0 (a perspective's
// depth rows of inv_proj do not depend on x and y).
fn linear_depth(d: f32) -> f32 {
    let h = view.inv_proj * vec4f(0.0, 0.0, d, 1.0);
    return -h.z / h.w;
}

// Distance in front of the eye of the depth buffer's surface at texel `t` (clamped to the
// edges); the sky (depth 0) is infinitely far.
fn texel_depth(t: vec2i) -> f32 {
    let d = textureLoad(depth_tex, clamp(t, vec2i(0), vec2i(textureDimensions(depth_tex)) - 1), 0);
    return select(1e30, linear_depth(d), d > 0.0);
}

// How much the surface's distance may change within half a texel of `t`'s centre: half its
// change to the nearer neighbour along each axis (the neighbour on the same surface, at a
// silhouette); off the edge, the other side's.
fn depth_slope(t: vec2i, z: f32) -> f32 {
    let last = vec2i(textureDimensions(depth_tex)) - 1;
    var slope = 0.0;
    for (var axis = 0; axis < 2; axis++) {
        let e = select(vec2i(0, 1), vec2i(1, 0), axis == 0);
        let a = select(1e30, abs(texel_depth(t + e) - z), all(t + e <= last));
        let b = select(1e30, abs(z - texel_depth(t - e)), all(t - e >= vec2i(0)));
        slope += 0.5 * min(a, b);
    }
    return slope;
}

// Whether the view-space point `q` lies behind the depth buffer's surface: 1 yes, 0 no, -1
// off screen or behind the eye (nothing known there). The buffer holds a surface's distance z
// at each texel's centre only: within the texel it may differ by up to b = depth_slope, so q
// is behind it when it lies farther than z + b, and by at most the thickness T past that.
fn occluded(q: vec3f) -> f32 {
    let s = project(q);
    if (s.z <= 0.0 || any(s.xy < vec2f(0.0)) || any(s.xy >= view.size.xy)) {
        return -1.0;
    }
    let t = vec2i(floor(s.xy));
    let z = texel_depth(t);
    if (z >= 1e30) {
        return 0.0;  // the sky
    }
    let behind = -q.z - z - depth_slope(t, z) - BEHIND_EPS * -q.z;
    return select(0.0, 1.0, behind > 0.0 && behind <= ssao.thickness);
}

// An orthonormal basis (tangent, bitangent, n) around unit `n` (Duff et al. 2017, "Building
// an Orthonormal Basis, Revisited", JCGT 6(1)), turned by `angle` radians about `n`.
fn tangent_basis(n: vec3f, angle: f32) -> mat3x3f {
    let s = select(-1.0, 1.0, n.z >= 0.0);
    let a = -1.0 / (s + n.z);
    let b = n.x * n.y * a;
    let t = vec3f(1.0 + s * n.x * n.x * a, s * b, -s * n.x);
    let bt = vec3f(b, s + n.y * n.y * a, -n.y);
    let c = cos(angle);
    let si = sin(angle);
    return mat3x3f(c * t + si * bt, c * bt - si * t, n);
}

// Direction `i` of `count` cosine-weighted directions around +z: a Fibonacci spiral on the
// unit disk lifted to the hemisphere (Malley's method).
fn cosine_direction(i: u32, count: u32) -> vec3f {
    let u = (f32(i) + 0.5) / f32(count);
    let r = sqrt(u);
    let phi = f32(i) * GOLDEN_ANGLE;
    return vec3f(r * cos(phi), r * sin(phi), sqrt(1.0 - u));
}

// Two values in (0, 1) for pixel `p` from the 4x4 Bayer matrix: every 4x4 block of pixels
// holds each of the 16 values once, so the denoise's 4x4-wide footprint averages them out.
fn noise(p: vec2u) -> vec2f {
    let y = p.y & 3u;
    let a = (p.x & 3u) ^ y;
    let b = ((a & 1u) << 3u) | ((y & 1u) << 2u) | (a & 2u) | ((y & 2u) >> 1u);
    return (vec2f(f32(b), f32((b * 5u + 3u) & 15u)) + 0.5) / 16.0;
}
