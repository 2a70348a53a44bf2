// Variant "naive": the 2D kernel as written, (2r + 1)^2 texture loads per pixel.
// #include "s08_blur_common.wgsl"

@group(0) @binding(2) var src: texture_2d<f32>;
@group(0) @binding(3) var dst: texture_storage_2d<rgba32float, write>;

@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) { return; }
    let p = vec2i(id.xy);
    let r = blur.radius;
    var sum = vec4f(0.0);
    for (var dy = -r; dy <= r; dy++) {
        for (var dx = -r; dx <= r; dx++) {
            sum += weight(dx) * weight(dy) * load_clamped(src, p + vec2i(dx, dy));
        }
    }
    textureStore(dst, id.xy, sum);
}
