// Instanced meshes drawn by indexed indirect draws: instance_index (+ draw.base) indexes the
// remap list written by the cull, which holds the scene row of the instance. Each instance
// has a glTF metallic-roughness material (material.wgsl), lit by the sun through the BRDF of
// brdf.wgsl with the cascaded shadow maps (shadow_cascades.wgsl), and by the sky's SH; then fog.
// Entry points: vs_main + fs_main (OPAQUE), fs_mask (MASK: alpha test), fs_blend (BLEND,
// the Transparent pass), fs_id (scene rows); fs_depth (the depth prepass, no outputs) and
// fs_alpha_test (MASK: the prepass and the shadow casters); vs_shadow (opaque casters, depth
// only) and vs_shadow_mask (MASK casters, alpha-tested), into cascade draw.cascade.
// The Main passes' on-demand outputs (engine/passes/resources.py FRAME_TARGETS), each compiled
// in only while a pass reads it, at the location its define holds: OUT_NORMALS (the
// octahedral view-space shading normal, roughness, metallic), OUT_MOTION (motion vectors,
// pixels), OUT_AMBIENT (the ambient light, then left out of the colour), OUT_ALBEDO (the
// linear base colour: the deferred path's G-buffer with OUT_NORMALS).
// #include "mesh_view.wgsl"

// #include "mesh_draw.wgsl"

// #include "material.wgsl"

// #include "brdf.wgsl"

// #include "mesh_lights.wgsl"

// #include "shadow_cascades.wgsl"

struct VsIn {
    @location(0) pos: vec3f,
    @location(1) nrm: vec3f,
    @location(2) tangent: vec4f,  // xyz, w: handedness (glTF)
    @location(3) uv0: vec2f,
    @location(4) uv1: vec2f,
};

struct VsOut {
    // invariant: the depth prepass and the shading pipelines after it, each compiled on its
    // own, must reach the same depth bit for bit (their depth test is 'equal')
    @builtin(position) @invariant clip: vec4f,
    @location(0) world: vec3f,
    @location(1) normal: vec3f,
    @location(2) @interpolate(flat) color: vec4f,
    @location(3) @interpolate(flat) id: u32,
    @location(4) tangent: vec4f,  // world; w: handedness, mirrored transforms included
    @location(5) uv: vec4f,       // TEXCOORD_0, TEXCOORD_1
    // the material's world-UV scale (0: mesh UVs), read here: the fragment's UV derivatives
    // must not depend on a storage load, which lavapipe leaves 0 in helper pixels (a wrong
    // material there made a mip-8 line along every triangle edge)
    @location(6) @interpolate(flat) world_scale: f32,
// #if OUT_MOTION
    @location(7) prev_clip: vec4f,  // last frame's unjittered clip position
// #endif
};

@vertex
fn vs_main(v: VsIn, @builtin(instance_index) ii: u32) -> VsOut {
    return transform_vertex(v, ii);
}

fn transform_vertex(v: VsIn, ii: u32) -> VsOut {
    let id = remap[draw.base + ii];
    let m = transforms[id];
    let world = m * vec4f(v.pos, 1.0);
    // Cofactor matrix = inverse transpose times det: right for non-uniform scale.
    let a = m[0].xyz;
    let b = m[1].xyz;
    let c = m[2].xyz;
    let cof = mat3x3f(cross(b, c), cross(c, a), cross(a, b));
    let det = dot(a, cross(b, c));
    var out: VsOut;
    out.clip = view.view_proj * world;
    out.world = world.xyz;
    out.normal = cof * v.nrm;
    out.color = colors[id];
    out.id = id;
    out.tangent = vec4f(mat3x3f(a, b, c) * v.tangent.xyz, v.tangent.w * select(1.0, -1.0, det < 0.0));
    out.uv = vec4f(v.uv0, v.uv1);
    out.world_scale = materials[material_ids[id]].emissive.w;
// #if OUT_MOTION
    out.prev_clip = view.prev_view_proj * (prev_transforms[id] * vec4f(v.pos, 1.0));
// #endif
    return out;
}

// The sun's visibility through the cascaded shadow maps (shadow_cascades.wgsl).
fn sun_visibility(world: vec3f, n: vec3f) -> f32 {
    if (view.sun_dir.w < 0.5) {
        return 1.0;
    }
    return cascaded_sun_visibility(world, n);
}

struct Surface {
    base: vec4f,       // linear base colour and alpha
    n: vec3f,          // shading normal (after the normal map), world, facing the viewer's side
    ng: vec3f,         // interpolated vertex normal, same side
    metallic: f32,
    roughness: f32,    // perceptual
    occlusion: f32,
    emissive: vec3f,
};

fn texcoords(in: VsOut, ng: vec3f) -> UvSet {
    let uv0 = select(in.uv.xy, world_uv(in.world, ng) * in.world_scale, in.world_scale > 0.0);
    return uv_set(uv0, in.uv.zw);
}

// The material's inputs at this fragment (glTF 2.0 section 3.9).
fn surface(in: VsOut, front: bool) -> Surface {
    let m = materials[material_ids[in.id]];
    var ng = normalize(in.normal);
    let uvs = texcoords(in, ng);  // derivatives first: uniform control flow
    // only the slots some material of the scene uses (GpuMaterials.shader_defines): every
    // sample the shader holds may run, taken or not
    var tex = array<vec4f, 5>(vec4f(1.0), vec4f(1.0), vec4f(1.0), vec4f(1.0), vec4f(1.0));
// #if TEX0
    tex[TEX_BASE] = fetch(m, TEX_BASE, uvs);
// #endif
// #if TEX1
    tex[TEX_MR] = fetch(m, TEX_MR, uvs);
// #endif
// #if TEX2
    tex[TEX_NORMAL] = fetch(m, TEX_NORMAL, uvs);
// #endif
// #if TEX3
    tex[TEX_OCCLUSION] = fetch(m, TEX_OCCLUSION, uvs);
// #endif
// #if TEX4
    tex[TEX_EMISSIVE] = fetch(m, TEX_EMISSIVE, uvs);
// #endif
    var s: Surface;
    s.base = m.base_color * tex[TEX_BASE] * in.color;
    s.roughness = clamp(m.params.y * tex[TEX_MR].g, 0.0, 1.0);
    s.metallic = clamp(m.params.x * tex[TEX_MR].b, 0.0, 1.0);
    s.occlusion = 1.0 + m.params.w * (tex[TEX_OCCLUSION].r - 1.0);
    s.emissive = m.emissive.rgb * tex[TEX_EMISSIVE].rgb;
    var t = select(in.tangent.xyz, world_tangent(ng), m.emissive.w > 0.0);
    let w = select(in.tangent.w, 1.0, m.emissive.w > 0.0);
    t = t - ng * dot(ng, t);
    t = select(normalize(cross(ng, vec3f(0.0, 0.0, 1.0)) + vec3f(1e-6, 0.0, 0.0)),
               t, dot(t, t) > 1e-12);
    t = normalize(t);
    var b = cross(ng, t) * w;
    if (!front) {  // double-sided back face: the whole frame turns over (glTF 3.9.5)
        ng = -ng;
        t = -t;
        b = -b;
    }
    s.ng = ng;
    s.n = ng;
    if ((m.tex[0][TEX_NORMAL] >> 31u) == 1u && shading.params.y > 0.5) {
        var tn = tex[TEX_NORMAL].xyz * 2.0 - 1.0;
        tn = vec3f(tn.xy * m.params.z, tn.z);
        s.n = normalize(mat3x3f(t, b, ng) * tn);
    }
    return s;
}

// Outgoing radiance towards the eye, in two parts: direct (sun through the BRDF and the
// shadow map, emissive, the local lights `light_mode` picks: lights_shade.wgsl) and ambient
// (the sky's SH x material occlusion), each attenuated by distance fog (exponential, density
// eye.w per world unit), whose in-scattered horizon sky goes with the direct part.
struct Lit {
    direct: vec3f,
    ambient: vec3f,
};

fn lighting(in: VsOut, s: Surface, light_mode: u32) -> Lit {
    let l = view.sun_dir.xyz;
    let to_eye = view.eye.xyz - in.world;
    let dist = length(to_eye);
    let v = to_eye / max(dist, 1e-6);
    let ndl = dot(s.n, l);
    let vis = select(0.0, sun_visibility(in.world, s.ng), ndl > 0.0);
    let sun = brdf(s.base.rgb, s.metallic, s.roughness, s.n, v, l) * (PI * view.sun_color.rgb);
    let kept = exp(-dist * view.eye.w);  // 1 - fog
    let depth = -dot(vec4f(view.view[0].z, view.view[1].z, view.view[2].z, view.view[3].z),
                     vec4f(in.world, 1.0));  // view depth
    // only in pipelines of a scene with local lights (MeshPipelines.set_lights): the loop's
    // registers, even never run, cost the sun-only frame occupancy
    var local = vec3f(0.0);
// #if LOCAL_LIGHTS
    local = local_lights(light_mode, in.clip.xy, depth, in.world, s.n, v, s.base.rgb,
                         s.metallic, s.roughness);
// #endif
    let direct = (sun * max(ndl, 0.0) * vis + s.emissive + local) * kept
        + sky_color(view, -v) * (1.0 - kept);
    let amb = ambient(s.base.rgb, s.metallic, s.roughness, s.n, v) * s.occlusion * kept;
    return Lit(direct, amb);
}

fn shade(in: VsOut, s: Surface, light_mode: u32) -> vec3f {
    let lit = lighting(in, s, light_mode);
    return lit.direct + lit.ambient;
}

// What the Main passes write: the colour, and each on-demand target compiled in.
struct MainOut {
    @location(0) color: vec4f,
// #if OUT_NORMALS
    @location(OUT_NORMALS) normals: vec4f,
// #endif
// #if OUT_MOTION
    @location(OUT_MOTION) motion: vec4f,
// #endif
// #if OUT_AMBIENT
    @location(OUT_AMBIENT) ambient: vec4f,
// #endif
// #if OUT_ALBEDO
    @location(OUT_ALBEDO) albedo: vec4f,
// #endif
};

fn main_out(in: VsOut, s: Surface) -> MainOut {
    let lit = lighting(in, s, light_params.modes.y);
    var out: MainOut;
    out.color = vec4f(lit.direct + lit.ambient, 1.0);
// #if OUT_AMBIENT
    out.color = vec4f(lit.direct, 1.0);  // the Ambient pass adds it back, once modulated
    out.ambient = vec4f(lit.ambient, 1.0);
// #endif
// #if OUT_NORMALS
    let n = normalize((view.view * vec4f(s.n, 0.0)).xyz);
    out.normals = vec4f(oct_encode(n), s.roughness, s.metallic);
// #endif
// #if OUT_MOTION
    out.motion = vec4f(motion_pixels(view, in.clip.xy, in.prev_clip), 0.0, 0.0);
// #endif
// #if OUT_ALBEDO
    out.albedo = vec4f(s.base.rgb, 1.0);
// #endif
    return out;
}

@fragment
fn fs_main(in: VsOut, @builtin(front_facing) front: bool) -> MainOut {
    return main_out(in, surface(in, front));
}

@fragment
fn fs_mask(in: VsOut, @builtin(front_facing) front: bool) -> MainOut {
    let s = surface(in, front);
    if (s.base.a < materials[material_ids[in.id]].alpha.x) {
        discard;
    }
    return main_out(in, s);
}

@fragment
fn fs_blend(in: VsOut, @builtin(front_facing) front: bool) -> @location(0) vec4f {
    let s = surface(in, front);
    let two_sided = (material_flags(materials[material_ids[in.id]]) & 4u) != 0u;
    if (!front && !two_sided) {  // one pipeline draws both: single-sided back faces go here
        discard;
    }
    return vec4f(shade(in, s, light_params.modes.z), clamp(s.base.a, 0.0, 1.0));
}

// Debug views of the material inputs (engine/tools/views, View.Geometry): shading.params.z
// picks what is written: 0 base colour, 1 roughness, 2 metallic, 3 the shading normal
// (after the normal map, world), 4 material id, 5 the mip level the base colour texture is
// sampled at (-1: none).
fn material_view(in: VsOut, front: bool) -> vec4f {
    let s = surface(in, front);
    let mode = u32(shading.params.z);
    let mat_id = material_ids[in.id];
    switch mode {
        case 0u: { return vec4f(s.base.rgb, 1.0); }
        case 1u: { return vec4f(s.roughness, 0.0, 0.0, 1.0); }
        case 2u: { return vec4f(s.metallic, 0.0, 0.0, 1.0); }
        case 3u: { return vec4f(s.n, 1.0); }
        case 4u: { return vec4f(f32(mat_id), 0.0, 0.0, 1.0); }
        default: {
            let m = materials[mat_id];
            let uvs = texcoords(in, normalize(in.normal));
            return vec4f(sampled_level(m, TEX_BASE, uvs), 0.0, 0.0, 1.0);
        }
    }
}

@fragment
fn fs_material_view(in: VsOut, @builtin(front_facing) front: bool) -> @location(0) vec4f {
    return material_view(in, front);
}

@fragment
fn fs_material_view_mask(in: VsOut, @builtin(front_facing) front: bool) -> @location(0) vec4f {
    let s = surface(in, front);
    if (s.base.a < materials[material_ids[in.id]].alpha.x) {
        discard;
    }
    return material_view(in, front);
}

@fragment
fn fs_id(in: VsOut) -> @location(0) u32 {
    return in.id + 1u;
}

@vertex
fn vs_shadow(@location(0) pos: vec3f, @builtin(instance_index) ii: u32) -> @builtin(position) vec4f {
    let id = remap[draw.base + ii];
    return cascade_clip(draw.cascade, (transforms[id] * vec4f(pos, 1.0)).xyz);
}

@vertex
fn vs_shadow_mask(v: VsIn, @builtin(instance_index) ii: u32) -> VsOut {
    var out = transform_vertex(v, ii);
    out.clip = cascade_clip(draw.cascade, out.world);
    return out;
}

// The depth prepass's OPAQUE fragments: depth only (the colour targets' write mask is 0).
@fragment
fn fs_depth() {}

// MASK in the depth prepass and the shadow casters: the same cutoff on the same base colour
// alpha as fs_mask.
@fragment
fn fs_alpha_test(in: VsOut) {
    let m = materials[material_ids[in.id]];
    let uvs = texcoords(in, normalize(in.normal));
    var alpha = m.base_color.a * in.color.a;
// #if TEX0
    alpha *= fetch(m, TEX_BASE, uvs).a;
// #endif
    if (alpha < m.alpha.x) {
        discard;
    }
}
