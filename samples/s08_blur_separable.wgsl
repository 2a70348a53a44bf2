// Variant "separable": the Gaussian is a product of two 1D kernels, so blur the rows into an
// intermediate texture, then its columns: 2 (2r + 1) texture loads per pixel.
// #include "s08_blur_common.wgsl"

@group(0) @binding(2) var src: texture_2d<f32>;
@group(0) @binding(3) var dst: texture_storage_2d<rgba32float, write>;

fn blur_1d(p: vec2i, step: vec2i) -> vec4f {
    let r = blur.radius;
    var sum = vec4f(0.0);
    for (var k = -r; k <= r; k++) {
        sum += weight(k) * load_clamped(src, p + k * step);
    }
    return sum;
}

@compute @workgroup_size(8, 8)
fn cs_rows(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) { return; }
    textureStore(dst, id.xy, blur_1d(vec2i(id.xy), vec2i(1, 0)));
}

@compute @workgroup_size(8, 8)
fn cs_columns(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) { return; }
    textureStore(dst, id.xy, blur_1d(vec2i(id.xy), vec2i(0, 1)));
}
