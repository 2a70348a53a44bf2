// The geometry debug views' pass (engine/tools/views/passes.py ViewGeometryPass): the frame's drawn
// instances (regions early + late, through the cull's indirect args and remap list) again,
// writing per pixel the nearest instance's scene row + 1 and its LOD + 1 (rg32uint; 0: none).
// Bindings 0 and 1 are mesh.wgsl's (MeshPipelines' layouts); group 2 is this pass's.
// #include "mesh_view.wgsl"

// #include "mesh_draw.wgsl"

struct Geometry {
    region_slots: u32,  // remap slots per region (GpuScene.region_slots)
    pad0: u32,          // batches (GpuScene.batch_count): the cost weights' row length
    pad1: u32,
    pad2: u32,
};
// per mesh: first batch, LOD count, remap base of its LOD 0 slots, instances (capacity)
@group(2) @binding(0) var<storage, read> meshes: array<vec4u>;
@group(2) @binding(1) var<storage, read> mesh_ids: array<u32>;
@group(2) @binding(2) var<uniform> geometry: Geometry;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) @interpolate(flat) id_lod: vec2u,
};

@vertex
fn vs_ids(@location(0) pos: vec3f, @location(1) nrm: vec3f,
          @builtin(instance_index) ii: u32) -> VsOut {
    let slot = draw.base + ii;  // a remap slot: region * T + base[mesh] + lod * cap[mesh] + k
    let id = remap[slot];
    let m = meshes[mesh_ids[id]];
    let lod = (slot % geometry.region_slots - m.z) / max(m.w, 1u);
    var out: VsOut;
    out.clip = view.view_proj * (transforms[id] * vec4f(pos, 1.0));
    out.id_lod = vec2u(id + 1u, lod + 1u);
    return out;
}

@fragment
fn fs_ids(in: VsOut) -> @location(0) vec2u {
    return in.id_lod;
}

// overdraw: every rasterised fragment adds (1, 0) (no depth test), then in a second draw of
// the same instances every fragment that passes the depth test at its turn adds (0, 1);
// additive blending into rg16float (exact counts up to 2048).
@vertex
fn vs_count(@location(0) pos: vec3f, @builtin(instance_index) ii: u32) -> @builtin(position) vec4f {
    let id = remap[draw.base + ii];
    return view.view_proj * (transforms[id] * vec4f(pos, 1.0));
}

@fragment
fn fs_before() -> @location(0) vec4f {
    return vec4f(1.0, 0.0, 0.0, 0.0);
}

@fragment
fn fs_after() -> @location(0) vec4f {
    return vec4f(0.0, 1.0, 0.0, 0.0);
}

// cost: every fragment that passes the depth test at its turn adds its draw's measured GPU
// ns per fragment (weights[region * batches + batch]; the batch from the remap slot as for
// the LOD) to R and 1 to G: R is the pixel's ns, overdraw included.
@group(2) @binding(3) var<storage, read> weights: array<f32>;

struct CostOut {
    @builtin(position) @invariant clip: vec4f,  // cost_shade tests 'equal' against cost's
    @location(0) @interpolate(flat) ns: f32,
};

// rows: 0 / 1 the region's draws in order; + 2 the shading after its prepass
fn cost_vertex(pos: vec3f, ii: u32, shade: u32) -> CostOut {
    let slot = draw.base + ii;
    let id = remap[slot];
    let m = meshes[mesh_ids[id]];
    let lod = (slot % geometry.region_slots - m.z) / max(m.w, 1u);
    let row = slot / geometry.region_slots + 2u * shade;
    var out: CostOut;
    out.clip = view.view_proj * (transforms[id] * vec4f(pos, 1.0));
    out.ns = weights[row * geometry.pad0 + m.x + lod];
    return out;
}

@vertex
fn vs_cost(@location(0) pos: vec3f, @builtin(instance_index) ii: u32) -> CostOut {
    return cost_vertex(pos, ii, 0u);
}

@fragment
fn fs_cost(in: CostOut) -> @location(0) vec4f {
    return vec4f(in.ns, 1.0, 0.0, 0.0);
}

// The shading after a Main pass's depth prepass (weights rows 2 and 3: 0 without one),
// drawn with depth 'equal' right after that pass's own draws: one fragment a pixel, as the
// frame shades it.
@vertex
fn vs_cost_shade(@location(0) pos: vec3f, @builtin(instance_index) ii: u32) -> CostOut {
    return cost_vertex(pos, ii, 1u);
}

@fragment
fn fs_cost_shade(in: CostOut) -> @location(0) vec4f {
    return vec4f(in.ns, 0.0, 0.0, 0.0);
}
