// Variant "tiled": separable, each workgroup blurring a line of TILE pixels. It loads the
// TILE + 2r texels its line needs once into workgroup memory (the "apron" of r on each
// side), then every tap reads that copy: about 1 + 2r / TILE texture loads per pixel and
// direction. The row and column tiles of V. Podlozhnyuk, "Image Convolution with CUDA"
// (NVIDIA CUDA SDK, 2007).
// #include "s08_blur_common.wgsl"

const TILE: i32 = 128;  // = the workgroup size along the line (s08_blur.TILE)

@group(0) @binding(2) var src: texture_2d<f32>;
@group(0) @binding(3) var dst: texture_storage_2d<rgba32float, write>;

var<workgroup> line: array<vec4f, TILE + 2 * MAX_RADIUS>;

// The blurred texel `i` of the line starting at `start` going `step`; every invocation of
// the workgroup calls it (it holds a barrier), then stores only inside the texture.
fn blur_line(start: vec2i, step: vec2i, i: i32) -> vec4f {
    let r = min(blur.radius, MAX_RADIUS);
    for (var j = i; j < TILE + 2 * r; j += TILE) {
        line[j] = load_clamped(src, start + (j - r) * step);
    }
    workgroupBarrier();
    var sum = vec4f(0.0);
    for (var k = -r; k <= r; k++) {
        sum += weight(k) * line[i + r + k];
    }
    return sum;
}

@compute @workgroup_size(128, 1)
fn cs_rows(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_id) local: vec3u) {
    let start = vec2i(i32(group.x) * TILE, i32(group.y));
    let sum = blur_line(start, vec2i(1, 0), i32(local.x));
    let p = start + vec2i(i32(local.x), 0);
    if (all(p < vec2i(textureDimensions(dst)))) { textureStore(dst, p, sum); }
}

@compute @workgroup_size(1, 128)
fn cs_columns(@builtin(workgroup_id) group: vec3u, @builtin(local_invocation_id) local: vec3u) {
    let start = vec2i(i32(group.x), i32(group.y) * TILE);
    let sum = blur_line(start, vec2i(0, 1), i32(local.y));
    let p = start + vec2i(0, i32(local.y));
    if (all(p < vec2i(textureDimensions(dst)))) { textureStore(dst, p, sum); }
}
