// Hi-Z: further levels from the pyramid level bound as src_level (kernels in hiz.wgsl).
// #include "hiz.wgsl"

@group(0) @binding(0) var src_level: texture_2d<f32>;

// Texel p of the level below src_level: clamped 2x2 min (clamping matters once an axis is 1).
fn source_min(p: vec2u, dst_size: vec2u) -> f32 {
    let hi = vec2i(textureDimensions(src_level)) - vec2i(1);
    let q = vec2i(p * 2u);
    let a = textureLoad(src_level, clamp(q, vec2i(0), hi), 0).r;
    let b = textureLoad(src_level, clamp(q + vec2i(1, 0), vec2i(0), hi), 0).r;
    let c = textureLoad(src_level, clamp(q + vec2i(0, 1), vec2i(0), hi), 0).r;
    let d = textureLoad(src_level, clamp(q + vec2i(1, 1), vec2i(0), hi), 0).r;
    return min(min(a, b), min(c, d));
}

@compute @workgroup_size(16, 16)
fn spd(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
    spd_tile(wg.xy, lid.xy);
}

@compute @workgroup_size(8, 8)
fn per_level(@builtin(global_invocation_id) gid: vec3u) {
    per_level_texel(gid.xy);
}
