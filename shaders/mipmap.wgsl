// One mip level from the one above: a fullscreen triangle whose fragments sample the source
// level at their centre with a linear filter: for power-of-two sizes exactly the mean of the
// 2x2 source texels. Through an -srgb view the texels are decoded before the mean and the
// result encoded after it (engine/materials/gpu.py MipGenerator).

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var src_sampler: sampler;

struct Out {
    @builtin(position) clip: vec4f,
    @location(0) uv: vec2f,
};

@vertex
fn vs_blit(@builtin(vertex_index) i: u32) -> Out {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return Out(vec4f(uv.x * 2.0 - 1.0, 1.0 - uv.y * 2.0, 0.0, 1.0), uv);
}

@fragment
fn fs_blit(in: Out) -> @location(0) vec4f {
    return textureSampleLevel(src, src_sampler, in.uv, 0.0);
}
