// Debug lines from any subsystem (engine/tools/lines/passes.py): one instanced draw of
// 2-vertex line-list instances, a segment per instance read from a storage buffer.
// Depth-tested against the frame's reverse-Z depth (greater-equal, no writes); a segment
// flagged "on top" is moved to the near plane (clip z = w: depth 1), which passes every test.

struct Segment {
    a: vec4f,      // xyz: world start; w: 1 = on top, 0 = depth-tested
    b: vec4f,      // xyz: world end
    color: vec4f,  // linear RGBA written to the output
};

struct Lines {
    view_proj: mat4x4f,  // world -> clip of the camera rendering the frame
};

@group(0) @binding(0) var<uniform> lines: Lines;
@group(0) @binding(1) var<storage, read> segments: array<Segment>;

struct VsOut {
    @builtin(position) clip: vec4f,
    @location(0) @interpolate(flat) color: vec4f,
};

@vertex
fn vs_lines(@builtin(vertex_index) v: u32, @builtin(instance_index) i: u32) -> VsOut {
    let s = segments[i];
    var c = lines.view_proj * vec4f(select(s.a.xyz, s.b.xyz, v == 1u), 1.0);
    if (s.a.w > 0.5) {
        c.z = c.w;
    }
    var out: VsOut;
    out.clip = c;
    out.color = s.color;
    return out;
}

@fragment
fn fs_lines(in: VsOut) -> @location(0) vec4f {
    return in.color;
}
