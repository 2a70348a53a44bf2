// s01: instanced boxes on a ground plane, lit by a sun (Lambert + hemisphere ambient + Blinn).
struct Frame {
    view_proj: mat4x4f,
    eye: vec4f,          // xyz: camera position
    sun_dir: vec4f,      // xyz: direction towards the sun (normalised)
    time: vec4f,         // x: seconds
};
@group(0) @binding(0) var<uniform> frame: Frame;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) world: vec3f,
    @location(1) normal: vec3f,
    @location(2) albedo: vec3f,
};

fn rot_y(a: f32) -> mat3x3f {
    let c = cos(a); let s = sin(a);
    return mat3x3f(vec3f(c, 0.0, -s), vec3f(0.0, 1.0, 0.0), vec3f(s, 0.0, c));
}
fn rot_x(a: f32) -> mat3x3f {
    let c = cos(a); let s = sin(a);
    return mat3x3f(vec3f(1.0, 0.0, 0.0), vec3f(0.0, c, s), vec3f(0.0, -s, c));
}

@vertex
fn vs_main(@location(0) pos: vec3f, @location(1) nrm: vec3f,
           @builtin(instance_index) inst: u32) -> VsOut {
    var out: VsOut;
    if (inst == 0u) {  // ground plane
        out.world = pos * 8.0;
        out.normal = nrm;
        out.albedo = vec3f(0.45, 0.47, 0.42);
    } else {           // 3x3 boxes, each spinning at its own rate
        let i = inst - 1u;
        let cell = vec2f(f32(i % 3u), f32(i / 3u)) - vec2f(1.0);
        let t = frame.time.x * (0.6 + 0.15 * f32(i));
        let r = rot_y(t) * rot_x(0.5 * t);
        let bob = 0.25 * sin(frame.time.x * 1.3 + f32(i));
        out.world = r * pos * 0.8 + vec3f(cell.x * 2.2, 1.1 + bob, cell.y * 2.2);
        out.normal = r * nrm;
        let hue = f32(i) / 9.0 * 6.2831;
        out.albedo = 0.5 + 0.4 * cos(vec3f(hue, hue + 2.1, hue + 4.2));
    }
    out.clip = frame.view_proj * vec4f(out.world, 1.0);
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4f {
    let n = normalize(in.normal);
    let l = frame.sun_dir.xyz;
    let v = normalize(frame.eye.xyz - in.world);
    let h = normalize(l + v);
    let diffuse = max(dot(n, l), 0.0);
    let spec = pow(max(dot(n, h), 0.0), 48.0) * 0.35;
    let sky = mix(vec3f(0.18, 0.16, 0.14), vec3f(0.35, 0.45, 0.65), 0.5 + 0.5 * n.y);
    let sun = vec3f(1.0, 0.92, 0.8) * 2.2;
    let color = in.albedo * (sky + sun * diffuse) + sun * spec * step(0.0, diffuse);
    // Reinhard: keep highlights from clipping; the target encodes sRGB itself.
    return vec4f(color / (1.0 + color), 1.0);
}
