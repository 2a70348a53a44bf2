// Bind group 4 of the lit mesh pipelines (Main, Transparent): the local lights
// (engine/lights/gpu.py light_layout; the same group is group 1 of Lights.Deferred).
// #include "lights_shade.wgsl"

@group(4) @binding(0) var<uniform> light_params: LightParams;
@group(4) @binding(1) var<storage, read> lights: array<Light>;
@group(4) @binding(2) var<storage, read> cluster_counts: array<u32>;
@group(4) @binding(3) var<storage, read> cluster_lights: array<u32>;
