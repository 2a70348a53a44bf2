// Depth pyramid (Hi-Z) for reverse-Z depth: every texel keeps the MINIMUM (farthest) depth of
// everything it covers, so a test against it is conservative.
// Level 0 is the power of two strictly below the output size; each of its texels covers
// W/pw x H/ph (1..2) output pixels and takes the min over every pixel its footprint touches
// (NPOT edges: up to 3x3). Higher levels halve exactly, reading 2x2 with clamped coordinates.
//
// Single-pass downsampling in the manner of AMD FidelityFX SPD (Single Pass Downsampler):
// a 16x16 workgroup owns a 32x32 tile of its first level, writes it, and reduces it through
// workgroup memory into the next five levels (16x16 ... 1x1), so one dispatch writes six
// levels and only the dispatch boundary separates a level from the texture it is read from.
// Since every level is a power of two, level r of a dispatch is exactly the min over the
// (2^r)^2 first-level texels under it (clipped to the level), whatever the reduction order;
// texels outside the level enter as BIG, the identity of min. Result: bit-identical to the
// per-level build, ceil(levels / 6) dispatches (2 at 1080p and 4K).
//
// This file is included by hiz_depth.wgsl (first level from the depth buffer) and
// hiz_level.wgsl (from a level of the pyramid): each declares binding 0 and defines
// `source_min(p, dst_size)`, the value of texel p of the first level it writes, and the
// two entry points over the kernels below, which are written once for both.

const BIG: f32 = 3.4028235e38;
const TILE: u32 = 32u; // first-level texels per workgroup side
const LEVELS: u32 = 6u; // levels written per dispatch

@group(0) @binding(1) var dst0: texture_storage_2d<r32float, write>;
@group(0) @binding(2) var dst1: texture_storage_2d<r32float, write>;
@group(0) @binding(3) var dst2: texture_storage_2d<r32float, write>;
@group(0) @binding(4) var dst3: texture_storage_2d<r32float, write>;
@group(0) @binding(5) var dst4: texture_storage_2d<r32float, write>;
@group(0) @binding(6) var dst5: texture_storage_2d<r32float, write>;

// One level-1 value per thread, 16x16, row-major; reduced in place between barriers.
var<workgroup> red: array<f32, 256>;

fn store_level(r: u32, p: vec2u, v: f32) {
    let t = vec4f(v, 0.0, 0.0, 0.0);
    switch r {
        case 0u: { textureStore(dst0, p, t); }
        case 1u: { textureStore(dst1, p, t); }
        case 2u: { textureStore(dst2, p, t); }
        case 3u: { textureStore(dst3, p, t); }
        case 4u: { textureStore(dst4, p, t); }
        default: { textureStore(dst5, p, t); }
    }
}

// Store texel p of level r of this dispatch if that level exists and p lies inside it.
// size0: first-level size; count: levels this pyramid has from the first level down to 1x1.
fn store_if_inside(r: u32, p: vec2u, v: f32, size0: vec2u, count: u32) {
    if (r < count && all(p < max(size0 >> vec2u(r), vec2u(1u)))) {
        store_level(r, p, v);
    }
}

// Levels 1..5 of the tile: v is this thread's level-1 value (min of its 2x2 first-level texels).
fn reduce_tile(wg: vec2u, lid: vec2u, v: f32, size0: vec2u) {
    let count = 32u - countLeadingZeros(max(size0.x, size0.y));
    store_if_inside(1u, wg * (TILE >> 1u) + lid, v, size0, count);
    red[lid.y * 16u + lid.x] = v;
    for (var r = 2u; r < LEVELS; r++) {
        let side = TILE >> r; // this level's texels per tile side: 8, 4, 2, 1
        let busy = all(lid < vec2u(side));
        var m = BIG;
        workgroupBarrier();
        if (busy) {
            let i = lid.y * 32u + lid.x * 2u; // (2x, 2y) of the previous level, row stride 16
            m = min(min(red[i], red[i + 1u]), min(red[i + 16u], red[i + 17u]));
        }
        workgroupBarrier();
        if (busy) {
            red[lid.y * 16u + lid.x] = m;
            store_if_inside(r, wg * side + lid, m, size0, count);
        }
    }
}

// Six levels: the first from source_min, five more through workgroup memory. The entry
// point `spd` (16x16 threads, in each including file) runs it; dispatch ceil(w / 32) x
// ceil(h / 32) workgroups for a first level of w x h texels.
fn spd_tile(wg: vec2u, lid: vec2u) {
    let size0 = textureDimensions(dst0);
    var v = BIG;
    for (var k = 0u; k < 4u; k++) {
        let p = wg * TILE + lid * 2u + vec2u(k & 1u, k >> 1u);
        if (all(p < size0)) {
            let m = source_min(p, size0);
            textureStore(dst0, p, vec4f(m, 0.0, 0.0, 0.0));
            v = min(v, m);
        }
    }
    reduce_tile(wg, lid, v, size0);
}

// Fallback for devices with fewer than 6 storage textures per stage: one dispatch per level
// (entry point `per_level`, 8x8 threads, one texel each).
fn per_level_texel(p: vec2u) {
    let dst_size = textureDimensions(dst0);
    if (all(p < dst_size)) {
        textureStore(dst0, p, vec4f(source_min(p, dst_size), 0.0, 0.0, 0.0));
    }
}
