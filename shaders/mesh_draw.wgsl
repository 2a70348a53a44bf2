// Bind group 1 of the indirect mesh draws (MeshPipelines.layout_draw, engine/passes/mesh.py).

struct Draw {
    base: u32,  // remap offset added to instance_index (0 when first_instance does it)
    cascade: u32,  // the shadow cascade a shadow region's draws render (0 elsewhere)
    pad1: u32,
    pad2: u32,
};
@group(1) @binding(0) var<uniform> draw: Draw;
