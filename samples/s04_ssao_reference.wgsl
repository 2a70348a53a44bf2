// SSAO.Reference: the ambient visibility SSAO estimates, by brute force. For each pixel with
// geometry, DIRECTIONS cosine-weighted directions over the normal's hemisphere, each marched
// in STEPS equal steps to the radius R against the depth buffer (a step behind a surface by at
// most the thickness T blocks it); the AO is the fraction not blocked,
//     AO = 1/pi * integral over the hemisphere of V(w) (n . w) dw.
// Off screen the march stops with nothing known: the direction counts as open. No noise: the
// same directions at every pixel, so its numpy twin (tests/test_s04.py) agrees with it.
// #include "s04_ssao_common.wgsl"

@group(0) @binding(4) var dst: texture_storage_2d<r32float, write>;

const DIRECTIONS: u32 = 256u;  // s04_ssao.REFERENCE_DIRECTIONS
const STEPS: u32 = 32u;  // s04_ssao.REFERENCE_STEPS

@compute @workgroup_size(8, 8)
fn cs_main(@builtin(global_invocation_id) id: vec3u) {
    if (any(id.xy >= textureDimensions(dst))) {
        return;
    }
    let p = vec2i(id.xy);
    let d = textureLoad(depth_tex, p, 0);
    if (d <= 0.0) {
        textureStore(dst, p, vec4f(1.0));
        return;
    }
    let pos = view_position(vec2f(p) + 0.5, d);
    let basis = tangent_basis(oct_decode(textureLoad(normal_tex, p, 0).xy), 0.0);
    var open = 0u;
    for (var i = 0u; i < DIRECTIONS; i++) {
        let dir = basis * cosine_direction(i, DIRECTIONS);
        var blocked = false;
        for (var k = 1u; k <= STEPS; k++) {
            let o = occluded(pos + dir * (ssao.radius * f32(k) / f32(STEPS)));
            if (o != 0.0) {
                blocked = o > 0.0;
                break;
            }
        }
        open += select(1u, 0u, blocked);
    }
    textureStore(dst, p, vec4f(f32(open) / f32(DIRECTIONS)));
}
