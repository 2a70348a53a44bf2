// The receiver's cascade (engine/passes/shadow.py; numpy twin cascade_weights): no bindings
// of its own, so both the shading (shadow_cascades.wgsl) and the cascades debug view
// (engine/tools/views/view.wgsl), which binds no shadow sampler, make the same choice.
// Expects the frame's `view` uniform (cascade_split, cascade_params).

// The cascade of view depth d (the first whose split is not below it; the last one beyond
// every split) and the weight of the next cascade: 0 before the band at the far end of the
// cascade (cascade_params.y of its depth range), rising linearly to 1 at its split.
struct CascadePick {
    c: u32,
    next: f32,
};

fn cascade_pick(d: f32) -> CascadePick {
    let count = u32(view.cascade_params.x);
    var c = 0u;
    while (c + 1u < count && d > view.cascade_split[c]) {
        c++;
    }
    if (c + 1u >= count) {
        return CascadePick(c, 0.0);
    }
    let end = view.cascade_split[c];
    let start = select(0.0, view.cascade_split[max(c, 1u) - 1u], c > 0u);
    let band = view.cascade_params.y * (end - start);
    return CascadePick(c, clamp((d - (end - band)) / max(band, 1e-6), 0.0, 1.0));
}
