// s02: adjustable GPU work. "Work" iterates a complex quadratic map `iterations` times per
// cell of a grid and stores how fast it escapes; "Show" paints the grid full-screen.

struct Params {
    iterations: u32,
    grid: u32,      // cells per side
    time: f32,
    _pad: f32,
};  // 16 bytes

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> cells: array<f32>;

@compute @workgroup_size(8, 8)
fn cs_work(@builtin(global_invocation_id) id: vec3<u32>) {
    let n = params.grid;
    if (id.x >= n || id.y >= n) {
        return;
    }
    let uv = (vec2<f32>(id.xy) + 0.5) / f32(n);
    // A Julia set whose parameter circles with time. Every cell runs all iterations (an
    // escaped orbit is frozen, not exited) so the cost is exactly proportional to
    // `iterations`; the cell stores how many iterations its orbit stayed bounded.
    let a = 0.35 * params.time;
    let c = vec2<f32>(0.7885 * cos(a), 0.7885 * sin(a));
    var z = (uv - 0.5) * 3.0;
    var bounded = true;
    var count = 0u;
    for (var i = 0u; i < params.iterations; i++) {
        let next = vec2<f32>(z.x * z.x - z.y * z.y, 2.0 * z.x * z.y) + c;
        bounded = bounded && dot(next, next) <= 4.0;
        count += select(0u, 1u, bounded);
        z = select(z, next, bounded);
    }
    cells[id.y * n + id.x] = f32(count);
}

@group(0) @binding(2) var<storage, read> shown: array<f32>;

struct VsOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

@vertex
fn vs_show(@builtin(vertex_index) i: u32) -> VsOut {
    let p = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));  // fullscreen triangle
    var o: VsOut;
    o.pos = vec4<f32>(p * 2.0 - 1.0, 0.0, 1.0);
    o.uv = vec2<f32>(p.x, 1.0 - p.y);
    return o;
}

@fragment
fn fs_show(in: VsOut) -> @location(0) vec4<f32> {
    let n = params.grid;
    let cell = min(vec2<u32>(in.uv * f32(n)), vec2<u32>(n - 1u));
    let count = shown[cell.y * n + cell.x];  // iterations the orbit stayed bounded
    let t = clamp(log2(1.0 + count) / 6.0, 0.0, 1.0);
    let outside = mix(vec3<f32>(0.08, 0.05, 0.25), vec3<f32>(1.0, 0.8, 0.25), t);
    let never_escaped = count >= f32(params.iterations);
    return vec4<f32>(select(outside, vec3<f32>(0.02, 0.02, 0.04), never_escaped), 1.0);
}
