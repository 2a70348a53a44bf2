// s06's particles, shared by the simulation (s06_particles_sim.wgsl) and the draw
// (s06_particles_draw.wgsl): the particle, the simulation's uniform and what follows from a
// particle's emission serial alone (its launch, lifetime, size and colour), so none of it is
// stored. tests/test_s06.py re-implements these in numpy.

// One particle: 32 bytes in the particle pool (particles.pool).
struct Particle {
    pos: vec3f,   // world position, m
    age: f32,     // seconds since its emission
    vel: vec3f,   // m/s
    serial: u32,  // the how-manieth particle emitted: its random numbers
};

// The simulation's parameters (samples/s06_particles.py ParticleSystem.sim_bytes).
struct Sim {
    emitter: vec4f,  // xyz: the emitter's centre (world, m); w: its disc's radius (m)
    launch: vec4f,   // xyz: launch velocity (m/s); w: spread, the outward speed (m/s)
    wind: vec4f,     // xyz: the steady wind (m/s); w: swirl, the curl field's speed (m/s)
    motion: vec4f,   // x: the step dt (s); y: drag (1/s); z: gravity (m/s^2); w: time (s)
    life: vec4f,     // x: shortest lifetime (s); y: lifetime span (s); z: restitution; w: friction
    shape: vec4f,    // x: smallest radius (m); y: radius span (m); z: swirl frequency (1/m); w: ground y
    counts: vec4u,   // x: to emit this frame; y: capacity; z: the seed, hashed; w: alive list parity
};

// PCG hash (Jarzynski & Olano 2020, "Hash Functions for GPU Rendering", JCGT 9(3)).
fn pcg(v: u32) -> u32 {
    let s = v * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// The particle's hash: every random number of its life comes from it.
fn particle_key(serial: u32, seed: u32) -> u32 {
    return pcg(serial ^ seed);
}

// Uniform in [0, 1) with 24 bits (exact in f32): the particle's k-th random number.
fn rand(key: u32, k: u32) -> f32 {
    return f32(pcg(key + k) >> 8u) * (1.0 / 16777216.0);
}

// Lifetime in 256 steps of the span: a whole number of 1/256ths, exact in f32, so the frame a
// particle dies in is exact too.
fn lifetime(sim: Sim, key: u32) -> f32 {
    return sim.life.x + sim.life.y * (f32(pcg(key + 7u) & 255u) * (1.0 / 256.0));
}

fn radius(sim: Sim, key: u32) -> f32 {
    return sim.shape.x + sim.shape.y * rand(key, 8u);
}
