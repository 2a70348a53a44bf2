// s06's particles in compute, one frame (the pass Particles.Simulate, a dispatch each):
//   begin     one thread: last frame's survivors become this frame's alive list; as many
//             particles as asked for and as the dead list has free slots are emitted
//   emit      one thread a new particle: a slot popped off the dead list, appended to the
//             alive list, initialised from its serial number
//   simulate  one thread an alive particle: gravity, drag towards the air's velocity (a
//             steady wind plus a curl field), the ground plane, ageing; then killed (its slot
//             pushed on the dead list) or kept (compacted into the outgoing alive list), and
//             a kept one tested against the view frustum: drawn (its depth and slot appended
//             to the sort's keys and values) or culled
//   finish    one thread: the indirect draw's instance count is the drawn count
// Lists and counters are appended per workgroup: local atomics, then one global atomicAdd
// per list and counter per workgroup (the culler's pattern). Emission and simulation are
// dispatched indirectly, sized by what begin found, so the CPU records the same commands
// whatever the counts.
// #include "s06_particles_common.wgsl"
// #include "frame_common.wgsl"

const WG: u32 = 64u;

// The counter block "particles" (engine/counters.py reads these names): this frame's
const C_ALIVE: u32 = 0u;    // particles alive after the step (emitted + last frame's - killed)
const C_EMITTED: u32 = 1u;  // new particles
const C_KILLED: u32 = 2u;   // particles that reached their lifetime
const C_CULLED: u32 = 3u;   // alive particles outside the view frustum (not drawn)
const C_DRAWN: u32 = 4u;    // alive particles inside it: sorted and drawn
const C_REFUSED: u32 = 5u;  // emissions asked for but refused: no free slot (the pool is full)
const COUNTERS: u32 = 6u;

// What persists from frame to frame besides the particles and their lists.
struct State {
    dead: atomic<u32>,        // free slots on the dead list (lists[0 .. dead))
    alive_next: atomic<u32>,  // particles appended to the outgoing alive list
    alive: u32,               // this frame's incoming alive list before emission
    emit: u32,                // particles emitted this frame
    serial: u32,              // particles emitted since the start
    serial_base: u32,         // this frame's first emission serial
    count: u32,               // particles simulated this frame: alive + emit
    unused: u32,
};

// Indirect arguments: two dispatches and the draw (particles.args).
struct Args {
    emit: array<u32, 3>,      // byte 0
    simulate: array<u32, 3>,  // byte 12
    unused: array<u32, 2>,
    draw: array<u32, 4>,      // byte 32: 6 vertices, drawn instances, 0, 0
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> sim: Sim;
@group(0) @binding(2) var<storage, read_write> particles: array<Particle>;
@group(0) @binding(3) var<storage, read_write> state: State;
@group(0) @binding(4) var<storage, read_write> counters: array<atomic<u32>, COUNTERS>;
// [0, capacity): the dead list; then the two alive lists, incoming and outgoing by parity
@group(0) @binding(5) var<storage, read_write> lists: array<u32>;
@group(0) @binding(6) var<storage, read_write> keys: array<u32>;
@group(0) @binding(7) var<storage, read_write> values: array<u32>;
// Only begin and finish bind it: the other dispatches read it as their indirect arguments.
@group(1) @binding(0) var<storage, read_write> args: Args;

fn alive_in() -> u32 {
    return sim.counts.y * (1u + sim.counts.w);
}

fn alive_out() -> u32 {
    return sim.counts.y * (2u - sim.counts.w);
}

fn groups(n: u32) -> u32 {
    return (n + WG - 1u) / WG;
}

@compute @workgroup_size(1)
fn begin() {
    let alive = atomicLoad(&state.alive_next);
    atomicStore(&state.alive_next, 0u);
    let free = atomicLoad(&state.dead);
    let emit = min(sim.counts.x, free);
    atomicStore(&state.dead, free - emit);
    state.alive = alive;
    state.emit = emit;
    state.serial_base = state.serial;
    state.serial += emit;
    state.count = alive + emit;
    args.emit = array<u32, 3>(groups(emit), 1u, 1u);
    args.simulate = array<u32, 3>(groups(alive + emit), 1u, 1u);
    atomicStore(&counters[C_EMITTED], emit);
    atomicStore(&counters[C_REFUSED], sim.counts.x - emit);
}

// A new particle on the emitter's disc, thrown up (launch) and out from the centre (up to
// 0.8 to 1 x spread m/s horizontally, +- spread / 10 vertically): an umbrella of drops.
fn spawn(serial: u32) -> Particle {
    let k = particle_key(serial, sim.counts.z);
    let a = 6.2831853 * rand(k, 0u);
    let d = sim.emitter.w * sqrt(rand(k, 1u));  // uniform over the disc
    let out = vec2f(cos(a), sin(a));
    let h = sim.launch.w * (0.8 + 0.2 * rand(k, 2u));
    var p: Particle;
    p.pos = sim.emitter.xyz + vec3f(out.x * d, 0.0, out.y * d);
    p.vel = sim.launch.xyz + vec3f(out.x * h, sim.launch.w * 0.2 * (rand(k, 3u) - 0.5), out.y * h);
    p.age = 0.0;
    p.serial = serial;
    return p;
}

@compute @workgroup_size(WG)
fn emit(@builtin(global_invocation_id) id: vec3u) {
    let i = id.x;
    if (i >= state.emit) {
        return;
    }
    let slot = lists[atomicLoad(&state.dead) + i];  // popped by begin
    particles[slot] = spawn(state.serial_base + i);
    lists[alive_in() + state.alive + i] = slot;
}

// A divergence-free velocity field: the curl of the potential
// (sin(y + 1.3) cos z, sin(z + 2.1) cos x, sin(x + 0.7) cos y), written out (curl noise with
// a potential of sines: Bridson, Hourihan & Nordenstam 2007, "Curl-noise for procedural fluid
// flow", SIGGRAPH). Its speed is at most 2.
fn curl(q: vec3f) -> vec3f {
    return vec3f(
        -sin(q.x + 0.7) * sin(q.y) - cos(q.z + 2.1) * cos(q.x),
        -sin(q.y + 1.3) * sin(q.z) - cos(q.x + 0.7) * cos(q.y),
        -sin(q.z + 2.1) * sin(q.x) - cos(q.y + 1.3) * cos(q.z));
}

// The air's velocity at p: the steady wind and the swirl, drifting along x with time.
fn air(p: vec3f) -> vec3f {
    let q = p * sim.shape.z + vec3f(0.25 * sim.motion.w, 0.0, 0.0);
    return sim.wind.xyz + (0.5 * sim.wind.w) * curl(q);
}

// One semi-implicit Euler step: velocity first, then position; a sphere of radius r that
// reaches the ground is put back on it and bounces (restitution), its sliding slowed
// (friction).
fn advance(p_in: Particle, r: f32) -> Particle {
    var p = p_in;
    let dt = sim.motion.x;
    let accel = vec3f(0.0, -sim.motion.z, 0.0) + sim.motion.y * (air(p.pos) - p.vel);
    p.vel = p.vel + accel * dt;
    p.pos = p.pos + p.vel * dt;
    let floor = sim.shape.w + r;
    if (p.pos.y < floor) {
        p.pos.y = floor;
        if (p.vel.y < 0.0) {
            p.vel = vec3f(p.vel.x * sim.life.w, -p.vel.y * sim.life.z, p.vel.z * sim.life.w);
        }
    }
    p.age = p.age + dt;
    return p;
}

// The sphere against the view frustum's side and near planes (the rows of the jittered
// view-projection: Gribb & Hartmann 2001), as the culler tests instances.
fn in_frustum(c: vec3f, r: f32) -> bool {
    let m = transpose(view.view_proj);
    let planes = array<vec4f, 5>(m[3] + m[0], m[3] - m[0], m[3] + m[1], m[3] - m[1],
                                 m[3] - m[2]);
    for (var i = 0u; i < 5u; i++) {
        let p = planes[i];
        if (dot(p.xyz, c) + p.w < -r * length(p.xyz)) {
            return false;
        }
    }
    return true;
}

var<workgroup> w_alive: atomic<u32>;
var<workgroup> w_dead: atomic<u32>;
var<workgroup> w_drawn: atomic<u32>;
var<workgroup> w_culled: atomic<u32>;
var<workgroup> bases: vec3u;  // this workgroup's first entries: alive, dead, drawn

@compute @workgroup_size(WG)
fn simulate(@builtin(global_invocation_id) id: vec3u, @builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        atomicStore(&w_alive, 0u);
        atomicStore(&w_dead, 0u);
        atomicStore(&w_drawn, 0u);
        atomicStore(&w_culled, 0u);
    }
    workgroupBarrier();
    var slot = 0u;
    var fate = 0u;  // 0: no particle, 1: killed, 2: kept and culled, 3: kept and drawn
    var kept = 0u;  // its place in the workgroup's survivors
    var local = 0u;  // ... in its dead or drawn entries
    var key = 0u;
    if (id.x < state.count) {
        slot = lists[alive_in() + id.x];
        let k = particle_key(particles[slot].serial, sim.counts.z);
        let r = radius(sim, k);
        let p = advance(particles[slot], r);
        particles[slot] = p;
        if (p.age >= lifetime(sim, k)) {
            fate = 1u;
            local = atomicAdd(&w_dead, 1u);
        } else {
            kept = atomicAdd(&w_alive, 1u);
            if (in_frustum(p.pos, r)) {
                fate = 3u;
                local = atomicAdd(&w_drawn, 1u);
                // view depth, > 0 (a 0 key is the sort's padding): positive floats order
                // as their bits do
                let depth = -(view.view * vec4f(p.pos, 1.0)).z;
                key = bitcast<u32>(max(depth, 1e-20));
            } else {
                fate = 2u;
                atomicAdd(&w_culled, 1u);
            }
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let alive = atomicLoad(&w_alive);
        let dead = atomicLoad(&w_dead);
        let drawn = atomicLoad(&w_drawn);
        bases = vec3u(atomicAdd(&state.alive_next, alive), atomicAdd(&state.dead, dead),
                      atomicAdd(&counters[C_DRAWN], drawn));
        atomicAdd(&counters[C_ALIVE], alive);
        atomicAdd(&counters[C_KILLED], dead);
        atomicAdd(&counters[C_CULLED], atomicLoad(&w_culled));
    }
    workgroupBarrier();
    if (fate == 1u) {
        lists[bases.y + local] = slot;
    }
    if (fate >= 2u) {
        lists[alive_out() + bases.x + kept] = slot;
    }
    if (fate == 3u) {
        keys[bases.z + local] = key;
        values[bases.z + local] = slot;
    }
}

@compute @workgroup_size(1)
fn finish() {
    args.draw = array<u32, 4>(6u, atomicLoad(&counters[C_DRAWN]), 0u, 0u);
}
