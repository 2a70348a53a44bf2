// Shared by mesh.wgsl and post.wgsl: the per-frame view uniform and the sky model.
struct View {
    view_proj: mat4x4f,        // world -> clip of the rendering camera (reverse-Z)
    inv_view_proj: mat4x4f,    // clip -> world (sky rays in Post)
    light_view_proj: mat4x4f,  // world -> sun shadow clip (reverse-Z orthographic)
    eye: vec4f,                // xyz: camera position; w: fog density per world unit
    sun_dir: vec4f,            // xyz: unit vector towards the sun; w: 1 shadows on, 0 off
    sun_color: vec4f,          // rgb: linear sun radiance; w: shadow texel size, world units
    sky_zenith: vec4f,         // rgb: linear; w: shadow map size in texels
    sky_horizon: vec4f,        // rgb: linear; w: exposure
    ground: vec4f,             // rgb: ground bounce colour; w: unused
    view: mat4x4f,             // world -> view (right-handed: the camera looks down -z)
    proj: mat4x4f,             // view -> clip, jittered (reverse-Z infinite perspective)
    inv_proj: mat4x4f,         // clip -> view, jittered
    prev_view_proj: mat4x4f,   // last frame's world -> clip, unjittered (motion, reprojection)
    jitter: vec4f,             // xy: this frame's sub-pixel offset, pixels (x right, y down); zw: last's
    size: vec4f,               // xy: output size in pixels; zw: 1 / size
    cascade_view_proj: array<mat4x4f, 4>,  // world -> shadow clip of cascade c (0: light_view_proj)
    cascade_split: vec4f,      // view depth (world units) where cascade c ends (engine/passes/shadow.py)
    cascade_texel: vec4f,      // cascade c's shadow texel size, world units
    cascade_params: vec4f,     // x: cascades in use; y: blend band, a fraction of a cascade's depth range; z: 1 / map size; w: 1 texel-snapped, 0 not
    cascade_depth: vec4f,      // the fitted camera's view depth of world p: dot(xyz, p) + w (the rendering camera's unless fitted to another)
};

// The sky without the sun (engine/materials/ambient.py has its numpy twin: the ambient light).
fn sky_base(view: View, dir: vec3f) -> vec3f {
    let up = clamp(dir.y, -1.0, 1.0);
    let c = mix(view.sky_horizon.rgb, view.sky_zenith.rgb, pow(max(up, 0.0), 0.45));
    return mix(c, view.ground.rgb * 0.6 + view.sky_horizon.rgb * 0.4, smoothstep(0.0, -0.25, up));
}

fn sky_color(view: View, dir: vec3f) -> vec3f {
    var c = sky_base(view, dir);
    let s = max(dot(dir, view.sun_dir.xyz), 0.0);
    c += view.sun_color.rgb * (pow(s, 900.0) * 4.0 + pow(s, 12.0) * 0.06);
    return c;
}

// Octahedral unit-vector encoding (Cigolle et al. 2014, "A Survey of Efficient Representations
// for Independent Unit Vectors", JCGT 3(2)): a unit vector to a point of [-1, 1]^2, the upper
// hemisphere inside the diamond, the lower folded into the corners. frame.normals holds the
// view-space normal this way (engine/math3d.py oct_encode / oct_decode are the numpy twins).
fn oct_sign(v: vec2f) -> vec2f {
    return select(vec2f(-1.0), vec2f(1.0), v >= vec2f(0.0));
}

fn oct_encode(n: vec3f) -> vec2f {
    let p = n.xy / (abs(n.x) + abs(n.y) + abs(n.z));
    return select((1.0 - abs(p.yx)) * oct_sign(p), p, n.z >= 0.0);
}

fn oct_decode(e: vec2f) -> vec3f {
    let z = 1.0 - abs(e.x) - abs(e.y);
    let xy = select((1.0 - abs(e.yx)) * oct_sign(e), e, z >= 0.0);
    return normalize(vec3f(xy, z));
}

// A motion vector (frame.motion), pixels, x right, y down: from this frame's pixel to where the
// same surface was last frame (previous minus current, FidelityFX FSR 2's convention), TAA's
// jitter taken out. `frag`: the pixel's @builtin(position).xy; `prev_clip`: the surface in last
// frame's unjittered clip space (w <= 0, behind last frame's camera: no motion known, 0).
fn motion_pixels(view: View, frag: vec2f, prev_clip: vec4f) -> vec2f {
    if (prev_clip.w <= 0.0) {
        return vec2f(0.0);
    }
    let ndc = prev_clip.xy / prev_clip.w;
    let prev = vec2f(0.5 + 0.5 * ndc.x, 0.5 - 0.5 * ndc.y) * view.size.xy;
    return prev - (frag - view.jitter.xy);
}
