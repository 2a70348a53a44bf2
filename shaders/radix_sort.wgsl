// LSD radix sort of (key, value) u32 pairs, 4 bits a pass, stable (engine/gpu_sort.py
// RadixSort). Each pass is four dispatches over tiles of TILE keys:
//   radix_count    each tile's digit histogram, written digit-major: hist[digit * tiles + tile]
//   radix_reduce   the sum of each CHUNK of histogram entries
//   radix_scan     the exclusive scan of the histograms (reduce-then-scan: Merrill & Grimshaw
//                  2011, "High Performance and Scalable Radix Sorting", Parallel Processing
//                  Letters 21(2)); entry (digit, tile) is then where the tile's first key of
//                  that digit goes
//   radix_scatter  each tile ranks its keys by digit with a counting sort in workgroup memory
//                  (Satish, Harris & Garland 2009, "Designing Efficient Sorting Algorithms for
//                  Manycore GPUs", IPDPS: local ranking, then one write per key) and writes
//                  them to their places in the other buffer pair.
// Stable: a thread's keys are consecutive and ranked in order, threads in index order, so keys
// of one digit keep their order within a tile, and tiles keep theirs through the scan.

const WG: u32 = 128u;
const ITEMS: u32 = 8u;      // keys a thread
const TILE: u32 = 1024u;    // WG * ITEMS keys a workgroup
const RADIX: u32 = 16u;     // 4-bit digits
const CHUNK: u32 = 1024u;   // WG * ITEMS histogram entries a scan workgroup

struct Step {
    shift: u32,       // the digit's lowest bit
    tiles: u32,       // workgroups of radix_count and radix_scatter
    descending: u32,  // 1: largest key first (the digits are inverted)
    entries: u32,     // RADIX * tiles histogram entries
};

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
@group(0) @binding(2) var<storage, read> values_in: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(4) var<storage, read_write> values_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> hist: array<u32>;
@group(0) @binding(6) var<storage, read_write> partials: array<u32>;

var<workgroup> counts: array<atomic<u32>, RADIX>;
var<workgroup> sums: array<u32, WG>;
var<workgroup> offsets: array<u32, 2048>;  // RADIX * WG: [digit][thread] -> rank in the tile
var<workgroup> starts: array<u32, RADIX>;
var<workgroup> chunk_base: u32;

fn digit(key: u32) -> u32 {
    let d = (key >> step.shift) & (RADIX - 1u);
    return select(d, RADIX - 1u - d, step.descending == 1u);
}

// sums[] becomes its inclusive prefix sum (Hillis & Steele 1986).
fn scan_sums(lid: u32) {
    for (var d = 1u; d < WG; d = d << 1u) {
        var x = 0u;
        if (lid >= d) {
            x = sums[lid - d];
        }
        workgroupBarrier();
        sums[lid] += x;
        workgroupBarrier();
    }
}

@compute @workgroup_size(WG)
fn radix_count(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    if (lid < RADIX) {
        atomicStore(&counts[lid], 0u);
    }
    workgroupBarrier();
    let base = wid.x * TILE;
    for (var i = 0u; i < ITEMS; i++) {
        atomicAdd(&counts[digit(keys_in[base + i * WG + lid])], 1u);
    }
    workgroupBarrier();
    if (lid < RADIX) {
        hist[lid * step.tiles + wid.x] = atomicLoad(&counts[lid]);
    }
}

@compute @workgroup_size(WG)
fn radix_reduce(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    let first = wid.x * CHUNK + lid * ITEMS;
    var s = 0u;
    for (var i = 0u; i < ITEMS; i++) {
        if (first + i < step.entries) {
            s += hist[first + i];
        }
    }
    sums[lid] = s;
    workgroupBarrier();
    scan_sums(lid);
    if (lid == WG - 1u) {
        partials[wid.x] = sums[lid];
    }
}

@compute @workgroup_size(WG)
fn radix_scan(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        var s = 0u;
        for (var c = 0u; c < wid.x; c++) {
            s += partials[c];
        }
        chunk_base = s;
    }
    let first = wid.x * CHUNK + lid * ITEMS;
    var mine: array<u32, ITEMS>;
    var run = 0u;
    for (var i = 0u; i < ITEMS; i++) {
        mine[i] = run;
        if (first + i < step.entries) {
            run += hist[first + i];
        }
    }
    sums[lid] = run;
    workgroupBarrier();
    scan_sums(lid);
    let before = chunk_base + sums[lid] - run;
    for (var i = 0u; i < ITEMS; i++) {
        if (first + i < step.entries) {
            hist[first + i] = before + mine[i];
        }
    }
}

@compute @workgroup_size(WG)
fn radix_scatter(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
    let base = wid.x * TILE + lid * ITEMS;  // this thread's run of consecutive keys
    var k: array<u32, ITEMS>;
    var d: array<u32, ITEMS>;
    var c: array<u32, RADIX>;
    for (var i = 0u; i < ITEMS; i++) {
        k[i] = keys_in[base + i];
        d[i] = digit(k[i]);
        c[d[i]] += 1u;
    }
    for (var r = 0u; r < RADIX; r++) {
        offsets[r * WG + lid] = c[r];
    }
    workgroupBarrier();
    // Exclusive scan of the digit-major [digit][thread] counts: each thread 16 entries in a
    // row, then the threads' totals across the workgroup.
    let first = lid * RADIX;
    var run = 0u;
    for (var j = 0u; j < RADIX; j++) {
        let x = offsets[first + j];
        offsets[first + j] = run;
        run += x;
    }
    sums[lid] = run;
    workgroupBarrier();
    scan_sums(lid);
    let before = sums[lid] - run;
    for (var j = 0u; j < RADIX; j++) {
        offsets[first + j] += before;
    }
    workgroupBarrier();
    if (lid < RADIX) {
        starts[lid] = offsets[lid * WG];  // the tile's first key of digit lid, tile-sorted
    }
    workgroupBarrier();
    for (var i = 0u; i < ITEMS; i++) {
        let slot = d[i] * WG + lid;  // this thread's own entry of the digit: no other writes it
        let rank = offsets[slot];
        offsets[slot] = rank + 1u;
        let dst = hist[d[i] * step.tiles + wid.x] + rank - starts[d[i]];
        keys_out[dst] = k[i];
        values_out[dst] = values_in[base + i];
    }
}
