// Flame chart selection: what is in view, the pixel-column level of detail, picking.
// Numpy twin: engine/flamechart/reference.py (tested span by span). Dispatch order, one
// compute pass: reset (cells), classify (spans), resolve (spans), compact (cells),
// finish (1 thread), pick (indirect, drawn instances). The store is split into chunks (the
// binding size limit): classify, resolve and compact run once per chunk, bound as `words`
// with its first global index in `chunk`; span indices everywhere else are global.
// The same dispatches read either the spans (5 words each) or one level-of-detail level
// (engine/flamechart/lod.py: 6 words, the 6th the index of the real span it stands for), as
// `chunk.stride` says; indices in cells are then the level's, and instances name real spans.
// #include "flame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> words: array<u32>;       // this chunk's entries
@group(0) @binding(2) var<storage, read> names: array<vec4<u32>>;  // colour, flags, label
@group(0) @binding(3) var<storage, read> lane_row: array<i32>;     // first row; < 0 hidden
@group(0) @binding(4) var<storage, read_write> cell_key: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> cell_idx: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> insts: array<Inst>;
// state: 1 instances (clamped to the capacity by finish), 7 instances wanted, 8 picked span
@group(0) @binding(7) var<storage, read_write> state: array<atomic<u32>, 16>;
// indirect arguments, bound only for finish (a buffer read as indirect arguments may not be
// bound writable in the same dispatch): 0..3 draw, 4..6 pick dispatch
@group(1) @binding(0) var<storage, read_write> args: array<u32, 8>;
// entries first .. count-1 of the chunk are dispatched (the blocks near the view)
struct Chunk { base: u32, count: u32, stride: u32, first: u32, };
@group(0) @binding(8) var<uniform> chunk: Chunk;

const WG: u32 = 256u;

fn span_at(i: u32) -> Span {
    let b = (i - chunk.base) * chunk.stride;
    return Span(words[b], words[b + 1u], bitcast<f32>(words[b + 2u]), words[b + 3u],
                words[b + 4u]);
}

// The real span entry i stands for: itself (spans), or a level's representative.
fn span_id(i: u32) -> u32 {
    if (chunk.stride == 5u) { return i; }
    return words[(i - chunk.base) * chunk.stride + 5u];
}

fn span_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;  // 2D grid past 65535 workgroups (chunk-local)
}

// (start - view start) in ns as f32: exact 64-bit subtraction in two words, then one
// rounding; frac_ns keeps the sub-ns part of the view start.
fn rel_ns(lo: u32, hi: u32) -> f32 {
    let dlo = lo - view.start_lo;
    let borrow = select(0i, 1i, lo < view.start_lo);
    let dhi = bitcast<i32>(hi) - bitcast<i32>(view.start_hi) - borrow;
    let r = f32(dhi) * 4294967296.0 + f32(dlo);
    return r - view.frac_ns;
}

struct Placed {
    ok: bool,
    row: i32,        // screen row (0 .. rows-1)
    x0: f32,
    w: f32,
    key: u32,        // (match << 31) | bits(dur): the longest wins, search matches first
    flags: u32,
};

fn place(i: u32) -> Placed {
    var p: Placed;
    p.ok = false;
    let s = span_at(i);
    let lane = s.lane_depth >> 16u;
    if (lane >= view.lanes) { return p; }
    let first = lane_row[lane];
    if (first < 0) { return p; }
    p.row = first + i32(s.lane_depth & 0xFFFFu) - view.first_row;
    if (p.row < 0 || p.row >= i32(view.rows)) { return p; }
    let rel = rel_ns(s.start_lo, s.start_hi);
    if (rel + s.dur <= 0.0) { return p; }
    p.x0 = rel * view.px_per_ns;
    if (p.x0 >= view.width) { return p; }
    p.w = s.dur * view.px_per_ns;
    p.flags = 0u;
    var m = 0u;
    if (view.search_on != 0u) {
        if ((names[s.name].y & NAME_MATCH) != 0u) {
            p.flags = INST_MATCH;
            m = 1u;
        } else {
            p.flags = INST_DIM;
        }
    }
    p.key = (m << 31u) | bitcast<u32>(s.dur);
    p.ok = true;
    return p;
}

fn cell_of(p: Placed) -> u32 {
    let col = clamp(i32(floor(p.x0)), 0, i32(view.cols) - 1);
    return u32(p.row) * view.cols + u32(col);
}

fn row_top(lane_depth: u32) -> f32 {
    let r = lane_row[lane_depth >> 16u] + i32(lane_depth & 0xFFFFu);
    return f32(r) * view.row_px - view.scroll_px;
}

fn emit(i: u32, x0: f32, w: f32, flags: u32) {
    let k = atomicAdd(&state[1], 1u);
    if (k >= view.capacity) { return; }
    let s = span_at(i);
    insts[k] = Inst(x0, w, row_top(s.lane_depth), span_id(i), s.name, flags, s.lane_depth, 0u);
}

@compute @workgroup_size(256)
fn reset(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    if (c == 0u) {
        for (var k = 0u; k < 16u; k++) { atomicStore(&state[k], 0u); }
        atomicStore(&state[8], NONE);
    }
    if (c < view.cols * view.rows) {
        atomicStore(&cell_key[c], 0u);
        atomicStore(&cell_idx[c], NONE);
    }
}

@compute @workgroup_size(256)
fn classify(@builtin(global_invocation_id) gid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = chunk.first + span_index(gid, nwg);
    if (j >= chunk.count) { return; }
    let i = chunk.base + j;
    let p = place(i);
    if (!p.ok) { return; }
    if (p.w >= 1.0) {
        emit(i, p.x0, p.w, p.flags);  // never dropped: at least a pixel wide
    } else {
        let c = cell_of(p);
        // a plain load first: once a long span holds the cell, most bids lose without an
        // atomic (neighbouring threads bid for the same cell: spans are sorted by start)
        if (p.key > atomicLoad(&cell_key[c])) {
            atomicMax(&cell_key[c], p.key);
        }
    }
}

@compute @workgroup_size(256)
fn resolve(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = chunk.first + span_index(gid, nwg);
    if (j >= chunk.count) { return; }
    let i = chunk.base + j;
    let p = place(i);
    if (!p.ok || p.w >= 1.0) { return; }
    let c = cell_of(p);
    if (atomicLoad(&cell_key[c]) == p.key) {
        atomicMin(&cell_idx[c], i);  // equal keys: the lowest index, so the choice is stable
    }
}

@compute @workgroup_size(256)
fn compact(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    if (c >= view.cols * view.rows) { return; }
    let i = atomicLoad(&cell_idx[c]);
    if (i == NONE || i < chunk.base || i - chunk.base >= chunk.count) { return; }
    let p = place(i);
    emit(i, f32(c % view.cols), 1.0, p.flags | INST_COLLAPSED);
}

@compute @workgroup_size(1)
fn finish() {
    let wanted = atomicLoad(&state[1]);
    let n = min(wanted, view.capacity);
    atomicStore(&state[7], wanted);
    atomicStore(&state[1], n);
    args = array<u32, 8>(6u, n, 0u, 0u, (n + 63u) / 64u, 1u, 1u, 0u);
}

// Which drawn span is under the cursor (chart px): the same rectangles the draw shows.
@compute @workgroup_size(64)
fn pick(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if (k >= atomicLoad(&state[1])) { return; }
    let r = insts[k];
    let cx = view.cursor_x;
    let cy = view.cursor_y;
    if (cx >= r.x0 && cx < r.x0 + max(r.w, 1.0) && cy >= r.y0 && cy < r.y0 + view.row_px) {
        atomicMin(&state[8], r.span);
    }
}
