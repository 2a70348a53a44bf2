// The blurred picture back into the frame's HDR colour, which every variant shares: a
// fullscreen triangle, since frame.hdr is a render target without storage usage.
// #include "screen_common.wgsl"

@group(0) @binding(2) var blurred: texture_2d<f32>;

@fragment
fn fs_main(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return textureLoad(blurred, vec2i(frag.xy), 0);
}
