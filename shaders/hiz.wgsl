// Depth pyramid (Hi-Z) for reverse-Z depth: every texel keeps the MINIMUM (farthest) depth of
// everything it covers, so a test against it is conservative.
// Level 0 is the power of two strictly below the output size; each of its texels covers
// W/pw x H/ph (1..2) output pixels and takes the min over every pixel its footprint touches
// (NPOT edges: up to 3x3). Higher levels halve exactly, reading 2x2 with clamped coordinates.

@group(0) @binding(0) var src_depth: texture_depth_2d;
@group(0) @binding(1) var dst0: texture_storage_2d<r32float, write>;

@compute @workgroup_size(8, 8)
fn level0(@builtin(global_invocation_id) gid: vec3u) {
    let dst_size = textureDimensions(dst0);
    if (any(gid.xy >= dst_size)) {
        return;
    }
    let src_size = textureDimensions(src_depth);
    // Footprint [x*W/pw, (x+1)*W/pw) in pixels: first touched pixel floor, last ceil - 1.
    let lo = (gid.xy * src_size) / dst_size;
    let hi = min(((gid.xy + 1u) * src_size + dst_size - 1u) / dst_size, src_size);
    var m = 1.0;
    for (var y = lo.y; y < hi.y; y++) {
        for (var x = lo.x; x < hi.x; x++) {
            m = min(m, textureLoad(src_depth, vec2u(x, y), 0));
        }
    }
    textureStore(dst0, gid.xy, vec4f(m, 0.0, 0.0, 0.0));
}

@group(0) @binding(0) var src_level: texture_2d<f32>;
@group(0) @binding(1) var dst_level: texture_storage_2d<r32float, write>;

@compute @workgroup_size(8, 8)
fn reduce(@builtin(global_invocation_id) gid: vec3u) {
    let dst_size = textureDimensions(dst_level);
    if (any(gid.xy >= dst_size)) {
        return;
    }
    let hi = vec2i(textureDimensions(src_level)) - vec2i(1);
    let p = vec2i(gid.xy * 2u);
    let a = textureLoad(src_level, clamp(p, vec2i(0), hi), 0).r;
    let b = textureLoad(src_level, clamp(p + vec2i(1, 0), vec2i(0), hi), 0).r;
    let c = textureLoad(src_level, clamp(p + vec2i(0, 1), vec2i(0), hi), 0).r;
    let d = textureLoad(src_level, clamp(p + vec2i(1, 1), vec2i(0), hi), 0).r;
    textureStore(dst_level, gid.xy, vec4f(min(min(a, b), min(c, d)), 0.0, 0.0, 0.0));
}
