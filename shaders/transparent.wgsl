// Transparent.Sort (engine/passes/transparent.py): the BLEND instances Cull.Late left visible,
// ordered back to front by engine/gpu_sort.py, become one indexed indirect draw each.
// blend_keys: key = distance from the eye to the instance's bounding-sphere centre (float
// bits order like the floats: non-negative), 0 for culled ones and the padding (sorted last).
// blend_args: slot s draws the s-th farthest visible instance (instance_count 0 past them).
// #include "frame_common.wgsl"

struct Params {
    count: u32,           // BLEND instances K
    first_instance: u32,  // 1: args carry first_instance = slot (indirect-first-instance)
    pad0: u32,
    pad1: u32,
};

struct MeshInfo {
    first_batch: u32,
    lod_count: u32,
    remap_base: u32,
    capacity: u32,
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> bounds: array<vec4f>;
@group(0) @binding(3) var<storage, read> state: array<u32>;  // cull class | lod << 2
@group(0) @binding(4) var<storage, read> blend_rows: array<u32>;
@group(0) @binding(5) var<storage, read_write> keys: array<u32>;
@group(0) @binding(6) var<storage, read_write> values: array<u32>;
@group(0) @binding(7) var<storage, read> draw_ids: array<u32>;  // draw group per instance
@group(0) @binding(8) var<storage, read> meshes: array<MeshInfo>;
@group(0) @binding(9) var<storage, read> batch_geometry: array<vec4u>;  // count, first, base
@group(0) @binding(10) var<storage, read_write> args: array<u32>;
@group(0) @binding(11) var<storage, read_write> order: array<u32>;  // slot -> scene row

const CLASS_VISIBLE: u32 = 3u;

@compute @workgroup_size(64)
fn blend_keys(@builtin(global_invocation_id) gid: vec3u) {
    let k = gid.x;
    if (k >= arrayLength(&keys)) {
        return;
    }
    var key = 0u;
    var row = 0u;
    if (k < params.count) {
        row = blend_rows[k];
        if ((state[row] & 3u) == CLASS_VISIBLE) {
            key = max(bitcast<u32>(distance(bounds[row].xyz, view.eye.xyz)), 1u);
        }
    }
    keys[k] = key;
    values[k] = row;
}

@compute @workgroup_size(64)
fn blend_args(@builtin(global_invocation_id) gid: vec3u) {
    let s = gid.x;
    if (s >= params.count) {
        return;
    }
    let row = values[s];
    let batch = meshes[draw_ids[row]].first_batch + (state[row] >> 2u);
    let g = batch_geometry[batch];
    args[5u * s] = g.x;
    args[5u * s + 1u] = select(0u, 1u, keys[s] != 0u);
    args[5u * s + 2u] = g.y;
    args[5u * s + 3u] = g.z;
    args[5u * s + 4u] = select(0u, s, params.first_instance == 1u);
    order[s] = row;
}
