// The wireframe view's args (shaders/view_wireframe.wgsl): the frame's indexed indirect
// args (5 u32) as non-indexed ones (4 u32): vertex count = index count, first vertex =
// first index, first instance kept.
@group(0) @binding(0) var<storage, read> args_in: array<u32>;
@group(0) @binding(1) var<storage, read_write> args_out: array<u32>;

@compute @workgroup_size(64)
fn convert(@builtin(global_invocation_id) g: vec3u) {
    let k = g.x;
    if (k >= arrayLength(&args_out) / 4u) {
        return;
    }
    args_out[k * 4u] = args_in[k * 5u];
    args_out[k * 4u + 1u] = args_in[k * 5u + 1u];
    args_out[k * 4u + 2u] = args_in[k * 5u + 2u];
    args_out[k * 4u + 3u] = args_in[k * 5u + 4u];
}

