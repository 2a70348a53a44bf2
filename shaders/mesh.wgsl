// Instanced meshes drawn by indexed indirect draws: instance_index (+ draw.base) indexes the
// remap list written by the cull, which holds the scene row of the instance.
// #include "mesh_view.wgsl"

// #include "mesh_draw.wgsl"

@group(2) @binding(0) var shadow_map: texture_depth_2d;
@group(2) @binding(1) var shadow_sampler: sampler_comparison;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) world: vec3f,
    @location(1) normal: vec3f,
    @location(2) @interpolate(flat) color: vec4f,
    @location(3) @interpolate(flat) id: u32,
};

@vertex
fn vs_main(@location(0) pos: vec3f, @location(1) nrm: vec3f,
           @builtin(instance_index) ii: u32) -> VsOut {
    let id = remap[draw.base + ii];
    let m = transforms[id];
    let world = m * vec4f(pos, 1.0);
    // Cofactor matrix = inverse transpose times det: right for non-uniform scale.
    let a = m[0].xyz;
    let b = m[1].xyz;
    let c = m[2].xyz;
    let cof = mat3x3f(cross(b, c), cross(c, a), cross(a, b));
    var out: VsOut;
    out.clip = view.view_proj * world;
    out.world = world.xyz;
    out.normal = cof * nrm;
    out.color = colors[id];
    out.id = id;
    return out;
}

@vertex
fn vs_shadow(@location(0) pos: vec3f, @builtin(instance_index) ii: u32) -> @builtin(position) vec4f {
    let id = remap[draw.base + ii];
    return view.light_view_proj * (transforms[id] * vec4f(pos, 1.0));
}

// 3x3 PCF of 2x2-filtered comparisons (a 4x4-texel tent), reverse-Z: lit where the
// receiver is at least as close to the sun as the stored caster depth.
fn sun_visibility(world: vec3f, n: vec3f) -> f32 {
    if (view.sun_dir.w < 0.5) {
        return 1.0;
    }
    let texel_world = view.sun_color.w;
    let p = view.light_view_proj * vec4f(world + n * (1.5 * texel_world), 1.0);
    let uv = p.xy * vec2f(0.5, -0.5) + 0.5;
    if (any(uv < vec2f(0.0)) || any(uv > vec2f(1.0)) || p.z > 1.0 || p.z < 0.0) {
        return 1.0;
    }
    let texel = 1.0 / view.sky_zenith.w;
    var lit = 0.0;
    for (var y = -1; y <= 1; y++) {
        for (var x = -1; x <= 1; x++) {
            let o = vec2f(f32(x), f32(y)) * texel;
            lit += textureSampleCompareLevel(shadow_map, shadow_sampler, uv + o, p.z + 2e-4);
        }
    }
    return lit / 9.0;
}

fn shade(in: VsOut) -> vec3f {
    let n = normalize(in.normal);
    let l = view.sun_dir.xyz;
    let to_eye = view.eye.xyz - in.world;
    let dist = length(to_eye);
    let v = to_eye / max(dist, 1e-6);
    let ndl = max(dot(n, l), 0.0);
    let vis = select(0.0, sun_visibility(in.world, n), ndl > 0.0);
    let albedo = in.color.rgb;
    let hemi = mix(view.ground.rgb, view.sky_zenith.rgb, 0.5 + 0.5 * n.y);
    let h = normalize(l + v);
    let spec = pow(max(dot(n, h), 0.0), 64.0) * 0.25 * ndl;
    var color = albedo * (hemi * 0.9 + view.sun_color.rgb * ndl * vis) + view.sun_color.rgb * spec * vis;
    // Distance fog towards the horizon sky (exponential, density eye.w per world unit).
    let fog = 1.0 - exp(-dist * view.eye.w);
    color = mix(color, sky_color(view, -v), fog);
    return color;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4f {
    return vec4f(shade(in), 1.0);
}

@fragment
fn fs_id(in: VsOut) -> @location(0) u32 {
    return in.id + 1u;
}
