// Lights.Deferred (engine/passes/lights.py): the deferred path's lighting pass. The Main
// passes wrote the G-buffer (frame.normals: oct view-space shading normal, roughness,
// metallic; frame.albedo: linear base colour; frame.depth) with the sun, sky and emissive
// light already in the colour; this fullscreen pass adds each opaque pixel's cluster lights
// (clustered deferred: Olsson et al. 2012) through the same light_radiance and fog as the
// forward paths, blended additively into the colour.
// #include "frame_common.wgsl"

// #include "material.wgsl"

// #include "brdf.wgsl"

// #include "lights_shade.wgsl"

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var depth_tex: texture_depth_2d;
@group(0) @binding(2) var normals_tex: texture_2d<f32>;
@group(0) @binding(3) var albedo_tex: texture_2d<f32>;

@group(1) @binding(0) var<uniform> light_params: LightParams;
@group(1) @binding(1) var<storage, read> lights: array<Light>;
@group(1) @binding(2) var<storage, read> cluster_counts: array<u32>;
@group(1) @binding(3) var<storage, read> cluster_lights: array<u32>;

@vertex
fn vs_fullscreen(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

@fragment
fn fs_deferred(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let px = vec2i(frag.xy);
    let depth = textureLoad(depth_tex, px, 0);
    if (depth <= 0.0) {  // the sky
        discard;
    }
    let ndc = vec2f(frag.x * view.size.z * 2.0 - 1.0, 1.0 - frag.y * view.size.w * 2.0);
    let h = view.inv_view_proj * vec4f(ndc, depth, 1.0);
    let world = h.xyz / h.w;
    let g = textureLoad(normals_tex, px, 0);
    let nv = oct_decode(g.xy);
    let m = view.view;  // world -> view rotation R: the world normal is R^T nv
    let n = normalize(vec3f(dot(m[0].xyz, nv), dot(m[1].xyz, nv), dot(m[2].xyz, nv)));
    let base = textureLoad(albedo_tex, px, 0).rgb;
    let to_eye = view.eye.xyz - world;
    let dist = length(to_eye);
    let v = to_eye / max(dist, 1e-6);
    let d = -(m * vec4f(world, 1.0)).z;  // view depth
    let sum = local_lights(LIGHTS_CLUSTERED, frag.xy, d, world, n, v, base, g.w, g.z);
    return vec4f(sum * exp(-dist * view.eye.w), 0.0);
}
