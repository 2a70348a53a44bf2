// Known-answer shaders for statement cost by ablation (tools/ablate.py, benchmark "ablate").
// chain(x, n) is n dependent multiply-adds, so a statement's cost is proportional to its n.
//   cs_pair / fs_pair: two statements, 4:1 (heavy then light).
//   cs_ladder: one loop body of four statements, 1:2:4:8.
//   cs_dead: a heavy `let` whose value only a later cheap store uses (the dead-code trap: a
//            bare early return lets the compiler delete it and bill the store).
// Every pair/ladder statement stores its own result: a cut after it cannot let the compiler drop it.
// Each trip count is its own uniform (n1 = n, n2 = 2n, n4 = 4n, n8 = 8n, set by the benchmark):
// written as `4u * p.n` the compiler knows a loop's count is a multiple of 4, unrolls it without
// a remainder and makes it cheaper per iteration than the `p.n` one (H200: the pair read 3.57).

struct Params {
    n1: u32,     // multiply-adds of one unit of work
    n2: u32,     // 2 units
    n4: u32,     // 4 units
    n8: u32,     // 8 units
    reps: u32,   // cs_ladder: loop trip count
    width: u32,  // fs_pair: target width in pixels
    _pad0: u32,
    _pad1: u32,
};  // 32 bytes

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> d: array<f32>;

fn chain(x0: f32, n: u32) -> f32 {
    var x = x0;
    for (var i = 0u; i < n; i++) {
        x = x * 0.999 + 0.5;
    }
    return x;
}

// The trailing store keeps the pair off the entry point's last position: on the H200 the
// compiler makes the last top-level loop of an entry point about 34% slower than the same loop
// elsewhere (measured: two equal chains read 0.96 : 1.29 ms, the uninstrumented shader agreeing),
// which ablation reports truthfully but which would make "4:1" untrue of the compiled code.
@compute @workgroup_size(64)
fn cs_pair(@builtin(global_invocation_id) id: vec3u) {
    a[id.x] = chain(a[id.x], p.n4);
    b[id.x] = chain(b[id.x], p.n1);
    c[id.x] = 1.0;
}

@fragment
fn fs_pair(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    let i = u32(pos.y) * p.width + u32(pos.x);
    a[i] = chain(a[i], p.n4);
    b[i] = chain(b[i], p.n1);
    return vec4f(0.0);
}

@compute @workgroup_size(64)
fn cs_ladder(@builtin(global_invocation_id) id: vec3u) {
    for (var r = 0u; r < p.reps; r++) {
        a[id.x] = chain(a[id.x], p.n1);
        b[id.x] = chain(b[id.x], p.n2);
        c[id.x] = chain(c[id.x], p.n4);
        d[id.x] = chain(d[id.x], p.n8);
    }
}

@compute @workgroup_size(64)
fn cs_dead(@builtin(global_invocation_id) id: vec3u) {
    let x = chain(a[id.x], p.n8);
    b[id.x] = x;
}
