// SSAO.Apply: the AO (ssao.ao) raised to the intensity, multiplied into frame.ambient by the
// pass's MULTIPLY blend, so it darkens the ambient (indirect) light and nothing else.
// #include "s04_ssao_common.wgsl"

@group(0) @binding(4) var ao_tex: texture_2d<f32>;

@fragment
fn fs_main(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let ao = clamp(textureLoad(ao_tex, vec2i(frag.xy), 0).r, 1e-4, 1.0);
    return vec4f(vec3f(pow(ao, ssao.intensity)), 1.0);
}
