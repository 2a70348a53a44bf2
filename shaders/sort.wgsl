// Bitonic sort of (key, value) u32 pairs (Batcher 1968, "Sorting networks and their
// applications"), engine/gpu_sort.py. Steps whose partners are in one block of BLOCK
// elements run in workgroup memory, a whole run of them per dispatch; the others one
// compare-exchange per thread per dispatch.

const WG: u32 = 256u;
const BLOCK: u32 = 512u;  // 2 * WG elements per workgroup

struct Step {
    k: u32,           // size of the bitonic sequences being merged
    j: u32,           // partner distance (global step) or first distance (local run)
    descending: u32,  // 1: largest key first
    pad: u32,
};

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> values: array<u32>;

var<workgroup> wk: array<u32, BLOCK>;
var<workgroup> wv: array<u32, BLOCK>;

// Whether the pair (a at i, b at its partner) is out of order in the block's direction.
fn out_of_order(i: u32, k: u32, a: u32, b: u32) -> bool {
    let up = ((i & k) == 0u) != (step.descending == 1u);
    return select((a < b), (a > b), up);
}

@compute @workgroup_size(WG)
fn sort_global(@builtin(global_invocation_id) gid: vec3u) {
    let t = gid.x;
    let j = step.j;
    let i = 2u * j * (t / j) + (t % j);
    let l = i + j;
    if (l >= arrayLength(&keys)) {
        return;
    }
    let a = keys[i];
    let b = keys[l];
    if (out_of_order(i, step.k, a, b)) {
        keys[i] = b;
        keys[l] = a;
        let v = values[i];
        values[i] = values[l];
        values[l] = v;
    }
}

fn local_steps(lid: u32, base: u32, k: u32, first_j: u32) {
    var j = first_j;
    loop {
        if (j == 0u) {
            break;
        }
        let i = 2u * j * (lid / j) + (lid % j);
        let l = i + j;
        let a = wk[i];
        let b = wk[l];
        if (out_of_order(base + i, k, a, b)) {
            wk[i] = b;
            wk[l] = a;
            let v = wv[i];
            wv[i] = wv[l];
            wv[l] = v;
        }
        workgroupBarrier();
        j = j >> 1u;
    }
}

fn load(lid: u32, base: u32) {
    wk[lid] = keys[base + lid];
    wv[lid] = values[base + lid];
    wk[lid + WG] = keys[base + lid + WG];
    wv[lid + WG] = values[base + lid + WG];
    workgroupBarrier();
}

fn store(lid: u32, base: u32) {
    keys[base + lid] = wk[lid];
    values[base + lid] = wv[lid];
    keys[base + lid + WG] = wk[lid + WG];
    values[base + lid + WG] = wv[lid + WG];
}

// Every step with k <= min(BLOCK, size): each block sorted (alternating directions).
@compute @workgroup_size(WG)
fn sort_local(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    let base = wid.x * BLOCK;
    load(lid, base);
    var k = 2u;
    loop {
        if (k > step.k) {
            break;
        }
        local_steps(lid, base, k, k >> 1u);
        k = k << 1u;
    }
    store(lid, base);
}

// The steps of merge k whose partner distance is below BLOCK.
@compute @workgroup_size(WG)
fn merge_local(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    let base = wid.x * BLOCK;
    load(lid, base);
    local_steps(lid, base, step.k, step.j);
    store(lid, base);
}
