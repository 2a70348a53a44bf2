// s07 (samples/s07_oit.py): OIT.Error, the error measurement (--oit-error): each pixel that
// has a transparent fragment compares frame.hdr after the variant's transparency with the
// exact reference (oit.reference, OIT.Reference.Resolve) by the relative error
//     e = max over r, g, b of |hdr - ref| / max(max over r, g, b of ref, 0.01)
// (radiance; 0.01 keeps near-black pixels from dividing by almost nothing), capped at 1.
// Summed per workgroup, then one atomic per counter per workgroup (engine/counters.py).
// #include "s07_oit_common.wgsl"

@group(0) @binding(0) var hdr: texture_2d<f32>;        // frame.hdr
@group(0) @binding(1) var reference: texture_2d<f32>;  // oit.reference; alpha 1: covered
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>, COUNTERS>;

var<workgroup> covered: atomic<u32>;
var<workgroup> total: atomic<u32>;
var<workgroup> largest: atomic<u32>;
var<workgroup> over: atomic<u32>;

fn max3(v: vec3f) -> f32 {
    return max(v.x, max(v.y, v.z));
}

@compute @workgroup_size(8, 8)
fn cs_error(@builtin(global_invocation_id) id: vec3u,
            @builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        atomicStore(&covered, 0u);
        atomicStore(&total, 0u);
        atomicStore(&largest, 0u);
        atomicStore(&over, 0u);
    }
    workgroupBarrier();
    if (all(id.xy < textureDimensions(hdr))) {
        let r = textureLoad(reference, id.xy, 0);
        if (r.a > 0.5) {
            let v = textureLoad(hdr, id.xy, 0).rgb;
            let e = min(max3(abs(v - r.rgb)) / max(max3(r.rgb), 0.01), 1.0);
            let milli = u32(round(e * 1000.0));
            atomicAdd(&covered, 1u);
            atomicAdd(&total, milli);
            atomicMax(&largest, milli);
            if (e > 0.01) {
                atomicAdd(&over, 1u);
            }
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        atomicAdd(&counters[C_COVERED], atomicLoad(&covered));
        atomicAdd(&counters[C_ERROR_SUM], atomicLoad(&total));
        atomicMax(&counters[C_ERROR_MAX], atomicLoad(&largest));
        atomicAdd(&counters[C_ERROR_OVER], atomicLoad(&over));
    }
}
