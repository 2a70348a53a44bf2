// Materials (engine/materials/gpu.py): group 2 of the mesh pipelines. The glTF 2.0
// metallic-roughness material per instance from a storage table, its textures in texture
// arrays by (format, size class), sampled with explicit gradients through one of eight fixed
// samplers (filters), the wrap modes applied here.

struct Material {
    base_color: vec4f,       // linear RGBA factor
    emissive: vec4f,         // rgb: factor x KHR_materials_emissive_strength; w: world-UV scale
    params: vec4f,           // metallic, perceptual roughness, normal scale, occlusion strength
    alpha: vec4f,            // x: alpha cutoff (MASK)
    tex: array<vec4u, 2>,    // a packed reference per texture (5), then flags (alpha mode | 2-sided << 2)
    xform: array<vec4f, 10>, // per texture: KHR_texture_transform rows (a, b, tx, 0), (c, d, ty, 0)
};

struct Shading {
    sh: array<vec4f, 9>,     // the sky's radiance, SH bands 0-2 (engine/materials/ambient.py)
    params: vec4f,           // x: mip bias (log2); y: textures on (1) / off (0); z: material view
};

@group(2) @binding(0) var<storage, read> material_ids: array<u32>;
@group(2) @binding(1) var<storage, read> materials: array<Material>;
@group(2) @binding(2) var<uniform> shading: Shading;
@group(2) @binding(3) var srgb0: texture_2d_array<f32>;
@group(2) @binding(4) var srgb1: texture_2d_array<f32>;
@group(2) @binding(5) var srgb2: texture_2d_array<f32>;
@group(2) @binding(6) var srgb3: texture_2d_array<f32>;
@group(2) @binding(7) var srgb4: texture_2d_array<f32>;
@group(2) @binding(8) var srgb5: texture_2d_array<f32>;
@group(2) @binding(9) var lin0: texture_2d_array<f32>;
@group(2) @binding(10) var lin1: texture_2d_array<f32>;
@group(2) @binding(11) var lin2: texture_2d_array<f32>;
@group(2) @binding(12) var lin3: texture_2d_array<f32>;
@group(2) @binding(13) var lin4: texture_2d_array<f32>;
@group(2) @binding(14) var lin5: texture_2d_array<f32>;
@group(2) @binding(15) var samp0: sampler;
@group(2) @binding(16) var samp1: sampler;
@group(2) @binding(17) var samp2: sampler;
@group(2) @binding(18) var samp3: sampler;
@group(2) @binding(19) var samp4: sampler;
@group(2) @binding(20) var samp5: sampler;
@group(2) @binding(21) var samp6: sampler;
@group(2) @binding(22) var samp7: sampler;

const TEX_BASE: u32 = 0u;
const TEX_MR: u32 = 1u;
const TEX_NORMAL: u32 = 2u;
const TEX_OCCLUSION: u32 = 3u;
const TEX_EMISSIVE: u32 = 4u;
const ALPHA_OPAQUE: u32 = 0u;
const ALPHA_MASK: u32 = 1u;
const ALPHA_BLEND: u32 = 2u;

// Texture coordinates of both sets and their screen derivatives (taken in uniform control
// flow, before any branch: the fetches below may run in non-uniform control flow).
struct UvSet {
    uv0: vec2f,
    uv1: vec2f,
    dx0: vec2f,
    dy0: vec2f,
    dx1: vec2f,
    dy1: vec2f,
};

fn uv_set(uv0: vec2f, uv1: vec2f) -> UvSet {
    return UvSet(uv0, uv1, dpdx(uv0), dpdy(uv0), dpdx(uv1), dpdy(uv1));
}

fn material_flags(m: Material) -> u32 {
    return m.tex[1].y;
}

// World-space box projection (Lantern's own, for the procedural city): the dominant axis of
// the normal picks the plane; v runs down the world's +Y on walls, so images stand upright.
fn world_uv(p: vec3f, n: vec3f) -> vec2f {
    let a = abs(n);
    let floor_uv = vec2f(p.x, p.z);
    let wall_uv = select(vec2f(p.x * sign(n.z), -p.y), vec2f(-p.z * sign(n.x), -p.y), a.x >= a.z);
    return select(wall_uv, floor_uv, a.y >= a.x && a.y >= a.z);
}

// dP/du of world_uv on the face with normal n.
fn world_tangent(n: vec3f) -> vec3f {
    let a = abs(n);
    let wall = select(vec3f(sign(n.z), 0.0, 0.0), vec3f(0.0, 0.0, -sign(n.x)), a.x >= a.z);
    return select(wall, vec3f(1.0, 0.0, 0.0), a.y >= a.x && a.y >= a.z);
}

// glTF wrap modes on one coordinate: 0 REPEAT (the sampler repeats), 1 CLAMP_TO_EDGE,
// 2 MIRRORED_REPEAT; h is half a texel of the level sampled, so bilinear taps stay inside.
fn wrap(x: f32, mode: u32, h: f32) -> f32 {
    if (mode == 1u) {
        return clamp(x, h, 1.0 - h);
    }
    if (mode == 2u) {
        let t = fract(x * 0.5) * 2.0;
        return clamp(1.0 - abs(t - 1.0), h, 1.0 - h);
    }
    return x;
}

// One texel fetch: w is the packed reference (engine/materials/gpu.py pack_reference).
fn sample_array(t: texture_2d_array<f32>, w: u32, uv: vec2f, dx: vec2f, dy: vec2f) -> vec4f {
    var s = (w >> 19u) & 7u;
    var gx = dx;
    var gy = dy;
    var st = uv;
    // Mipmapped and REPEAT on both axes (the sampler repeats): the coordinates as they are.
    // Only a clamp or a mirror, or a texture without mips, needs the level sampled: its two
    // size queries go through the texture unit, which the samples themselves are bound by.
    if (((w >> 22u) & 31u) != 0u) {
        let size = vec2f(textureDimensions(t));
        let levels = f32(textureNumLevels(t));
        let lod = 0.5 * log2(max(max(dot(dx * size, dx * size), dot(dy * size, dy * size)),
                                 1e-20));
        var level = clamp(ceil(lod), 0.0, levels - 1.0);
        if (((w >> 22u) & 1u) == 1u) {
            // No mipmaps: the base level, with the min or mag filter by the footprint.
            let lin = select(s & 1u, (s >> 1u) & 1u, lod > 0.0);
            s = lin | (lin << 1u);
            gx = vec2f(0.0);
            gy = vec2f(0.0);
            level = 0.0;
        }
        let h = 0.5 * exp2(level) / size;
        st = vec2f(wrap(uv.x, (w >> 23u) & 3u, h.x), wrap(uv.y, (w >> 25u) & 3u, h.y));
    }
    let layer = i32(w & 0xffffu);
    switch s {
// #if SAMP0
        case 0u: { return textureSampleGrad(t, samp0, st, layer, gx, gy); }
// #endif
// #if SAMP1
        case 1u: { return textureSampleGrad(t, samp1, st, layer, gx, gy); }
// #endif
// #if SAMP2
        case 2u: { return textureSampleGrad(t, samp2, st, layer, gx, gy); }
// #endif
// #if SAMP3
        case 3u: { return textureSampleGrad(t, samp3, st, layer, gx, gy); }
// #endif
// #if SAMP4
        case 4u: { return textureSampleGrad(t, samp4, st, layer, gx, gy); }
// #endif
// #if SAMP5
        case 5u: { return textureSampleGrad(t, samp5, st, layer, gx, gy); }
// #endif
// #if SAMP6
        case 6u: { return textureSampleGrad(t, samp6, st, layer, gx, gy); }
// #endif
        default: { return textureSampleGrad(t, samp7, st, layer, gx, gy); }
    }
}

fn sample_srgb(slot: u32, w: u32, uv: vec2f, dx: vec2f, dy: vec2f) -> vec4f {
    switch slot {
// #if SRGB0
        case 0u: { return sample_array(srgb0, w, uv, dx, dy); }
// #endif
// #if SRGB1
        case 1u: { return sample_array(srgb1, w, uv, dx, dy); }
// #endif
// #if SRGB2
        case 2u: { return sample_array(srgb2, w, uv, dx, dy); }
// #endif
// #if SRGB3
        case 3u: { return sample_array(srgb3, w, uv, dx, dy); }
// #endif
// #if SRGB4
        case 4u: { return sample_array(srgb4, w, uv, dx, dy); }
// #endif
// #if SRGB5
        case 5u: { return sample_array(srgb5, w, uv, dx, dy); }
// #endif
        default: { return vec4f(1.0); }  // no array of the scene's
    }
}

fn sample_linear(slot: u32, w: u32, uv: vec2f, dx: vec2f, dy: vec2f) -> vec4f {
    switch slot {
// #if LIN0
        case 0u: { return sample_array(lin0, w, uv, dx, dy); }
// #endif
// #if LIN1
        case 1u: { return sample_array(lin1, w, uv, dx, dy); }
// #endif
// #if LIN2
        case 2u: { return sample_array(lin2, w, uv, dx, dy); }
// #endif
// #if LIN3
        case 3u: { return sample_array(lin3, w, uv, dx, dy); }
// #endif
// #if LIN4
        case 4u: { return sample_array(lin4, w, uv, dx, dy); }
// #endif
// #if LIN5
        case 5u: { return sample_array(lin5, w, uv, dx, dy); }
// #endif
        default: { return vec4f(1.0); }  // no array of the scene's
    }
}

// Texture k (TEX_*) of material m, white where it has none or textures are off.
fn fetch(m: Material, k: u32, uvs: UvSet) -> vec4f {
    let w = m.tex[k / 4u][k % 4u];
    if ((w >> 31u) == 0u || shading.params.y < 0.5) {
        return vec4f(1.0);
    }
    let second = ((w >> 27u) & 1u) == 1u;
    let uv = select(uvs.uv0, uvs.uv1, second);
    let bias = exp2(shading.params.x);
    let dx = select(uvs.dx0, uvs.dx1, second) * bias;
    let dy = select(uvs.dy0, uvs.dy1, second) * bias;
    let r0 = m.xform[2u * k];
    let r1 = m.xform[2u * k + 1u];
    let t = vec2f(dot(r0.xy, uv) + r0.z, dot(r1.xy, uv) + r1.z);
    let tdx = vec2f(dot(r0.xy, dx), dot(r1.xy, dx));
    let tdy = vec2f(dot(r0.xy, dy), dot(r1.xy, dy));
    let slot = (w >> 16u) & 7u;
    if (k == TEX_BASE || k == TEX_EMISSIVE) {
        return sample_srgb(slot, w, t, tdx, tdy);
    }
    return sample_linear(slot, w, t, tdx, tdy);
}

fn array_size(srgb: bool, slot: u32) -> vec2f {
    if (srgb) {
        switch slot {
        case 0u: { return vec2f(textureDimensions(srgb0)); }
        case 1u: { return vec2f(textureDimensions(srgb1)); }
        case 2u: { return vec2f(textureDimensions(srgb2)); }
        case 3u: { return vec2f(textureDimensions(srgb3)); }
        case 4u: { return vec2f(textureDimensions(srgb4)); }
        default: { return vec2f(textureDimensions(srgb5)); }
        }
    }
    switch slot {
        case 0u: { return vec2f(textureDimensions(lin0)); }
        case 1u: { return vec2f(textureDimensions(lin1)); }
        case 2u: { return vec2f(textureDimensions(lin2)); }
        case 3u: { return vec2f(textureDimensions(lin3)); }
        case 4u: { return vec2f(textureDimensions(lin4)); }
        default: { return vec2f(textureDimensions(lin5)); }
    }
}

// The mip level texture k is sampled at (its footprint's log2 in texels, bias included), or
// -1 where it has none (the material views' "mip").
fn sampled_level(m: Material, k: u32, uvs: UvSet) -> f32 {
    let w = m.tex[k / 4u][k % 4u];
    if ((w >> 31u) == 0u || shading.params.y < 0.5) {
        return -1.0;
    }
    if (((w >> 22u) & 1u) == 1u) {
        return 0.0;
    }
    let second = ((w >> 27u) & 1u) == 1u;
    let bias = exp2(shading.params.x);
    let r0 = m.xform[2u * k];
    let r1 = m.xform[2u * k + 1u];
    let dx0 = select(uvs.dx0, uvs.dx1, second) * bias;
    let dy0 = select(uvs.dy0, uvs.dy1, second) * bias;
    let size = array_size(k == TEX_BASE || k == TEX_EMISSIVE, (w >> 16u) & 7u);
    let dx = vec2f(dot(r0.xy, dx0), dot(r1.xy, dx0)) * size;
    let dy = vec2f(dot(r0.xy, dy0), dot(r1.xy, dy0)) * size;
    return max(0.5 * log2(max(max(dot(dx, dx), dot(dy, dy)), 1e-20)), 0.0);
}
