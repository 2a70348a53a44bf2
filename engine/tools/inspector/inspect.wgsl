// The resource viewer's statistics of one channel of one mip/layer of a texture, reduced on
// the GPU (engine/tools/inspector/passes.py): `reduce` (one 16x16 workgroup per 64x64 texels, 4x4 per
// thread, so a 1080p target takes 510 workgroups rather than 8160) writes a partial per workgroup; `combine` (one workgroup) folds them into the header; `histogram`
// counts texels into BINS bins over the header's [lo, hi] (auto: the min..max just found).

const BINS: u32 = 64u;
const WG: u32 = 256u;
const TILE: u32 = 64u;  // texels per workgroup side (engine/tools/inspector/passes.py TILE)
const STEP: u32 = 16u;  // the workgroup's side: a thread's texels are STEP apart (coalesced)
const PER_THREAD: u32 = 16u;  // (TILE / STEP)^2

struct Params {
    channel: u32,     // 0..3
    auto_range: u32,  // 1: histogram over min..max, 0: over lo..hi
    partials: u32,    // workgroups of `reduce`
    probe_on: u32,    // 1: copy texel probe (the value under the cursor) into the result
    lo: f32,
    hi: f32,
    probe: vec2u,
};

struct Partial {
    lo: f32,
    hi: f32,
    sum: f32,
    finite: u32,
    nan: u32,
    inf: u32,
    pad0: u32,
    pad1: u32,
};

struct Result {
    lo: f32,         // min of the finite values (+inf when none)
    hi: f32,         // max of the finite values (-inf when none)
    mean: f32,       // of the finite values
    finite: u32,
    nan: u32,
    inf: u32,
    hist_lo: f32,    // the histogram's range
    hist_hi: f32,
    bins: array<atomic<u32>, 64>,
    probe: vec4f,    // the texel at params.probe (any format the shader reads, depth too)
};

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> partials: array<Partial>;
@group(0) @binding(3) var<storage, read_write> result: Result;

var<workgroup> w_lo: array<f32, 256>;
var<workgroup> w_hi: array<f32, 256>;
var<workgroup> w_sum: array<f32, 256>;
var<workgroup> w_n: array<vec3u, 256>;  // finite, nan, inf
var<workgroup> w_bins: array<atomic<u32>, 64>;

const BIG: f32 = 3.0e38;

fn classify(v: f32) -> u32 {  // 0 finite, 1 NaN, 2 Inf (from the bits: no fast-math folding)
    let bits = bitcast<u32>(v);
    if ((bits & 0x7f800000u) != 0x7f800000u) {
        return 0u;
    }
    return select(2u, 1u, (bits & 0x007fffffu) != 0u);
}

struct Texel {
    v: f32,
    inside: bool,  // within the texture (the last row and column of workgroups overhang)
};

// Texel k (0..PER_THREAD) of thread l of workgroup wg: 4x4 texels STEP apart in its tile.
fn tile_texel(wg: vec2u, l: vec2u, k: u32) -> Texel {
    let t = wg * TILE + l + vec2u(k % 4u, k / 4u) * STEP;
    if (any(t >= textureDimensions(src))) {
        return Texel(0.0, false);
    }
    return Texel(textureLoad(src, t, 0)[params.channel], true);
}

fn fold(i: u32, j: u32) {
    w_lo[i] = min(w_lo[i], w_lo[j]);
    w_hi[i] = max(w_hi[i], w_hi[j]);
    w_sum[i] = w_sum[i] + w_sum[j];
    w_n[i] = w_n[i] + w_n[j];
}

fn tree(li: u32) {
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (li < s) {
            fold(li, li + s);
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(16, 16)
fn reduce(@builtin(local_invocation_id) l: vec3u, @builtin(local_invocation_index) li: u32,
          @builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u) {
    var lo = BIG;
    var hi = -BIG;
    var sum = 0.0;
    var n = vec3u(0u);  // finite, nan, inf
    for (var k = 0u; k < PER_THREAD; k++) {
        let t = tile_texel(wg.xy, l.xy, k);
        let c = classify(t.v);
        if (t.inside && c == 0u) {
            lo = min(lo, t.v);
            hi = max(hi, t.v);
            sum += t.v;
        }
        n += select(vec3u(0u), vec3u(u32(c == 0u), u32(c == 1u), u32(c == 2u)), t.inside);
    }
    w_lo[li] = lo;
    w_hi[li] = hi;
    w_sum[li] = sum;
    w_n[li] = n;
    workgroupBarrier();
    tree(li);
    if (li == 0u) {
        let k = wg.y * nwg.x + wg.x;
        partials[k] = Partial(w_lo[0], w_hi[0], w_sum[0], w_n[0].x, w_n[0].y, w_n[0].z, 0u, 0u);
    }
}

@compute @workgroup_size(256)
fn combine(@builtin(local_invocation_index) li: u32) {
    w_lo[li] = BIG;
    w_hi[li] = -BIG;
    w_sum[li] = 0.0;
    w_n[li] = vec3u(0u);
    for (var k = li; k < params.partials; k += WG) {
        let p = partials[k];
        w_lo[li] = min(w_lo[li], p.lo);
        w_hi[li] = max(w_hi[li], p.hi);
        w_sum[li] += p.sum;
        w_n[li] += vec3u(p.finite, p.nan, p.inf);
    }
    workgroupBarrier();
    tree(li);
    if (li < BINS) {
        atomicStore(&result.bins[li], 0u);
    }
    if (li == 0u) {
        let n = w_n[0];
        result.lo = w_lo[0];
        result.hi = w_hi[0];
        result.mean = select(0.0, w_sum[0] / f32(max(n.x, 1u)), n.x > 0u);
        result.finite = n.x;
        result.nan = n.y;
        result.inf = n.z;
        result.hist_lo = select(params.lo, w_lo[0], params.auto_range == 1u);
        result.hist_hi = select(params.hi, w_hi[0], params.auto_range == 1u);
        if (params.probe_on == 1u) {
            result.probe = textureLoad(src, params.probe, 0);
        }
    }
}

// Bin of v over [lo, hi]: floor((v - lo) / (hi - lo) * BINS), the top edge in the last bin;
// values outside the range (and NaN/Inf) are not counted.
@compute @workgroup_size(16, 16)
fn histogram(@builtin(local_invocation_id) l: vec3u, @builtin(local_invocation_index) li: u32,
             @builtin(workgroup_id) wg: vec3u) {
    if (li < BINS) {
        atomicStore(&w_bins[li], 0u);
    }
    workgroupBarrier();
    let lo = result.hist_lo;
    let hi = result.hist_hi;
    for (var k = 0u; k < PER_THREAD; k++) {
        let t = tile_texel(wg.xy, l.xy, k);
        if (t.inside && classify(t.v) == 0u && t.v >= lo && t.v <= hi) {
            let b = min(u32(bin_t(t.v, lo, hi) * f32(BINS)), BINS - 1u);
            atomicAdd(&w_bins[b], 1u);
        }
    }
    workgroupBarrier();
    if (li < BINS) {
        let n = atomicLoad(&w_bins[li]);
        if (n > 0u) {
            atomicAdd(&result.bins[li], n);
        }
    }
}

// (v - lo) / (hi - lo), 0 for an empty range: the reference's float32 arithmetic
fn bin_t(v: f32, lo: f32, hi: f32) -> f32 {
    return select(0.0, (v - lo) / (hi - lo), hi > lo);
}
