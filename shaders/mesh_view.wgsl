// Bind group 0 of every pass that draws the scene's instances (MeshPipelines.layout_view,
// engine/passes/mesh.py): the view uniform and the scene's per-instance tables.
// #include "frame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> transforms: array<mat4x4f>;
@group(0) @binding(2) var<storage, read> colors: array<vec4f>;
@group(0) @binding(3) var<storage, read> remap: array<u32>;  // remap slot -> scene row
// #if OUT_MOTION
@group(0) @binding(4) var<storage, read> prev_transforms: array<mat4x4f>;  // last frame's
// #endif
