// Flame chart draw: one instanced draw of rounded rectangles (6 vertices per Inst), edges
// and corners antialiased from a signed distance, labels from the baked 8x8 font.
// Blend operation max (src, dst factors one): overlapping fringes of instances compacted in
// any order give the same pixel (the select pass appends with atomics), so the picture is
// deterministic; over the dark chart background it looks like "over" blending.
// #include "flame_common.wgsl"

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> insts: array<Inst>;
@group(0) @binding(2) var<storage, read> names: array<vec4<u32>>;  // colour, flags, off, len
@group(0) @binding(3) var<storage, read> chars: array<u32>;        // 4 ASCII bytes per word
@group(0) @binding(4) var<storage, read> font: array<u32>;         // 128x64 bits, MSB first

const AA: f32 = 1.0;        // quad inflation: the antialiasing margin, px
const RADIUS: f32 = 3.0;    // corner radius, px
const PAD: f32 = 3.0;       // label padding, px

struct VOut {
    @builtin(position) pos: vec4<f32>,
    @location(0) @interpolate(flat) rect: vec4<f32>,  // x0, y0, x1, y1 (output px)
    @location(1) @interpolate(flat) color: vec4<f32>, // linear RGB, alpha
    @location(2) @interpolate(flat) info: vec4<u32>,  // state bits, name, label len, text x
};

const S_HOVER: u32 = 1u;
const S_SELECTED: u32 = 2u;
const S_SIBLING: u32 = 4u;
const S_DIM: u32 = 8u;
const S_COLLAPSED: u32 = 16u;

fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    let lo = c / 12.92;
    let hi = pow((c + 0.055) / 1.055, vec3<f32>(2.4));
    return select(hi, lo, c <= vec3<f32>(0.04045));
}

fn unpack_rgba(v: u32) -> vec4<f32> {
    let c = vec4<f32>(f32(v & 255u), f32((v >> 8u) & 255u), f32((v >> 16u) & 255u),
                      f32(v >> 24u)) / 255.0;
    return vec4<f32>(srgb_to_linear(c.rgb), c.a);
}

@vertex
fn vs(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VOut {
    let r = insts[ii];
    var st = 0u;
    if (r.span == view.hover) { st |= S_HOVER; }
    if (r.span == view.selected) { st |= S_SELECTED; }
    if (r.name == view.selected_name && r.span != view.selected) { st |= S_SIBLING; }
    if ((r.flags & INST_DIM) != 0u) { st |= S_DIM; }
    if ((r.flags & INST_COLLAPSED) != 0u) { st |= S_COLLAPSED; }
    // a gap of up to 1 px between neighbours, shrinking to none for a 1 px span
    let inset = select(clamp((r.w - 1.0) * 0.5, 0.0, 0.5), 0.0, (st & S_COLLAPSED) != 0u);
    let x0 = view.origin_x + r.x0 + inset;
    let x1 = view.origin_x + r.x0 + r.w - inset;
    let y0 = view.origin_y + r.y0;
    let y1 = y0 + view.row_px - 1.0;
    let corner = vec2<f32>(f32(vi == 1u || vi == 2u || vi == 4u), f32(vi >= 2u && vi <= 4u));
    // a collapsed column is whole pixels with square corners: its quad covers exactly the
    // pixels it colours (1 x row_px-1, not 3 x row_px+1: zoomed out most instances are these)
    let aa = select(AA, 0.0, (st & S_COLLAPSED) != 0u);
    let lo = vec2<f32>(max(x0, view.origin_x - aa), y0) - aa;
    let hi = vec2<f32>(min(x1, view.origin_x + view.width + aa), y1) + aa;
    let p = mix(lo, hi, corner);
    var o: VOut;
    o.pos = vec4<f32>(p.x / view.out_w * 2.0 - 1.0, 1.0 - p.y / view.out_h * 2.0, 0.0, 1.0);
    o.rect = vec4<f32>(x0, y0, x1, y1);
    let info = names[r.name];
    o.color = unpack_rgba(info.x);
    // label: whole glyphs that fit between the visible left edge and the right edge
    let gw = 8.0 * view.glyph_px;
    let tx = floor(max(x0, view.origin_x) + PAD);
    let fit = u32(max(floor((x1 - PAD - tx) / gw), 0.0));
    let n = select(min(info.w, fit), 0u, (st & S_COLLAPSED) != 0u);
    o.info = vec4<u32>(st, r.name, n, u32(tx));
    return o;
}

fn glyph_bit(code: u32, bx: u32, by: u32) -> bool {
    let g = code - 32u;
    let ax = (g % 16u) * 8u + bx;
    let ay = (g / 16u) * 8u + by;
    let byte_i = (ay * 128u + ax) >> 3u;
    let b = (font[byte_i >> 2u] >> ((byte_i & 3u) * 8u)) & 255u;
    return ((b >> (7u - (ax & 7u))) & 1u) != 0u;
}

fn label_on(p: vec2<f32>, rect: vec4<f32>, info: vec4<u32>) -> bool {
    let gs = view.glyph_px;
    let gw = 8.0 * gs;
    let ty = rect.y + floor((view.row_px - 1.0 - gw) * 0.5);
    let dx = p.x - f32(info.w);
    let dy = p.y - ty;
    if (dx < 0.0 || dy < 0.0 || dy >= gw) { return false; }
    let k = u32(dx / gw);
    if (k >= info.z) { return false; }
    let at = names[info.y].z + k;
    let code = (chars[at >> 2u] >> ((at & 3u) * 8u)) & 255u;
    if (code < 33u || code > 126u) { return false; }
    return glyph_bit(code, u32(dx / gs) % 8u, u32(dy / gs));
}

// Signed distance to a rounded box (Inigo Quilez, "2D distance functions").
fn sd_round_box(q: vec2<f32>, half: vec2<f32>, r: f32) -> f32 {
    let d = abs(q) - half + r;
    return length(max(d, vec2<f32>(0.0))) + min(max(d.x, d.y), 0.0) - r;
}

@fragment
fn fs(v: VOut) -> @location(0) vec4<f32> {
    let p = v.pos.xy;
    if (p.x < view.origin_x || p.x >= view.origin_x + view.width ||
        p.y < view.origin_y || p.y >= view.origin_y + view.height) { discard; }
    let half = max((v.rect.zw - v.rect.xy) * 0.5, vec2<f32>(0.0));
    let c = (v.rect.xy + v.rect.zw) * 0.5;
    let st = v.info.x;
    let r = select(min(RADIUS, min(half.x, half.y)), 0.0, (st & S_COLLAPSED) != 0u);
    let d = sd_round_box(p - c, half, r);
    let cov = clamp(0.5 - d, 0.0, 1.0);
    if (cov <= 0.0) { discard; }
    var rgb = v.color.rgb;
    var a = 1.0;
    if ((st & S_COLLAPSED) != 0u) { rgb *= 0.55; }          // the collapsed mark: darker
    if ((st & S_HOVER) != 0u) { rgb = mix(rgb, vec3<f32>(1.0), 0.45); }
    if ((st & S_DIM) != 0u) {
        let grey = dot(rgb, vec3<f32>(0.2126, 0.7152, 0.0722));
        rgb = vec3<f32>(grey) * 0.18;
    }
    if (v.info.z > 0u && label_on(p, v.rect, v.info)) {
        let lum = dot(rgb, vec3<f32>(0.2126, 0.7152, 0.0722));
        rgb = select(vec3<f32>(0.95), vec3<f32>(0.0), lum > 0.25);
    }
    if ((st & S_SELECTED) != 0u && d > -2.0) {
        rgb = vec3<f32>(1.0, 1.0, 0.1);                          // selected: 2 px yellow rim
    } else if ((st & S_SIBLING) != 0u && d > -1.0) {
        rgb = vec3<f32>(0.1, 0.9, 1.0);                          // same name: 1 px cyan rim
    } else if ((st & S_HOVER) != 0u && d > -1.0) {
        rgb = vec3<f32>(1.0);
    }
    return vec4<f32>(rgb * cov * a, cov * a);
}

// Background of the chart area (live mode draws over the frame): one quad, "over" blending.
@vertex
fn vs_panel(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4<f32> {
    let corner = vec2<f32>(f32(vi == 1u || vi == 2u || vi == 4u), f32(vi >= 2u && vi <= 4u));
    let p = vec2<f32>(view.origin_x, view.origin_y) + corner * vec2<f32>(view.width, view.height);
    return vec4<f32>(p.x / view.out_w * 2.0 - 1.0, 1.0 - p.y / view.out_h * 2.0, 0.0, 1.0);
}

@fragment
fn fs_panel() -> @location(0) vec4<f32> {
    return vec4<f32>(0.008, 0.009, 0.012, 0.95);
}

// The time ruler and grid: one quad over the ruler band and the chart, "over" blending,
// drawn before the spans. Majors: a full-height tick in the band and a faint grid line down
// the chart; minors: short ticks at the band's bottom.
@vertex
fn vs_ruler(@builtin(vertex_index) vi: u32) -> @builtin(position) vec4<f32> {
    let corner = vec2<f32>(f32(vi == 1u || vi == 2u || vi == 4u), f32(vi >= 2u && vi <= 4u));
    let lo = vec2<f32>(view.origin_x, view.origin_y - view.ruler_px);
    let p = lo + corner * vec2<f32>(view.width, view.height + view.ruler_px);
    return vec4<f32>(p.x / view.out_w * 2.0 - 1.0, 1.0 - p.y / view.out_h * 2.0, 0.0, 1.0);
}

fn tick_dist(x: f32, spacing: f32) -> f32 {
    // px from x (chart px) to the nearest tick of this spacing
    let d = (x - view.tick_x0) / spacing;
    return abs(d - round(d)) * spacing;
}

@fragment
fn fs_ruler(@builtin(position) pos: vec4<f32>) -> @location(0) vec4<f32> {
    let x = floor(pos.x) - view.origin_x;  // pixel column, so a tick is one whole column
    let major = tick_dist(x, view.tick_px) < 0.5;
    let minor = tick_dist(x, view.tick_px / f32(max(view.minors, 1u))) < 0.5;
    let in_band = pos.y < view.origin_y;
    let band_y = pos.y - (view.origin_y - view.ruler_px);  // 0 at the band's top
    if (in_band) {
        var c = vec3<f32>(0.010, 0.011, 0.016);
        if (major) { c = vec3<f32>(0.55); }
        else if (minor && band_y >= view.ruler_px * 0.65) { c = vec3<f32>(0.25); }
        if (band_y >= view.ruler_px - 1.0) { c = vec3<f32>(0.18); }  // the band's base line
        return vec4<f32>(c, 1.0);
    }
    if (major) { return vec4<f32>(vec3<f32>(0.045), 1.0); }
    discard;
    return vec4<f32>(0.0);
}
