// Variant "hemisphere": normal-oriented hemisphere SSAO at full resolution (the kernel of
// points in the normal's hemisphere: Crytek's screen-space sphere turned into a hemisphere,
// as in StarCraft II, Filion and McNaughton, SIGGRAPH 2008). `samples` points along
// cosine-weighted directions at distances spread over (R / 2, R], the kernel turned about
// the normal by the pixel's noise; the AO is the fraction of points not occluded (the
// reference's test, `occluded`).
// #include "s04_ssao_common.wgsl"

@group(0) @binding(4) var dst: texture_storage_2d<r32float, write>;

@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    let p = vec2i(id.xy);
    let d = textureLoad(depth_tex, p, 0);
    if (d <= 0.0) {
        textureStore(dst, p, vec4f(1.0));
        return;
    }
    let pos = view_position(vec2f(p) + 0.5, d);
    let rnd = noise(id.xy);
    let basis = tangent_basis(oct_decode(textureLoad(normal_tex, p, 0).xy), 2.0 * PI * rnd.x);
    let count = u32(ssao.samples);
    var occ = 0.0;
    for (var i = 0u; i < count; i++) {
        let s = fract(f32(i) * 0.618034 + rnd.y);  // golden-ratio strata, shifted per pixel
        let t = ssao.radius * mix(0.5, 1.0, s);
        occ += max(occluded(pos + basis * cosine_direction(i, count) * t), 0.0);
    }
    textureStore(dst, p, vec4f(1.0 - occ / f32(count)));
}
