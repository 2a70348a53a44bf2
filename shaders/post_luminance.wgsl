// Post.Luminance: histogram of log2 luminance (Rec. 709 weights) of the HDR colour.
// Bin 0: luminance below 2^MIN_LOG2 (black, the clear colour's shadows); bins 1..63 split
// [MIN_LOG2, MIN_LOG2 + LOG2_RANGE) evenly. engine/passes/exposure.py has the numpy twin.
// Per-workgroup counts in workgroup memory, then one global atomicAdd per non-empty bin.

const BINS: u32 = 64u;
const MIN_LOG2: f32 = -10.0;
const LOG2_RANGE: f32 = 16.0;

@group(0) @binding(0) var hdr: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> histogram: array<atomic<u32>, 64>;

var<workgroup> local_bins: array<atomic<u32>, 64>;

fn bin_of(rgb: vec3f) -> u32 {
    let lum = dot(rgb, vec3f(0.2126, 0.7152, 0.0722));
    if (!(lum >= exp2(MIN_LOG2))) {  // also NaN
        return 0u;
    }
    let t = (log2(lum) - MIN_LOG2) / LOG2_RANGE;
    return 1u + min(u32(t * f32(BINS - 1u)), BINS - 2u);
}

// One workgroup of 64: zero the global bins (the dispatch before the histogram's).
@compute @workgroup_size(64)
fn clear_bins(@builtin(local_invocation_index) lid: u32) {
    atomicStore(&histogram[lid], 0u);
}

@compute @workgroup_size(16, 16)
fn histogram_bins(@builtin(global_invocation_id) gid: vec3u,
                  @builtin(local_invocation_index) lid: u32) {
    if (lid < BINS) {
        atomicStore(&local_bins[lid], 0u);
    }
    workgroupBarrier();
    let size = textureDimensions(hdr);
    if (all(gid.xy < size)) {
        atomicAdd(&local_bins[bin_of(textureLoad(hdr, gid.xy, 0).rgb)], 1u);
    }
    workgroupBarrier();
    if (lid < BINS) {
        let n = atomicLoad(&local_bins[lid]);
        if (n != 0u) {
            atomicAdd(&histogram[lid], n);
        }
    }
}
