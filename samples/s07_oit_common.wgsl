// s07 (samples/s07_oit.py): what the per-pixel linked lists and the counter block share.
//
// The counter block "oit" (engine/counters.py names it from these constants): one
// array<atomic<u32>, COUNTERS>, cleared by OIT.Reset every frame. Zero where the frame did
// not run the pass that counts it (the lists: the linked variant; ref_* and error_*: the
// error measurement, --oit-error).
const C_FRAGMENTS: u32 = 0u;      // transparent fragments offered to the linked variant's pool
const C_DROPPED: u32 = 1u;        // ... that found the pool full: missing from the picture
const C_TRUNCATED: u32 = 2u;      // fragments past a pixel's LAYERS nearest, left out by OIT.Resolve
const C_REF_FRAGMENTS: u32 = 3u;  // the same three for the exact reference's lists
const C_REF_DROPPED: u32 = 4u;
const C_REF_TRUNCATED: u32 = 5u;
const C_COVERED: u32 = 6u;        // pixels with at least one transparent fragment (reference)
const C_ERROR_SUM: u32 = 7u;      // sum over them of the relative error, in 1/1000 (capped at 1)
const C_ERROR_MAX: u32 = 8u;      // the largest relative error, in 1/1000 (capped at 1000)
const C_ERROR_OVER: u32 = 9u;     // covered pixels whose relative error exceeds 1/100
const COUNTERS: u32 = 10u;

// One fragment of a pixel's list: premultiplied radiance and alpha (c * a, a) as two pairs of
// float16, its reverse-Z depth (1 near, 0 far) and the next node's index + 1 (0: the end).
// 16 bytes.
struct Node {
    rg: u32,
    ba: u32,
    depth: f32,
    next: u32,
};

// The pixel's slot in a heads buffer (one u32 per pixel of the output, row by row).
fn pixel_slot(position: vec2f, width: f32) -> u32 {
    let p = vec2u(position);
    return p.y * u32(width) + p.x;
}
