// GPU-driven culling, two-phase after zeux/niagara: one thread per instance, workgroup 64.
// Specification: engine/culling/reference.py (numpy) classifies exactly as this file does.
//   cull_shadow: casters (Material.casts_shadows) vs each cascade's volume (extended toward
//                the sun), one dispatch row per cascade (global_invocation_id.y = cascade c),
//                region 2 + c
//   cull_early : instances visible last frame, frustum only, region 0 (drawn by Main.Early)
//   cull_late  : everything: frustum, sub-pixel, Hi-Z; writes visibility; newly visible,
//                region 1 (drawn by Main.Late)
// Counters are summed per workgroup, then one global atomicAdd per counter per workgroup.

const WG: u32 = 64u;
const FLAG_CULL: u32 = 1u;       // frustum/small/occlusion tests on (off: everything visible)
const FLAG_OCCLUSION: u32 = 2u;  // Hi-Z test on
const FLAG_TWO_PHASE: u32 = 4u;  // Cull.Early/Main.Early ran this frame
const FLAG_RESET: u32 = 8u;      // ignore last frame's visibility (first frame, resize, cut)

// |value| bits of MAX_WORLD = 1e18 (engine/scene/scene.py): a bounding sphere with any value
// beyond it, infinite or NaN is unusable: counted as frustum-culled, never drawn or casting.
const MAX_WORLD_BITS: u32 = 0x5d5e0b6bu;

const CLASS_FRUSTUM: u32 = 0u;
const CLASS_SMALL: u32 = 1u;
const CLASS_OCCLUDED: u32 = 2u;
const CLASS_VISIBLE: u32 = 3u;

// The eight counters (engine/culling/counters.py COUNTER_NAMES), each incremented by name.
const C_TESTED: u32 = 0u;
const C_FRUSTUM_CULLED: u32 = 1u;
const C_SMALL_CULLED: u32 = 2u;
const C_OCCLUDED: u32 = 3u;
const C_VISIBLE: u32 = 4u;
const C_DRAWN_EARLY: u32 = 5u;
const C_DRAWN_LATE: u32 = 6u;
const C_SHADOW_CASTERS: u32 = 7u;  // summed over the cascades: draws into the shadow maps

// Each shadow cascade's own counter block (engine/culling/counters.py CASCADE_COUNTER_NAMES),
// in the same buffer after the eight: cascade c's at CASCADE_BASE + c * CASCADE_BLOCK.
const SC_TESTED: u32 = 0u;   // instances tested against the cascade's volume
const SC_CULLED: u32 = 1u;   // outside it (or unusable bounds): not drawn into the cascade
const SC_CASTERS: u32 = 2u;  // kept: drawn into the cascade's map (region 2 + c)
const CASCADE_BASE: u32 = 8u;
const CASCADE_BLOCK: u32 = 3u;
const MAX_CASCADES: u32 = 4u;

struct Cull {
    view: mat4x4f,                  // world -> view of the culling camera (looks down -Z)
    planes: array<vec4f, 6>,        // camera frustum planes, world; inside: dot(p.xyz, c) + p.w >= 0
    light_planes: array<vec4f, 24>, // each cascade's volume planes at 6 c (sides + far; no near: extended to the sun)
    eye: vec4f,                     // xyz: culling camera position; w: LOD 0 size in pixels
    proj: vec4f,                    // x: P00, y: P11, z: near, w: output height in pixels
    screen: vec4f,                  // xy: output size px; zw: pyramid level-0 size in texels
    counts: vec4u,                  // x: instances N, y: flags, z: batches B, w: remap region T
    misc: vec4u,                    // x: pyramid mip count, y: camera planes, z: light planes per cascade, w: cascades
    jitter: vec4f,                  // xy: the projection's sub-pixel offset, pixels (x right, y down)
};

struct MeshInfo {
    first_batch: u32,
    lod_count: u32,   // bits 0-7: LODs; bit 8: the group casts no shadow (Material.casts_shadows)
    remap_base: u32,  // first remap slot of LOD 0 within a region
    capacity: u32,    // slots per LOD batch (= instances of this mesh)
};

@group(0) @binding(0) var<uniform> cull: Cull;
@group(0) @binding(1) var<storage, read> bounds: array<vec4f>;
@group(0) @binding(2) var<storage, read> mesh_ids: array<u32>;
@group(0) @binding(3) var<storage, read> meshes: array<MeshInfo>;
@group(0) @binding(4) var<storage, read_write> state: array<u32>;  // class | lod << 2
@group(0) @binding(5) var<storage, read_write> args: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> remap: array<u32>;
@group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 20>;  // 8 + 4 x 3
@group(0) @binding(8) var pyramid: texture_2d<f32>;

var<workgroup> wg_counts: array<atomic<u32>, 8>;
var<workgroup> wg_cascade: array<atomic<u32>, 3>;  // cull_shadow: the workgroup's cascade

fn count(c: u32) {
    atomicAdd(&wg_counts[c], 1u);
}

fn count_class(cls: u32) {
    switch cls {
        case CLASS_FRUSTUM: { count(C_FRUSTUM_CULLED); }
        case CLASS_SMALL: { count(C_SMALL_CULLED); }
        case CLASS_OCCLUDED: { count(C_OCCLUDED); }
        default: { count(C_VISIBLE); }
    }
}

// Explicit zeroing: not every driver zero-initialises workgroup memory.
fn clear_counts(lid: u32) {
    if (lid < 8u) {
        atomicStore(&wg_counts[lid], 0u);
    }
    workgroupBarrier();
}

fn flush_counts(lid: u32) {
    workgroupBarrier();
    if (lid < 8u) {
        let v = atomicLoad(&wg_counts[lid]);
        if (v != 0u) {
            atomicAdd(&counters[lid], v);
        }
    }
}

// Checked on the bit patterns: compilers may assume floats are never NaN or inf (WGSL
// allows it), so a float comparison could be folded away. Trusts no check made on the CPU.
fn usable(b: vec4f) -> bool {
    return all((bitcast<vec4u>(b) & vec4u(0x7fffffffu)) <= vec4u(MAX_WORLD_BITS));
}

// Outside one of the camera's planes.
fn outside(c: vec3f, r: f32) -> bool {
    for (var k = 0u; k < cull.misc.y; k++) {
        let p = cull.planes[k];
        if (dot(p.xyz, c) + p.w < -r) {
            return true;
        }
    }
    return false;
}

// Outside one of the planes of the sun volume of cascade `cascade`.
fn outside_cascade(c: vec3f, r: f32, cascade: u32) -> bool {
    for (var k = 0u; k < cull.misc.z; k++) {
        let p = cull.light_planes[6u * cascade + k];
        if (dot(p.xyz, c) + p.w < -r) {
            return true;
        }
    }
    return false;
}

// LOD k is used while the projected diameter is below eye.w / 2^(k-1) pixels.
fn select_lod(c: vec3f, r: f32, lods: u32) -> u32 {
    let d = max(distance(c, cull.eye.xyz), cull.proj.z);
    let size = r * cull.proj.y * cull.proj.w / d;
    var lod = 0u;
    var t = cull.eye.w;
    for (var k = 1u; k < lods; k++) {
        if (size < t) {
            lod = k;
        }
        t = t * 0.5;
    }
    return lod;
}

fn emit(region: u32, id: u32, lod: u32) {
    let info = meshes[mesh_ids[id]];
    let batch = region * cull.counts.z + info.first_batch + lod;
    let slot = atomicAdd(&args[batch * 5u + 1u], 1u);
    remap[region * cull.counts.w + info.remap_base + lod * info.capacity + slot] = id;
}

// Tangent slopes x/z of the lines through the eye that touch a circle of radius r at
// (x, z), z > r: t = (x z -+ r sqrt(x^2 + z^2 - r^2)) / (z^2 - r^2). Exact projected bounds
// (Mara & McGuire 2013, "2D Polyhedral Bounds of a Clipped, Perspective-Projected 3D Sphere").
fn tangent_slopes(x: f32, z: f32, r: f32) -> vec2f {
    let s = r * sqrt(x * x + z * z - r * r);
    let d = z * z - r * r;
    return vec2f((x * z - s) / d, (x * z + s) / d);
}

fn pyramid_min(level: i32, p: vec2i, size: vec2i) -> f32 {
    let hi = size - vec2i(1);
    let a = textureLoad(pyramid, clamp(p, vec2i(0), hi), level).r;
    let b = textureLoad(pyramid, clamp(p + vec2i(1, 0), vec2i(0), hi), level).r;
    let c = textureLoad(pyramid, clamp(p + vec2i(0, 1), vec2i(0), hi), level).r;
    let d = textureLoad(pyramid, clamp(p + vec2i(1, 1), vec2i(0), hi), level).r;
    return min(min(a, b), min(c, d));
}

// Reverse-Z: the pyramid keeps the farthest (minimum) depth; occluded when the sphere's
// nearest point is farther than every texel under its on-screen bounds.
fn occluded(uv_lo: vec2f, uv_hi: vec2f, z_near_pt: f32) -> bool {
    let lo = clamp(uv_lo, vec2f(0.0), vec2f(1.0));
    let hi = clamp(uv_hi, vec2f(0.0), vec2f(1.0));
    let base = cull.screen.zw;
    let ext = max((hi.x - lo.x) * base.x, (hi.y - lo.y) * base.y);
    let mips = cull.misc.x;
    var level = 0u;
    while (level + 1u < mips && f32(1u << level) < ext) {  // level = ceil(log2(ext))
        level++;
    }
    var size = vec2i(1);
    var p0 = vec2i(0);
    loop {  // guard against rounding: the 2x2 read must span the whole bounds
        size = max(vec2i(base) >> vec2u(level), vec2i(1));
        p0 = vec2i(floor(lo * vec2f(size)));
        let p1 = vec2i(floor(hi * vec2f(size)));
        if (all(p1 - p0 <= vec2i(1)) || level + 1u >= mips) {
            break;
        }
        level++;
    }
    let sphere_depth = cull.proj.z / z_near_pt;
    return sphere_depth < pyramid_min(i32(level), p0, size);
}

// The full classification (Cull.Late); returns CLASS_*.
fn classify(c: vec3f, r: f32) -> u32 {
    if ((cull.counts.y & FLAG_CULL) == 0u) {
        return CLASS_VISIBLE;
    }
    if (outside(c, r)) {
        return CLASS_FRUSTUM;
    }
    let v = (cull.view * vec4f(c, 1.0)).xyz;
    let z = -v.z;
    let near = cull.proj.z;
    if (z - r <= near) {
        return CLASS_VISIBLE;  // touches the near plane: no projected bounds, never occluded
    }
    let tx = tangent_slopes(v.x, z, r) * cull.proj.x;
    let ty = tangent_slopes(v.y, z, r) * cull.proj.y;
    let shift = cull.jitter.xy / cull.screen.xy;  // TAA: the image moves by the jitter
    let uv_lo = vec2f(0.5 + 0.5 * tx.x, 0.5 - 0.5 * ty.y) + shift;
    let uv_hi = vec2f(0.5 + 0.5 * tx.y, 0.5 - 0.5 * ty.x) + shift;
    if (any(uv_hi < vec2f(0.0)) || any(uv_lo > vec2f(1.0))) {
        return CLASS_FRUSTUM;
    }
    // Small: the bounds contain no pixel centre (i + 0.5) of the output.
    let px_lo = max(ceil(uv_lo * cull.screen.xy - 0.5), vec2f(0.0));
    let px_hi = min(floor(uv_hi * cull.screen.xy - 0.5), cull.screen.xy - 1.0);
    if (any(px_lo > px_hi)) {
        return CLASS_SMALL;
    }
    if ((cull.counts.y & FLAG_OCCLUSION) != 0u && occluded(uv_lo, uv_hi, z - r)) {
        return CLASS_OCCLUDED;
    }
    return CLASS_VISIBLE;
}

fn was_visible(id: u32) -> bool {
    return (cull.counts.y & FLAG_RESET) == 0u && (state[id] & 3u) == CLASS_VISIBLE;
}

@compute @workgroup_size(64)
fn cull_early(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32) {
    clear_counts(lid);
    let id = gid.x;
    if (id < cull.counts.x && was_visible(id)) {
        let b = bounds[id];
        let culled = !usable(b) || ((cull.counts.y & FLAG_CULL) != 0u && outside(b.xyz, b.w));
        if (!culled) {
            emit(0u, id, select_lod(b.xyz, b.w, meshes[mesh_ids[id]].lod_count & 0xffu));
            count(C_DRAWN_EARLY);
        }
    }
    flush_counts(lid);
}

@compute @workgroup_size(64)
fn cull_late(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32) {
    clear_counts(lid);
    let id = gid.x;
    if (id < cull.counts.x) {
        let b = bounds[id];
        var cls = CLASS_FRUSTUM;
        if (usable(b)) {
            cls = classify(b.xyz, b.w);
        }
        let lod = select_lod(b.xyz, b.w, meshes[mesh_ids[id]].lod_count & 0xffu);
        count(C_TESTED);
        count_class(cls);
        let drawn_early = (cull.counts.y & FLAG_TWO_PHASE) != 0u && was_visible(id);
        if (cls == CLASS_VISIBLE && !drawn_early) {
            emit(1u, id, lod);
            count(C_DRAWN_LATE);
        }
        state[id] = cls | (lod << 2u);
    }
    flush_counts(lid);
}

// One thread per (instance, cascade): a workgroup tests 64 instances against one cascade.
@compute @workgroup_size(64)
fn cull_shadow(@builtin(global_invocation_id) gid: vec3u, @builtin(local_invocation_index) lid: u32) {
    clear_counts(lid);
    if (lid < CASCADE_BLOCK) {
        atomicStore(&wg_cascade[lid], 0u);
    }
    workgroupBarrier();
    let id = gid.x;
    let cascade = gid.y;
    if (id < cull.counts.x && cascade < MAX_CASCADES) {
        let b = bounds[id];
        let lods = meshes[mesh_ids[id]].lod_count;
        let culled = !usable(b) || (lods & 0x100u) != 0u
            || ((cull.counts.y & FLAG_CULL) != 0u && outside_cascade(b.xyz, b.w, cascade));
        atomicAdd(&wg_cascade[SC_TESTED], 1u);
        if (culled) {
            atomicAdd(&wg_cascade[SC_CULLED], 1u);
        } else {
            emit(2u + cascade, id, select_lod(b.xyz, b.w, lods & 0xffu));
            count(C_SHADOW_CASTERS);
            atomicAdd(&wg_cascade[SC_CASTERS], 1u);
        }
    }
    flush_counts(lid);
    if (lid < CASCADE_BLOCK && cascade < MAX_CASCADES) {
        let v = atomicLoad(&wg_cascade[lid]);
        if (v != 0u) {
            atomicAdd(&counters[CASCADE_BASE + cascade * CASCADE_BLOCK + lid], v);
        }
    }
}
