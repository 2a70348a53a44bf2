// Known-answer shaders for statement cost by ablation (tools/ablate.py, benchmark "ablate").
// chain(x, n) is n dependent multiply-adds, so a statement's cost is proportional to its n.
//   cs_pair / fs_pair: two statements, 4:1 (heavy then light).
//   cs_ladder: one loop body of four statements, 1:2:4:8.
//   cs_dead: a heavy `let` whose value only a later cheap store uses (the dead-code trap: a
//            bare early return lets the compiler delete it and bill the store).
// Every pair/ladder statement stores its own result: a cut after it cannot let the compiler drop it.

struct Params {
    n: u32,      // multiply-adds per unit of work
    reps: u32,   // cs_ladder: loop trip count
    width: u32,  // fs_pair: target width in pixels
    _pad: u32,
};  // 16 bytes

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

@compute @workgroup_size(64)
fn cs_pair(@builtin(global_invocation_id) id: vec3u) {
    a[id.x] = chain(a[id.x], 4u * p.n);
    b[id.x] = chain(b[id.x], p.n);
}

@fragment
fn fs_pair(@builtin(position) pos: vec4f) -> @location(0) vec4f {
    let i = u32(pos.y) * p.width + u32(pos.x);
    a[i] = chain(a[i], 4u * p.n);
    b[i] = chain(b[i], p.n);
    return vec4f(0.0);
}

@compute @workgroup_size(64)
fn cs_ladder(@builtin(global_invocation_id) id: vec3u) {
    for (var r = 0u; r < p.reps; r++) {
        a[id.x] = chain(a[id.x], p.n);
        b[id.x] = chain(b[id.x], 2u * p.n);
        c[id.x] = chain(c[id.x], 4u * p.n);
        d[id.x] = chain(d[id.x], 8u * p.n);
    }
}

@compute @workgroup_size(64)
fn cs_dead(@builtin(global_invocation_id) id: vec3u) {
    let x = chain(a[id.x], 8u * p.n);
    b[id.x] = x;
}
