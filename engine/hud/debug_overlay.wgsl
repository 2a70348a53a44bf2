// The debug HUD: instanced quads, one per rectangle of occupied cells (6 vertices per instance,
// the rectangle in cells as a per-instance vertex attribute), so only pixels the HUD covers are
// rasterised. Each pixel finds its HUD pixel (integer scale), its 8x8 cell, composites the cell
// background, the primitives that touch the cell and the glyph from the 1-bit font atlas.
// Three draws (engine/hud/grid.py DRAW_CLASSES): fs_text for cells with an opaque background
// and no primitive, written without blending; fs_main, unblended, for opaque cells with
// primitives; fs_main, blended, for the rest. The compute entry points at the end draw the
// same pixels without the rasteriser (DebugOverlayCompute). Colours are RGBA8 sRGB; on -srgb
// targets the output is converted to linear (256-entry table) so the stored bytes equal the
// requested ones.

struct Params {
    cols: u32,
    rows: u32,
    scale: u32,       // framebuffer pixels per HUD pixel
    srgb_target: u32, // 1: output linear colour (the target encodes sRGB)
    prim_count: u32,
    target_w: u32,    // framebuffer size in pixels: quad corners -> NDC
    target_h: u32,
    _pad0: u32,
};  // 32 bytes

struct Prim {
    kind: u32,
    color: u32,
    color2: u32,
    data: u32,         // offset into chart data (f32 words)
    rect: vec4<f32>,   // HUD pixels; meaning per kind
    params: vec4<f32>,
};  // 48 bytes

const PRIM_BAR: u32 = 1u;
const PRIM_PIE: u32 = 2u;
const PRIM_LINE: u32 = 3u;
const PRIM_CHART: u32 = 4u;
const TAU: f32 = 6.283185307179586;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> cells: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> prims: array<Prim>;
@group(0) @binding(3) var<storage, read> chart_data: array<f32>;
@group(0) @binding(4) var atlas: texture_2d<f32>;
// linear value of each 8-bit sRGB code (IEC 61966-2-1), computed in float64 on the CPU
@group(0) @binding(5) var<storage, read> srgb_lut: array<f32, 256>;

// Quad corner `i` (0..5, two triangles) of the cell rectangle `rect` = (col0, row0, col1, row1).
// Corners sit on pixel edges, so adjacent rectangles share edges and no pixel is drawn twice.
@vertex
fn vs_main(
    @builtin(vertex_index) i: u32,
    @location(0) rect: vec4<u32>,
) -> @builtin(position) vec4<f32> {
    // corners (0,0) (1,0) (0,1) | (0,1) (1,0) (1,1): x = 1 for i in {1,4,5}, y for {2,3,5}
    let corner = vec2<bool>(((0x32u >> i) & 1u) == 1u, ((0x2cu >> i) & 1u) == 1u);
    let cell = select(rect.xy, rect.zw, corner);
    let px = vec2<f32>(cell * (8u * params.scale));
    let ndc = px / vec2<f32>(f32(params.target_w), f32(params.target_h)) * 2.0 - 1.0;
    return vec4<f32>(ndc.x, -ndc.y, 0.0, 1.0);
}

// The 8-bit code a colour is stored as (WGSL's round: halves to even).
fn byte_code(c: vec3<f32>) -> vec3<f32> {
    return round(clamp(c, vec3<f32>(0.0), vec3<f32>(1.0)) * 255.0);
}

// Exact for the 256 representable sRGB bytes: round to the byte, then look it up (cheaper than
// pow, and the stored byte equals what a unorm target stores for the same colour).
fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    let i = vec3<u32>(byte_code(c));
    return vec3<f32>(srgb_lut[i.x], srgb_lut[i.y], srgb_lut[i.z]);
}

// Porter-Duff "over" with straight (non-premultiplied) alpha.
fn over(src: vec4<f32>, dst: vec4<f32>) -> vec4<f32> {
    let a = src.a + dst.a * (1.0 - src.a);
    if (a <= 0.0) {
        return vec4<f32>(0.0);
    }
    let rgb = (src.rgb * src.a + dst.rgb * dst.a * (1.0 - src.a)) / a;
    return vec4<f32>(rgb, a);
}

fn color(v: u32) -> vec4<f32> {
    return unpack4x8unorm(v);
}

// Colour of primitive `p` at HUD-pixel centre `h`; alpha 0 where it does not cover.
fn shade_prim(p: Prim, h: vec2<f32>) -> vec4<f32> {
    let none = vec4<f32>(0.0);
    if (p.kind == PRIM_BAR) {
        if (any(h < p.rect.xy) || any(h >= p.rect.zw)) {
            return none;
        }
        let split = p.rect.x + round(p.params.x * (p.rect.z - p.rect.x));
        return select(color(p.color2), color(p.color), h.x < split);
    }
    if (p.kind == PRIM_PIE) {
        let d = h - p.rect.xy;
        if (dot(d, d) > p.rect.z * p.rect.z) {
            return none;
        }
        // angle clockwise from 12 o'clock (y grows downwards)
        var a = atan2(d.x, -d.y);
        a = select(a, a + TAU, a < 0.0);
        return select(none, color(p.color), a >= p.params.x && a < p.params.y);
    }
    if (p.kind == PRIM_LINE) {
        let a = p.rect.xy;
        let ab = p.rect.zw - a;
        let t = clamp(dot(h - a, ab) / max(dot(ab, ab), 1e-6), 0.0, 1.0);
        // distance along the minor axis: a 1-px line covers exactly one pixel per step
        let major = max(max(abs(ab.x), abs(ab.y)), 1e-6);
        let d = length(h - (a + t * ab)) * length(ab) / major;
        return select(none, color(p.color), d <= p.params.x);
    }
    if (p.kind == PRIM_CHART) {
        if (any(h < p.rect.xy) || any(h >= p.rect.zw)) {
            return none;
        }
        let n = u32(p.params.x);
        let series = u32(p.params.y);
        let col = min(u32((h.x - p.rect.x) / (p.rect.z - p.rect.x) * f32(n)), n - 1u);
        let px_per_unit = (p.rect.w - p.rect.y) / p.params.z;
        let y = p.rect.w - h.y;  // HUD pixels above the chart's bottom
        var top = 0.0;
        for (var s = 0u; s < series; s++) {
            top += round(chart_data[p.data + series + col * series + s] * px_per_unit);
            if (y < top) {
                return color(bitcast<u32>(chart_data[p.data + s]));
            }
        }
        return none;
    }
    return none;
}

fn glyph_bit(word: u32, local: vec2<u32>) -> bool {
    let code = word & 0xffu;
    if (code <= 32u || code > 126u) {  // no glyph, or a space (its 8x8 bits are all 0)
        return false;
    }
    let k = max((word >> 8u) & 0xfu, 1u);
    let offset = vec2<u32>((word >> 12u) & 0xfu, (word >> 16u) & 0xfu);
    let g = (offset * 8u + local) / k;  // pixel inside the 8x8 glyph
    let i = code - 32u;
    let texel = vec2<u32>((i % 16u) * 8u + g.x, (i / 16u) * 8u + g.y);
    return textureLoad(atlas, vec2<i32>(texel), 0).r > 0.5;
}

// What the pass outputs: the colour's 8-bit code (linear on -srgb targets). Rounded here, not
// by the target, so a blend unit that quantizes its source first and one that does not, and
// the compute path, all blend the same source.
fn encode(out: vec4<f32>) -> vec4<f32> {
    if (params.srgb_target == 1u) {
        return vec4<f32>(srgb_to_linear(out.rgb), out.a);
    }
    return vec4<f32>(byte_code(out.rgb) / 255.0, out.a);
}

// The HUD's colour at HUD pixel `hud`: sRGB-encoded, straight alpha (alpha 0: nothing there).
// `text`: the cell has an opaque background and no primitive (DRAW_CLASSES "text"): the
// background, the glyph over it, without the primitive loop; the same arithmetic as the
// general path for such a cell (its loop runs no iteration), so the pixels are identical.
fn hud_color(hud: vec2<u32>, text: bool) -> vec4<f32> {
    let cell = hud / 8u;
    let c = cells[cell.y * params.cols + cell.x];
    var out = color(c.z);
    if (!text) {
        let first = c.w >> 16u;
        let last = min(c.w & 0xffffu, params.prim_count);
        let h = vec2<f32>(hud) + 0.5;
        for (var i = first; i < last; i++) {
            out = over(shade_prim(prims[i], h), out);
        }
    }
    if (glyph_bit(c.x, hud % 8u)) {
        out = over(color(c.y), out);
    }
    return out;
}

@fragment
fn fs_text(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    return encode(hud_color(vec2<u32>(frag.xy) / params.scale, true));
}

@fragment
fn fs_main(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    let hud = vec2<u32>(frag.xy) / params.scale;
    if (hud.x >= params.cols * 8u || hud.y >= params.rows * 8u) {
        discard;
    }
    let out = hud_color(hud, false);
    if (out.a <= 0.0) {
        discard;
    }
    return encode(out);
}

// ---- compute path (DebugOverlayCompute): the HUD written into the output through a storage
// view of its non-sRGB twin format, one workgroup per occupied cell, one thread per HUD pixel
// (scale x scale framebuffer pixels). No rasteriser: where raster throughput is small beside
// compute (an H200: 0.0095 ms against 0.171 ms for the 'all' HUD at 1080p) it is far cheaper.
// A cell list entry: col | row << 12 | draw class << 24 (DRAW_CLASSES: 0 text, 1 opaque,
// 2 blend); the blended cells come first. cs_blend reads the frame under them (a sampled view:
// a storage view cannot be read) and blends into `blended`; cs_store, a later dispatch (its
// own usage scope), writes every occupied cell.
@group(1) @binding(0) var frame: texture_2d<f32>;
// #if BGRA
@group(1) @binding(1) var frame_out: texture_storage_2d<bgra8unorm, write>;
// #else
@group(1) @binding(1) var frame_out: texture_storage_2d<rgba8unorm, write>;
// #endif
@group(1) @binding(2) var<storage, read> cell_list: array<u32>;
@group(1) @binding(3) var<storage, read_write> blended: array<u32>;

const CLASS_TEXT: u32 = 0u;
const CLASS_BLEND: u32 = 2u;

// IEC 61966-2-1 encode of a linear value, then 8-bit rounding by the store: what a -srgb
// target's blend unit stores (the decode is srgb_lut's, exact).
fn linear_to_srgb(c: vec3<f32>) -> vec3<f32> {
    let x = clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
    let curve = 1.055 * pow(x, vec3<f32>(1.0 / 2.4)) - 0.055;
    return select(curve, x * 12.92, x <= vec3<f32>(0.0031308));
}

fn entry_hud(e: u32, local: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(e & 0xfffu, (e >> 12u) & 0xfffu) * 8u + local;
}

// Framebuffer pixel k (0..scale^2) of HUD pixel `hud`, and whether the target has it.
fn fb_pixel(hud: vec2<u32>, k: u32) -> vec2<u32> {
    return hud * params.scale + vec2<u32>(k % params.scale, k / params.scale);
}

fn inside(px: vec2<u32>) -> bool {
    return px.x < params.target_w && px.y < params.target_h;
}

// "over" as the blend state of the raster path's blended pipeline does it: colour
// src * a + dst * (1 - a) (linear on -srgb targets), alpha a + dst.a * (1 - a).
@compute @workgroup_size(8, 8)
fn cs_blend(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let hud = entry_hud(cell_list[wg.x], l.xy);
    let src = encode(hud_color(hud, false));
    let n = params.scale * params.scale;
    for (var k = 0u; k < n; k++) {
        let px = fb_pixel(hud, k);
        if (!inside(px)) {
            continue;
        }
        let dst = textureLoad(frame, vec2<i32>(px), 0);
        var rgb = src.rgb * src.a + dst.rgb * (1.0 - src.a);
        if (params.srgb_target == 1u) {
            rgb = linear_to_srgb(rgb);
        }
        let a = src.a + dst.a * (1.0 - src.a);
        blended[((wg.x * 64u) + l.y * 8u + l.x) * n + k] = pack4x8unorm(vec4<f32>(rgb, a));
    }
}

@compute @workgroup_size(8, 8)
fn cs_store(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let e = cell_list[wg.x];
    let kind = e >> 24u;
    let hud = entry_hud(e, l.xy);
    let n = params.scale * params.scale;
    var out = vec4<f32>(0.0);
    if (kind != CLASS_BLEND) {
        // opaque: the stored bytes are its own code, rounded as the raster path rounds
        // (encode's), not by the store: on the H200 the two round halves differently
        let c = hud_color(hud, kind == CLASS_TEXT);
        out = vec4<f32>(byte_code(c.rgb) / 255.0, c.a);
    }
    for (var k = 0u; k < n; k++) {
        let px = fb_pixel(hud, k);
        if (!inside(px)) {
            continue;
        }
        if (kind == CLASS_BLEND) {
            out = unpack4x8unorm(blended[((wg.x * 64u) + l.y * 8u + l.x) * n + k]);
        }
        textureStore(frame_out, vec2<i32>(px), out);
    }
}
