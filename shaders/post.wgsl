// Post: bloom mixed in, exposure, ACES filmic tone mapping (Narkowicz 2015 fit), written
// linear to an -srgb target (the target encodes). The colour (sky included: the Sky pass
// drew it) is the TAA-resolved image or the HDR target; the exposure the fixed knob
// (view.sky_horizon.w) or the auto-exposure buffer.
// #include "frame_common.wgsl"

struct Exposure {
    exposure: f32,
    goal: f32,
    mean_log2: f32,
    counted: f32,
};

struct PostParams {
    bloom_strength: f32,  // mix(colour, bloom, strength); 0: bloom off
    auto_exposure: f32,   // 1: exposure from the buffer, 0: the fixed knob
    pad0: f32,
    pad1: f32,
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var hdr: texture_2d<f32>;
@group(0) @binding(3) var bloom: texture_2d<f32>;
@group(0) @binding(4) var linear_clamp: sampler;
@group(0) @binding(5) var<storage, read> exposure: Exposure;
@group(0) @binding(6) var<uniform> params: PostParams;

@vertex
fn vs_fullscreen(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

fn aces_fitted(x: vec3f) -> vec3f {
    return clamp((x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14), vec3f(0.0), vec3f(1.0));
}

@fragment
fn fs_post(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let px = vec2i(frag.xy);
    let size = vec2f(textureDimensions(hdr));
    var color = textureLoad(hdr, px, 0).rgb;
    if (params.bloom_strength > 0.0) {
        let glow = textureSampleLevel(bloom, linear_clamp, frag.xy / size, 0.0).rgb;
        color = mix(color, glow, params.bloom_strength);
    }
    let e = select(view.sky_horizon.w, exposure.exposure, params.auto_exposure > 0.5);
    return vec4f(aces_fitted(color * e), 1.0);
}
