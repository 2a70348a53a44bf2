// s07 (samples/s07_oit.py): the BLEND instances drawn the order-independent ways, in the pass
// OIT.Draw (and OIT.Reference). The vertex stage, the material and the lighting are the
// frame's own (mesh.wgsl: vs_main, surface, shade), so every variant shades the same
// fragments as the frame's sorted Transparent pass; only what happens to them differs.
//
//   fs_wboit   weighted blended OIT (McGuire and Bavoil, "Weighted Blended Order-Independent
//              Transparency", JCGT 2(2), 2013): into oit.accum (rgba16float, additive) the
//              premultiplied colour and alpha times a depth weight, into oit.reveal
//              (r16float, multiplied) the product of (1 - alpha); OIT.Resolve divides.
//   fs_linked  per-pixel linked lists (Yang, Hensley, Grun and Thibieroz, "Real-Time Concurrent
//              Linked List Construction on the GPU", EGSR 2010): each fragment takes a node of
//              the pool with one atomicAdd and links it in front of its pixel's list with one
//              atomicExchange on the pixel's head; OIT.Resolve sorts each list by depth.
//              With REFERENCE defined: the exact reference's pool, heads and counters.
// #include "mesh.wgsl"

// #include "s07_oit_common.wgsl"

// Group 1 after the Draw uniform (mesh_draw.wgsl's binding 0): the linked lists' buffers.
@group(1) @binding(1) var<storage, read_write> heads: array<atomic<u32>>;  // node + 1 per pixel
@group(1) @binding(2) var<storage, read_write> nodes: array<Node>;          // the pool
@group(1) @binding(3) var<storage, read_write> counters: array<atomic<u32>, COUNTERS>;
@group(1) @binding(4) var opaque_depth: texture_depth_2d;                    // frame.depth

// #if REFERENCE
const SLOT_FRAGMENTS: u32 = C_REF_FRAGMENTS;
const SLOT_DROPPED: u32 = C_REF_DROPPED;
// #else
const SLOT_FRAGMENTS: u32 = C_FRAGMENTS;
const SLOT_DROPPED: u32 = C_DROPPED;
// #endif

// The fragment's shaded radiance and alpha, or alpha < 0 for a face the frame's Transparent
// pass would not draw (a single-sided material's back face). Called first, in uniform control
// flow: surface() samples textures with implicit derivatives.
fn blend_fragment(in: VsOut, front: bool) -> vec4f {
    let s = surface(in, front);
    let two_sided = (material_flags(materials[material_ids[in.id]]) & 4u) != 0u;
    let colour = shade(in, s, light_params.modes.z);  // the lights as Transparent has them
    if (!front && !two_sided) {
        return vec4f(0.0, 0.0, 0.0, -1.0);
    }
    return vec4f(colour, clamp(s.base.a, 0.0, 1.0));
}

// McGuire and Bavoil 2013, equation (9): w(z, a) = a * clamp(0.03 / (1e-5 + (|z| / 200)^4),
// 1e-2, 3e3), z the view-space depth (metres here). It levels off towards 3e3 nearer than
// about 11 m and falls as z^-4 beyond (a tenth for 1.78x the depth): nearer layers dominate
// the average, the more the farther apart they are.
fn wboit_weight(z: f32, a: f32) -> f32 {
    let d = abs(z) / 200.0;
    return a * clamp(0.03 / (1e-5 + d * d * d * d), 1e-2, 3e3);
}

struct Accumulate {
    @location(0) accum: vec4f,   // oit.accum += (c a w, a w)
    @location(1) reveal: vec4f,  // oit.reveal *= 1 - a (blend: zero, one-minus-src)
};

@fragment
fn fs_wboit(in: VsOut, @builtin(front_facing) front: bool) -> Accumulate {
    let f = blend_fragment(in, front);
    if (f.a < 0.0) {
        discard;
    }
    let z = (view.view * vec4f(in.world, 1.0)).z;
    let w = wboit_weight(z, f.a);
    return Accumulate(vec4f(f.rgb * f.a, f.a) * w, vec4f(f.a));
}

@fragment
fn fs_linked(in: VsOut, @builtin(front_facing) front: bool) {
    let f = blend_fragment(in, front);
    // The opaque depth test by hand: a fragment shader that writes storage runs (and writes)
    // before a late depth test could reject it. Reverse-Z: in front when greater.
    let opaque = textureLoad(opaque_depth, vec2i(in.clip.xy), 0);
    if (f.a < 0.0 || in.clip.z <= opaque) {
        return;
    }
    let i = atomicAdd(&counters[SLOT_FRAGMENTS], 1u);
    if (i >= arrayLength(&nodes)) {
        atomicAdd(&counters[SLOT_DROPPED], 1u);  // counted, never silent: the pool is full
        return;
    }
    let next = atomicExchange(&heads[pixel_slot(in.clip.xy, view.size.x)], i + 1u);
    let c = f.rgb * f.a;
    nodes[i] = Node(pack2x16float(c.rg), pack2x16float(vec2f(c.b, f.a)), in.clip.z, next);
}
