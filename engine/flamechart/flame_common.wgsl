// Shared by flame_select.wgsl and flame_draw.wgsl (engine/inspect). Units: ns, pixels.

// One span of the store: 20 bytes (engine/flamechart/spans.py pack_spans).
struct Span {
    start_lo: u32,     // int64 ns since the store's origin, low word
    start_hi: u32,     // high word (two's complement)
    dur: f32,          // ns
    lane_depth: u32,   // lane << 16 | depth
    name: u32,
};

// One drawn rectangle: 32 bytes, written by the select pass, read by the draw and the pick.
struct Inst {
    x0: f32,           // left edge, px from the chart's left edge
    w: f32,            // width, px (1 for a collapsed pixel column)
    y0: f32,           // top edge, px from the chart's top edge
    span: u32,         // index in the store
    name: u32,
    flags: u32,        // INST_* bits
    lane_depth: u32,
    pad: u32,
};

const INST_COLLAPSED: u32 = 1u;  // the longest of the sub-pixel spans in its pixel column
const INST_MATCH: u32 = 2u;      // its name matches the search
const INST_DIM: u32 = 4u;        // a search is on and it does not match
const NAME_MATCH: u32 = 1u;
const NONE: u32 = 0xFFFFFFFFu;

// 128 bytes (a multiple of 16); packed by engine/flamechart/select.py view_uniform. The ruler:
// first major tick at chart x tick_x0, every tick_px, `minors` subdivisions, a band of
// ruler_px above the chart (0: no ruler).
struct View {
    start_lo: u32, start_hi: u32, frac_ns: f32, px_per_ns: f32,
    width: f32, height: f32, origin_x: f32, origin_y: f32,
    row_px: f32, scroll_px: f32, first_row: i32, count: u32,
    cols: u32, rows: u32, lanes: u32, capacity: u32,
    cursor_x: f32, cursor_y: f32, hover: u32, selected: u32,
    selected_name: u32, search_on: u32, glyph_px: f32, out_w: f32,
    out_h: f32, tick_x0: f32, tick_px: f32, ruler_px: f32,
    minors: u32, pad0: u32, pad1: u32, pad2: u32,
};
