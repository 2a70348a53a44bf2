// The culled view (engine/tools/views/passes.py ViewCulledPass): the instances the frozen culling
// camera removed, drawn ghosted over the picture in their reason's colour. `culled` holds
// (scene row, reason) grouped by mesh; each mesh's draw starts at its first_instance.
// #include "mesh_view.wgsl"

@group(1) @binding(0) var<storage, read> culled: array<vec2u>;

const GHOST: f32 = 0.35;  // alpha over the picture

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) @interpolate(flat) reason: u32,
};

@vertex
fn vs_culled(@location(0) pos: vec3f, @builtin(instance_index) ii: u32) -> VsOut {
    let c = culled[ii];
    var out: VsOut;
    out.clip = view.view_proj * (transforms[c.x] * vec4f(pos, 1.0));
    out.reason = c.y;
    return out;
}

@fragment
fn fs_culled(in: VsOut) -> @location(0) vec4f {
    // engine.culling.reference classes: 0 frustum red, 1 sub-pixel amber, 2 occluded purple
    var c = vec3f(0.79, 0.10, 0.08);
    if (in.reason == 1u) {
        c = vec3f(0.87, 0.51, 0.05);
    } else if (in.reason == 2u) {
        c = vec3f(0.30, 0.16, 0.79);
    }
    return vec4f(c, GHOST);
}
