// Local lights (engine/lights): point and spot lights in KHR_lights_punctual's terms and the
// cluster grid they are assigned to. Shared by the assignment pass (light_cluster.wgsl), the
// shading (lights_shade.wgsl: the Main passes, Transparent, Lights.Deferred) and the lights
// heat-map view. Every module that includes this declares `light_params` (LightParams) itself,
// at its own group and binding. Numpy twins: engine/lights/reference.py.
//
// The grid: CLUSTER_X x CLUSTER_Y screen tiles by CLUSTER_Z view-depth slices (froxels), the
// 16 x 8 x 24 of id Software's DOOM (2016) with 9 rows for 16:9 outputs (Sousa & Geffroy,
// "The devil is in the details", SIGGRAPH 2016). Depth slices are exponential (Olsson,
// Billeter & Assarsson 2012, "Clustered Deferred and Forward Shading", section 4.1): slice k
// begins at z_k = near (far / near)^(k / CLUSTER_Z); slice 0 reaches down to the camera and
// the last slice to infinity. A cluster holds at most CLUSTER_CAP lights.

const CLUSTER_X: u32 = 16u;
const CLUSTER_Y: u32 = 9u;
const CLUSTER_Z: u32 = 24u;
const CLUSTER_CAP: u32 = 256u;
// Inverse-square falloff is clamped at 1 cm (Lagarde & de Rousiers 2014, "Moving Frostbite to
// Physically Based Rendering", section 4.2.2): a surface touching a light stays finite.
const LIGHT_MIN_DISTANCE: f32 = 0.01;

// Which lights a fragment is shaded with (LightParams.modes.y: the Main passes, .z: BLEND).
const LIGHTS_NONE: u32 = 0u;       // none (no lights, or the deferred path's Main passes)
const LIGHTS_ALL: u32 = 1u;        // plain forward: every light
const LIGHTS_CLUSTERED: u32 = 2u;  // its cluster's list

// One light, 48 bytes (engine/lights/model.py LIGHT_DTYPE).
struct Light {
    position: vec3f,    // world
    range: f32,         // world units: no light at or past it
    intensity: vec3f,   // candela x linear colour
    spot_scale: f32,    // 1 / (cos inner - cos outer); 0 for a point light
    direction: vec3f,   // unit, where a spot light points (KHR: the node's -Z)
    spot_offset: f32,   // -cos outer x spot_scale; 1 for a point light
};

// The per-frame uniform of the lights (engine/lights/gpu.py LightParams), 928 bytes.
struct LightParams {
    view: mat4x4f,                  // world -> view of the rendering camera
    x_planes: array<vec4f, 17>,     // tile column k's left plane (a, b): a x + b z, unit normal
    y_planes: array<vec4f, 10>,     // tile row k's upper plane (a, b): a y + b z, unit normal
    slices: array<vec4f, 25>,       // x: z_k, the view depth slice k begins at (z_0 = near)
    grid: vec4f,                    // x: CLUSTER_X / width, y: CLUSTER_Y / height (px -> tile);
                                    // z: CLUSTER_Z / log2(far / near); w: near
    modes: vec4u,                   // x: light count; y: Main's LIGHTS_*; z: BLEND's; w: 0
};

// The slice of view depth d: the number of boundaries z_1..z_{Z-1} at or below d. The log2
// estimate is off by at most one and is corrected by comparisons, so the result is exactly
// the count (the assignment and the fragments agree on every boundary).
fn depth_slice(d: f32) -> u32 {
    let g = floor(log2(max(d, 1e-30) / light_params.grid.w) * light_params.grid.z);
    var k = u32(clamp(g, 0.0, f32(CLUSTER_Z - 1u)));
    if (k + 1u < CLUSTER_Z && d >= light_params.slices[k + 1u].x) {
        k += 1u;
    }
    if (k > 0u && d < light_params.slices[k].x) {
        k -= 1u;
    }
    return k;
}

// The cluster of a pixel (framebuffer position, pixels) at view depth d.
fn cluster_index(frag: vec2f, d: f32) -> u32 {
    let t = min(vec2u(frag * light_params.grid.xy), vec2u(CLUSTER_X - 1u, CLUSTER_Y - 1u));
    return (depth_slice(d) * CLUSTER_Y + t.y) * CLUSTER_X + t.x;
}
