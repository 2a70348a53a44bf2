// Ambient: the standard frame's compose of the ambient light. While a pass reads
// frame.ambient, the Main passes write the ambient (indirect) light there instead of into the
// colour; passes between them and this one may modulate it (SSAO multiplies it); this adds
// what is left to the colour (additive blending), once per pixel.
// #include "screen_common.wgsl"

@group(0) @binding(1) var ambient: texture_2d<f32>;

@fragment
fn fs_ambient(@builtin(position) p: vec4f) -> @location(0) vec4f {
    return vec4f(textureLoad(ambient, vec2i(p.xy), 0).rgb, 0.0);
}
