// Lights.Cluster (engine/passes/lights.py): assigns every light to the clusters (froxels) its
// bounding sphere touches, then sorts each cluster's list by light index. Numpy twin:
// engine/lights/reference.py assign_clusters.
//
// cs_assign, one thread per light, depth slice and tile row: the sphere (centre in view
// space, radius = range) is tested against each tile row's two bounding planes and each tile
// column's two (planes through the eye; conservative at a tile's corners, as tiled shading's
// per-tile frustum test is) and its view-depth range [d - r, d + r] picks the slices; each
// column of the thread's (slice, row) appends the light to its cluster: an atomic count, the
// index stored while the count is below CLUSTER_CAP (the rest are counted as dropped, never
// silently). The work is split that finely because each append waits for its atomic's
// result: a light around the camera touches every cluster, and one thread appending all 3,456
// took 0.85 ms on an H200, a thread per slice (144 appends) 0.086 ms; a thread per row makes
// at most CLUSTER_X appends.
// cs_finish, one workgroup per cluster: the list sorted by light index (rank sort in
// workgroup memory), so shading adds the lights in one order whatever order the atomics
// took; clusters at the cap and the largest demand counted.
// Counters are summed per workgroup, then one global atomicAdd per counter per workgroup.
// #include "lights_common.wgsl"

const L_TESTED: u32 = 0u;      // lights examined
const L_VISIBLE: u32 = 1u;     // lights touching at least one cluster
const L_PAIRS: u32 = 2u;       // light-cluster pairs stored
const L_DROPPED: u32 = 3u;     // light-cluster pairs past a cluster's cap (not stored)
const L_AT_CAP: u32 = 4u;      // clusters whose demand reached CLUSTER_CAP
const L_LARGEST: u32 = 5u;     // the largest cluster's demand (before the cap)
const L_EYE_INSIDE: u32 = 6u;  // lights whose sphere holds the camera
const COUNTERS: u32 = 7u;

@group(0) @binding(0) var<uniform> light_params: LightParams;
@group(0) @binding(1) var<storage, read> lights: array<Light>;
@group(0) @binding(2) var<storage, read_write> cluster_counts: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> cluster_lights: array<u32>;
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>, 7>;

var<workgroup> wg_counts: array<atomic<u32>, 7>;
var<workgroup> wg_list: array<u32, CLUSTER_CAP>;
var<workgroup> wg_n: u32;

fn count(c: u32, n: u32) {
    atomicAdd(&wg_counts[c], n);
}

// Bit t set: tile column t's slab between its two planes meets the sphere (p: view space).
fn column_mask(p: vec3f, r: f32) -> u32 {
    var mask = 0u;
    var left = dot(light_params.x_planes[0].xy, p.xz);
    for (var t = 0u; t < CLUSTER_X; t++) {
        let right = dot(light_params.x_planes[t + 1u].xy, p.xz);
        if (left > -r && right < r) {
            mask |= 1u << t;
        }
        left = right;
    }
    return mask;
}

// Bit j set: tile row j (0 at the top) meets the sphere.
fn row_mask(p: vec3f, r: f32) -> u32 {
    var mask = 0u;
    var upper = dot(light_params.y_planes[0].xy, p.yz);
    for (var j = 0u; j < CLUSTER_Y; j++) {
        let lower = dot(light_params.y_planes[j + 1u].xy, p.yz);
        if (upper < r && lower > -r) {
            mask |= 1u << j;
        }
        upper = lower;
    }
    return mask;
}

fn assign(i: u32, z: u32, y: u32) {
    let light = lights[i];
    let p = (light_params.view * vec4f(light.position, 1.0)).xyz;
    let d = -p.z;
    let r = light.range;
    if (z == 0u && y == 0u) {
        count(L_TESTED, 1u);
    }
    if (!(d + r > light_params.slices[0].x)) {  // wholly behind the near plane (or NaN)
        return;
    }
    let z0 = depth_slice(d - r);
    if (z < z0 || z > depth_slice(d + r)) {
        return;
    }
    let ys = row_mask(p, r);
    if ((ys & (1u << y)) == 0u) {
        return;
    }
    let xs = column_mask(p, r);
    if (xs == 0u) {
        return;
    }
    if (z == z0 && y == countTrailingZeros(ys)) {  // the light's first cluster row counts it
        count(L_VISIBLE, 1u);
        if (dot(p, p) < r * r) {
            count(L_EYE_INSIDE, 1u);
        }
    }
    var stored = 0u;
    var dropped = 0u;
    var cols = xs;
    while (cols != 0u) {
        let x = countTrailingZeros(cols);
        cols &= cols - 1u;
        let c = (z * CLUSTER_Y + y) * CLUSTER_X + x;
        let k = atomicAdd(&cluster_counts[c], 1u);
        if (k < CLUSTER_CAP) {
            cluster_lights[c * CLUSTER_CAP + k] = i;
            stored += 1u;
        } else {
            dropped += 1u;
        }
    }
    count(L_PAIRS, stored);
    count(L_DROPPED, dropped);
}

@compute @workgroup_size(64)
fn cs_assign(@builtin(global_invocation_id) gid: vec3u,
             @builtin(local_invocation_index) lid: u32) {
    if (lid < COUNTERS) {
        atomicStore(&wg_counts[lid], 0u);
    }
    workgroupBarrier();
    if (gid.x < light_params.modes.x) {
        assign(gid.x, gid.y, gid.z);  // dispatched (lights / 64, CLUSTER_Z, CLUSTER_Y)
    }
    workgroupBarrier();
    if (lid < COUNTERS) {
        let v = atomicLoad(&wg_counts[lid]);
        if (v != 0u) {
            atomicAdd(&counters[lid], v);
        }
    }
}

@compute @workgroup_size(64)
fn cs_finish(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    let c = wid.x;
    if (lid == 0u) {
        let demand = atomicLoad(&cluster_counts[c]);
        wg_n = demand;
        if (demand >= CLUSTER_CAP) {
            atomicAdd(&counters[L_AT_CAP], 1u);
        }
        // every cluster's workgroup at one address would queue there: only a new maximum
        // (as far as this workgroup can tell) is written
        if (demand > atomicLoad(&counters[L_LARGEST])) {
            atomicMax(&counters[L_LARGEST], demand);
        }
    }
    let n = min(workgroupUniformLoad(&wg_n), CLUSTER_CAP);
    if (n < 2u) {
        return;
    }
    let first = c * CLUSTER_CAP;
    for (var e = lid; e < n; e += 64u) {
        wg_list[e] = cluster_lights[first + e];
    }
    workgroupBarrier();
    // rank sort: a thread's (up to) four keys, lid + 64 q, each compared with every key in
    // one pass over the list (CLUSTER_CAP = 4 x 64); indices are unique, so each rank is taken
    // once. Missing keys are ~0u: they count nothing, and are not stored.
    let e = vec4u(lid, lid + 64u, lid + 128u, lid + 192u);
    var key = vec4u(~0u);
    for (var q = 0u; q < 4u; q++) {
        if (e[q] < n) {
            key[q] = wg_list[e[q]];
        }
    }
    var rank = vec4u(0u);
    for (var j = 0u; j < n; j++) {
        rank += select(vec4u(0u), vec4u(1u), vec4u(wg_list[j]) < key);
    }
    for (var q = 0u; q < 4u; q++) {
        if (e[q] < n) {
            cluster_lights[first + rank[q]] = key[q];
        }
    }
}
