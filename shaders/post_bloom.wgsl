// Post.Bloom: a downsample/upsample chain (Jimenez 2014, "Next Generation Post Processing in
// Call of Duty: Advanced Warfare"): each downsample is a 13-tap filter of bilinear fetches
// whose weights sum to 1, each upsample a 3x3 tent (weights sum to 1) mixed with the level
// below it. Every step is a weighted average, so the chain keeps the image's mean (its
// energy) and Post's mix(colour, bloom, strength) keeps it too. No threshold: energy-
// conserving bloom spreads all light a little rather than adding light to bright pixels.

const UPSAMPLE_MIX: f32 = 0.6;  // weight of the wider (coarser) level in each upsample

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var linear_clamp: sampler;
@group(0) @binding(2) var dst: texture_storage_2d<rgba16float, write>;
@group(0) @binding(3) var base: texture_2d<f32>;  // upsample: this level of the down chain

fn tap(uv: vec2f, texel: vec2f, dx: f32, dy: f32) -> vec3f {
    return textureSampleLevel(src, linear_clamp, uv + vec2f(dx, dy) * texel, 0.0).rgb;
}

@compute @workgroup_size(8, 8)
fn downsample(@builtin(global_invocation_id) gid: vec3u) {
    let size = textureDimensions(dst);
    if (any(gid.xy >= size)) {
        return;
    }
    let uv = (vec2f(gid.xy) + 0.5) / vec2f(size);
    let t = 1.0 / vec2f(textureDimensions(src));
    let a = tap(uv, t, -2.0, -2.0);
    let b = tap(uv, t, 0.0, -2.0);
    let c = tap(uv, t, 2.0, -2.0);
    let d = tap(uv, t, -1.0, -1.0);
    let e = tap(uv, t, 1.0, -1.0);
    let f = tap(uv, t, -2.0, 0.0);
    let g = tap(uv, t, 0.0, 0.0);
    let h = tap(uv, t, 2.0, 0.0);
    let i = tap(uv, t, -1.0, 1.0);
    let j = tap(uv, t, 1.0, 1.0);
    let k = tap(uv, t, -2.0, 2.0);
    let l = tap(uv, t, 0.0, 2.0);
    let m = tap(uv, t, 2.0, 2.0);
    // centre box 0.5; four corner boxes 0.125 each (each box: 4 taps averaged)
    var o = (d + e + i + j) * (0.5 / 4.0);
    o += (a + b + f + g) * (0.125 / 4.0);
    o += (b + c + g + h) * (0.125 / 4.0);
    o += (f + g + k + l) * (0.125 / 4.0);
    o += (g + h + l + m) * (0.125 / 4.0);
    textureStore(dst, gid.xy, vec4f(o, 1.0));
}

@compute @workgroup_size(8, 8)
fn upsample(@builtin(global_invocation_id) gid: vec3u) {
    let size = textureDimensions(dst);
    if (any(gid.xy >= size)) {
        return;
    }
    let uv = (vec2f(gid.xy) + 0.5) / vec2f(size);
    let t = 1.0 / vec2f(textureDimensions(src));
    var o = tap(uv, t, 0.0, 0.0) * 4.0;
    o += (tap(uv, t, -1.0, 0.0) + tap(uv, t, 1.0, 0.0) + tap(uv, t, 0.0, -1.0) + tap(uv, t, 0.0, 1.0)) * 2.0;
    o += tap(uv, t, -1.0, -1.0) + tap(uv, t, 1.0, -1.0) + tap(uv, t, -1.0, 1.0) + tap(uv, t, 1.0, 1.0);
    let below = textureLoad(base, gid.xy, 0).rgb;
    textureStore(dst, gid.xy, vec4f(mix(below, o / 16.0, UPSAMPLE_MIX), 1.0));
}
