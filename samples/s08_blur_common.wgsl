// The Gaussian blur's shared part (samples/s08_blur.py): its parameters, the weight of a tap
// and a load clamped to the edge. Each variant's file includes it.

const MAX_RADIUS: i32 = 32;  // s08_blur.MAX_RADIUS: the tiled variant's apron is sized by it

struct Blur {
    radius: i32,  // taps -radius..radius along each axis
    pad0: i32,
    pad1: i32,
    pad2: i32,
    weights: array<vec4f, 9>,  // w[i] = weights[i / 4][i % 4] for i = 0..radius; sum w = 1
};  // 160 bytes
@group(0) @binding(1) var<uniform> blur: Blur;

// The normalised Gaussian weight of a tap `i` pixels from the centre.
fn weight(i: i32) -> f32 {
    let k = abs(i);
    return blur.weights[k / 4][k % 4];
}

// Texel `p` of `t`, clamped to the edge (the numpy reference pads with mode="edge").
fn load_clamped(t: texture_2d<f32>, p: vec2i) -> vec4f {
    let last = vec2i(textureDimensions(t)) - 1;
    return textureLoad(t, clamp(p, vec2i(0), last), 0);
}
