// Post.Exposure: the exposure that maps the histogram's mean log2 luminance to KEY,
// adapted from last frame's value (a history buffer) in EV: ev += (target - ev) * k with
// k = 1 - exp(-dt * speed). A fresh history (first frame, reset) takes the target at once.
// One workgroup of 64 threads, one per bin; no CPU readback.

const BINS: u32 = 64u;
const MIN_LOG2: f32 = -10.0;
const LOG2_RANGE: f32 = 16.0;

struct Params {
    dt: f32,        // seconds since the last frame
    speed: f32,     // adaptation rate, 1/s
    key: f32,       // the luminance the mean is mapped to (middle grey)
    fresh: f32,     // 1: the history is cleared (take the target)
    min_ev: f32,    // exposure clamp, log2
    max_ev: f32,
    pad0: f32,
    pad1: f32,
};

struct Exposure {
    exposure: f32,   // the multiplier Post applies
    goal: f32,       // this frame's target multiplier
    mean_log2: f32,  // mean log2 luminance of the counted pixels
    counted: f32,    // pixels outside bin 0
};

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> histogram: array<u32, 64>;
@group(0) @binding(2) var<storage, read> prev: Exposure;
@group(0) @binding(3) var<storage, read_write> result: Exposure;

var<workgroup> weighted: array<f32, 64>;
var<workgroup> counts: array<f32, 64>;

@compute @workgroup_size(64)
fn adapt(@builtin(local_invocation_index) lid: u32) {
    let n = f32(histogram[lid]);
    let centre = MIN_LOG2 + (f32(lid) - 0.5) * LOG2_RANGE / f32(BINS - 1u);
    counts[lid] = select(n, 0.0, lid == 0u);
    weighted[lid] = select(n * centre, 0.0, lid == 0u);
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        workgroupBarrier();
        if (lid < stride) {
            counts[lid] += counts[lid + stride];
            weighted[lid] += weighted[lid + stride];
        }
    }
    if (lid == 0u) {
        let counted = counts[0];
        let mean = select(log2(params.key), weighted[0] / counted, counted > 0.0);
        let target_ev = clamp(log2(params.key) - mean, params.min_ev, params.max_ev);
        var ev = target_ev;
        if (params.fresh == 0.0 && prev.exposure > 0.0) {
            let last = log2(prev.exposure);
            ev = last + (target_ev - last) * (1.0 - exp(-params.dt * params.speed));
        }
        result = Exposure(exp2(ev), exp2(target_ev), mean, counted);
    }
}
