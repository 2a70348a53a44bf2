// s07 (samples/s07_oit.py): OIT.Resolve of the linked variant, and OIT.Reference.Resolve of
// the exact reference (REFERENCE defined): one pixel's list sorted by depth and composited.
//
// Each pixel walks its list (s07_oit.wgsl fs_linked) and keeps its LAYERS nearest
// fragments, sorted nearest first by insertion (a fragment past them is left out and counted
// as truncated). It composites them front to back with the "over" operator (Porter and Duff,
// "Compositing Digital Images", SIGGRAPH 1984): C += T c a, T *= 1 - a, which equals the back
// to front blend of the same sorted fragments. OIT.Resolve writes (C, T) blended into
// frame.hdr as C + T * hdr (blend one, src-alpha); the reference writes C + T * hdr into
// oit.reference (its alpha 1 where the pixel has a fragment) for OIT.Error to compare with.
// #include "screen_common.wgsl"

// #include "s07_oit_common.wgsl"

@group(0) @binding(2) var<storage, read> heads: array<u32>;   // oit.heads (oit.ref.heads)
@group(0) @binding(3) var<storage, read> nodes: array<Node>;  // oit.nodes (oit.ref.nodes)
// #if REFERENCE
@group(0) @binding(4) var background: texture_2d<f32>;        // frame.hdr before transparency
@group(0) @binding(5) var<storage, read_write> counters: array<atomic<u32>, COUNTERS>;
const SLOT_TRUNCATED: u32 = C_REF_TRUNCATED;
// #else
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>, COUNTERS>;
const SLOT_TRUNCATED: u32 = C_TRUNCATED;
// #endif

struct Composite {
    colour: vec3f,  // premultiplied radiance of the kept layers, C
    t: f32,         // their transmittance T (1: nothing in front of the background)
    n: u32,         // layers kept
};

fn composite(position: vec2f) -> Composite {
    var depth: array<f32, LAYERS>;
    var colour: array<vec2u, LAYERS>;
    var n = 0u;
    var left_out = 0u;
    var i = heads[pixel_slot(position, view.size.x)];
    let cap = arrayLength(&nodes);
    for (var steps = 0u; i != 0u && steps < cap; steps++) {  // bounded: never hangs the GPU
        let node = nodes[i - 1u];
        i = node.next;
        if (n == u32(LAYERS)) {
            left_out += 1u;
            if (node.depth <= depth[n - 1u]) {
                continue;  // farther than every kept layer: it is the one left out
            }
            n -= 1u;  // the farthest kept layer makes room
        }
        var j = n;
        while (j > 0u && depth[j - 1u] < node.depth) {
            depth[j] = depth[j - 1u];
            colour[j] = colour[j - 1u];
            j -= 1u;
        }
        depth[j] = node.depth;
        colour[j] = vec2u(node.rg, node.ba);
        n += 1u;
    }
    if (left_out > 0u) {
        atomicAdd(&counters[SLOT_TRUNCATED], left_out);
    }
    var c = vec3f(0.0);
    var t = 1.0;
    for (var k = 0u; k < n; k++) {
        let rg = unpack2x16float(colour[k].x);
        let ba = unpack2x16float(colour[k].y);
        c += t * vec3f(rg, ba.x);
        t *= 1.0 - ba.y;
    }
    return Composite(c, t, n);
}

@fragment
fn fs_resolve(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let r = composite(frag.xy);
    if (r.n == 0u) {
        discard;  // nothing in front of the background: leave it
    }
    return vec4f(r.colour, r.t);
}

// #if REFERENCE
@fragment
fn fs_reference(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let r = composite(frag.xy);
    let bg = textureLoad(background, vec2i(frag.xy), 0).rgb;
    return vec4f(r.colour + r.t * bg, select(0.0, 1.0, r.n > 0u));
}
// #endif
