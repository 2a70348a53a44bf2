// s07 (samples/s07_oit.py): OIT.Resolve of the weighted blended variant (McGuire and Bavoil,
// JCGT 2(2), 2013, section 4): the weighted average colour sum(c a w) / sum(a w) covers the
// background by 1 - revealage, revealage = prod(1 - a) being exact in any order. Written as
// (average, revealage) blended into frame.hdr with (one-minus-src-alpha, src-alpha):
// hdr = average * (1 - revealage) + hdr * revealage.
// #include "screen_common.wgsl"

@group(0) @binding(2) var accum: texture_2d<f32>;   // oit.accum: (sum c a w, sum a w)
@group(0) @binding(3) var reveal: texture_2d<f32>;  // oit.reveal: prod(1 - a) in .r

@fragment
fn fs_compose(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let p = vec2i(frag.xy);
    let revealage = textureLoad(reveal, p, 0).r;
    if (revealage >= 1.0) {
        discard;  // no transparent fragment here
    }
    let a = textureLoad(accum, p, 0);
    // the paper's clamp keeps a float16 sum that overflowed (inf) or underflowed finite
    return vec4f(a.rgb / clamp(a.a, 1e-4, 5e4), revealage);
}
