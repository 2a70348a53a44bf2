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
};

fn sky_color(view: View, dir: vec3f) -> vec3f {
    let up = clamp(dir.y, -1.0, 1.0);
    var c = mix(view.sky_horizon.rgb, view.sky_zenith.rgb, pow(max(up, 0.0), 0.45));
    c = mix(c, view.ground.rgb * 0.6 + view.sky_horizon.rgb * 0.4, smoothstep(0.0, -0.25, up));
    let s = max(dot(dir, view.sun_dir.xyz), 0.0);
    c += view.sun_color.rgb * (pow(s, 900.0) * 4.0 + pow(s, 12.0) * 0.06);
    return c;
}
