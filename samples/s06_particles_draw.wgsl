// s06's particles drawn (the pass Particles): one indirect draw of 6 vertices per drawn
// particle, in the order Particles.Sort left them (farthest first), each a camera-facing quad
// shaded as a sphere impostor: lit by the sun through the frame's shadow map (shadow.map,
// View.light_view_proj) and by the sky, fogged like the meshes, alpha-blended over the
// frame's colour and depth tested against frame.depth (not written).
// #include "s06_particles_common.wgsl"
// #include "frame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> sim: Sim;
@group(0) @binding(2) var<storage, read> particles: array<Particle>;
@group(0) @binding(3) var<storage, read> order: array<u32>;  // the sort's values: slots
@group(0) @binding(4) var shadow_map: texture_depth_2d;
@group(0) @binding(5) var shadow_sampler: sampler_comparison;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) corner: vec2f,                          // -1..1 across the quad
    @location(1) @interpolate(flat) centre: vec4f,       // xyz: world centre; w: radius
    @location(2) @interpolate(flat) color: vec4f,        // linear albedo; a: opacity
};

// Saturated paint colours, linear.
const PALETTE = array<vec3f, 6>(
    vec3f(0.90, 0.16, 0.10), vec3f(0.98, 0.55, 0.05), vec3f(0.95, 0.85, 0.12),
    vec3f(0.12, 0.60, 0.22), vec3f(0.10, 0.35, 0.85), vec3f(0.55, 0.15, 0.70));

fn camera_right() -> vec3f {
    return vec3f(view.view[0][0], view.view[1][0], view.view[2][0]);
}

fn camera_up() -> vec3f {
    return vec3f(view.view[0][1], view.view[1][1], view.view[2][1]);
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VsOut {
    let corners = array<vec2f, 6>(vec2f(-1.0, -1.0), vec2f(1.0, -1.0), vec2f(1.0, 1.0),
                                  vec2f(-1.0, -1.0), vec2f(1.0, 1.0), vec2f(-1.0, 1.0));
    let p = particles[order[ii]];
    let k = particle_key(p.serial, sim.counts.z);
    let r = radius(sim, k);
    let c = corners[vi];
    let world = p.pos + (camera_right() * c.x + camera_up() * c.y) * r;
    // fade in over its first 0.1 s, out over its last 0.4 s
    let life = lifetime(sim, k);
    let fade = smoothstep(0.0, 0.1, p.age) * (1.0 - smoothstep(life - 0.4, life, p.age));
    var out: VsOut;
    out.clip = view.view_proj * vec4f(world, 1.0);
    out.corner = c;
    out.centre = vec4f(p.pos, r);
    out.color = vec4f(PALETTE[pcg(k + 9u) % 6u], 0.8 * fade);
    return out;
}

// The sun's visibility at a world point with normal n: 2x2 PCF of 2x2-filtered comparisons,
// offset along the normal by 1.5 shadow texels (as the meshes are, so they agree).
fn sun_visibility(world: vec3f, n: vec3f) -> f32 {
    if (view.sun_dir.w < 0.5) {
        return 1.0;
    }
    let p = view.light_view_proj * vec4f(world + n * (1.5 * view.sun_color.w), 1.0);
    let uv = p.xy * vec2f(0.5, -0.5) + 0.5;
    if (any(uv < vec2f(0.0)) || any(uv > vec2f(1.0)) || p.z > 1.0 || p.z < 0.0) {
        return 1.0;
    }
    let t = 0.5 / view.sky_zenith.w;
    var lit = 0.0;
    for (var i = 0u; i < 4u; i++) {
        let o = vec2f(f32(i & 1u) * 2.0 - 1.0, f32(i >> 1u) * 2.0 - 1.0) * t;
        lit += textureSampleCompareLevel(shadow_map, shadow_sampler, uv + o, p.z + 2e-4);
    }
    return lit * 0.25;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4f {
    let r2 = dot(in.corner, in.corner);
    if (r2 > 1.0) {
        discard;
    }
    let to_eye = normalize(view.eye.xyz - in.centre.xyz);
    let n = normalize(camera_right() * in.corner.x + camera_up() * in.corner.y
                      + to_eye * sqrt(1.0 - r2));
    let world = in.centre.xyz + n * in.centre.w;
    let l = view.sun_dir.xyz;
    let ndl = max(dot(n, l), 0.0);
    let vis = select(0.0, sun_visibility(world, n), ndl > 0.0);
    // Lambert: a white surface facing the sun reflects sun_color (as brdf.wgsl's diffuse)
    let sun = in.color.rgb * view.sun_color.rgb * ndl * vis;
    let sky = in.color.rgb * sky_base(view, n) * 0.8;
    let dist = length(view.eye.xyz - world);
    let kept = exp(-dist * view.eye.w);  // 1 - fog
    let lit = (sun + sky) * kept + sky_color(view, -to_eye) * (1.0 - kept);
    let edge = 1.0 - smoothstep(0.8, 1.0, r2);  // a soft rim: no aliased disc edge
    return vec4f(lit, in.color.a * edge);
}
