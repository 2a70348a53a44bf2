// Cascaded sun shadows (engine/passes/shadow.py): the map array, the cascade of a receiver by
// its view depth with a blend band into the next, and 3x3 PCF of 2x2-filtered comparisons
// (a 4x4-texel tent), reverse-Z. Included by mesh.wgsl (sun_visibility). The numpy twin of
// the cascade choice is engine/passes/shadow.py cascade_weights (the debug view shows it).

// #include "cascade_pick.wgsl"

@group(3) @binding(0) var shadow_map: texture_depth_2d_array;
@group(3) @binding(1) var shadow_sampler: sampler_comparison;

// World point p in cascade c's shadow clip space (orthographic: w = 1). The translation is
// added last, on its own: a texel-snapped cascade's translation is a whole number of texels,
// exact in float32, so a moved cascade puts every caster and receiver exactly whole texels
// further (a matrix product could add it first, and round the rest differently each time).
fn cascade_clip(c: u32, p: vec3f) -> vec4f {
    let m = view.cascade_view_proj[c];
    return vec4f((m * vec4f(p, 0.0)).xyz + m[3].xyz, 1.0);
}

// Cascade c's visibility of the sun at `world` (pushed 1.5 of its texels along the normal
// `n`): lit where the receiver is at least as close to the sun as the stored caster depth;
// outside the cascade's box lit (nothing there was rendered into it).
fn cascade_visibility(world: vec3f, n: vec3f, c: u32) -> f32 {
    let p = cascade_clip(c, world + n * (1.5 * view.cascade_texel[c]));
    let uv = p.xy * vec2f(0.5, -0.5) + 0.5;
    if (any(uv < vec2f(0.0)) || any(uv > vec2f(1.0)) || p.z > 1.0 || p.z < 0.0) {
        return 1.0;
    }
    // 3x3 PCF: nine bilinear compare taps one texel apart weigh the 4x4 texels around the
    // receiver by (1 - f, 1, 1, f) per axis (f: its sub-texel position); the same weights
    // from four taps, each pair of texels one tap placed so its bilinear split is theirs
    // (the fractional-offset trick of Castano, "Shadow Mapping Summary", 2013): four
    // texture-unit operations in place of nine, the same filter up to the hardware's
    // sub-texel precision
    let texel = view.cascade_params.z;
    let tc = uv / texel - 0.5;  // texel-centre coordinates
    let i = floor(tc);
    let f = tc - i;
    let w0 = 2.0 - f;           // texels i-1, i: weights (1 - f, 1)
    let w1 = 1.0 + f;           // texels i+1, i+2: weights (1, f)
    let a = (i - 1.0 + 1.0 / w0 + 0.5) * texel;
    let b = (i + 1.0 + f / w1 + 0.5) * texel;
    let z = p.z + 2e-4;
    let layer = i32(c);
    let lit = w0.x * w0.y * textureSampleCompareLevel(shadow_map, shadow_sampler, a, layer, z)
        + w1.x * w0.y * textureSampleCompareLevel(shadow_map, shadow_sampler, vec2f(b.x, a.y), layer, z)
        + w0.x * w1.y * textureSampleCompareLevel(shadow_map, shadow_sampler, vec2f(a.x, b.y), layer, z)
        + w1.x * w1.y * textureSampleCompareLevel(shadow_map, shadow_sampler, b, layer, z);
    return lit / 9.0;
}

fn cascaded_sun_visibility(world: vec3f, n: vec3f) -> f32 {
    let pick = cascade_pick(dot(view.cascade_depth.xyz, world) + view.cascade_depth.w);
    let vis = cascade_visibility(world, n, pick.c);
    if (pick.next <= 0.0) {
        return vis;
    }
    return mix(vis, cascade_visibility(world, n, pick.c + 1u), pick.next);
}
