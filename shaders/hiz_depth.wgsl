// Hi-Z: the pyramid's level 0 from the reverse-Z depth buffer (kernels in hiz.wgsl).
// #include "hiz.wgsl"

@group(0) @binding(0) var src_depth: texture_depth_2d;

// Level-0 texel p of a (pw, ph) level: min over every depth pixel its footprint touches.
// (A fixed clamped 3x3 of loads measured slower on the H200, 0.045 vs 0.033 ms at 1080p.)
fn source_min(p: vec2u, dst_size: vec2u) -> f32 {
    let src_size = textureDimensions(src_depth);
    // Footprint [x*W/pw, (x+1)*W/pw) in pixels: first touched pixel floor, last ceil - 1.
    let lo = (p * src_size) / dst_size;
    let hi = min(((p + 1u) * src_size + dst_size - 1u) / dst_size, src_size);
    var m = BIG;
    for (var y = lo.y; y < hi.y; y++) {
        for (var x = lo.x; x < hi.x; x++) {
            m = min(m, textureLoad(src_depth, vec2u(x, y), 0));
        }
    }
    return m;
}

@compute @workgroup_size(16, 16)
fn spd(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
    spd_tile(wg.xy, lid.xy);
}

@compute @workgroup_size(8, 8)
fn per_level(@builtin(global_invocation_id) gid: vec3u) {
    per_level_texel(gid.xy);
}
