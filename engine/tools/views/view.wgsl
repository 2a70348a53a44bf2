// Debug views of the standard frame, drawn in place of Post's tone map (engine/tools/views/passes.py):
// each mode reads a target the frame already made and writes a picture of it to the output.
// The output is an -srgb target: values written here are linear and encoded by the target.
// #include "frame_common.wgsl"

// #include "lights_common.wgsl"

// #include "cascade_pick.wgsl"

struct ViewParams {
    pad_view: u32,
    level: u32,      // hiz: pyramid level
    auto_exposure: u32,  // 1: exposure from the buffer, 0: the knob (view.sky_horizon.w)
    pad0: u32,
    near: f32,       // the camera's near plane, world units (depth: d = near / z)
    far: f32,        // depth, hiz: the distance shown white, world units
    ev_lo: f32,      // luminance: log2 luminance at the ramp's two ends
    ev_hi: f32,
    num: vec2u,      // hiz, shadow: texel = floor(pixel * num / den) (scaled_floor)
    den: vec2u,
    ratio: vec2f,    // num / den
    dims: vec2u,     // hiz: the level's size in texels
};

struct Exposure {
    exposure: f32,
    goal: f32,
    mean_log2: f32,
    counted: f32,
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> params: ViewParams;
@group(0) @binding(2) var depth: texture_depth_2d;
@group(0) @binding(3) var hdr: texture_2d<f32>;
@group(0) @binding(4) var pyramid: texture_2d<f32>;
@group(0) @binding(5) var shadow_map: texture_depth_2d_array;  // one layer per cascade
@group(0) @binding(6) var<storage, read> exposure: Exposure;
@group(0) @binding(7) var ids: texture_2d<u32>;  // ids, lod: scene row + 1, LOD + 1
@group(0) @binding(8) var overdraw: texture_2d<f32>;  // fragments: before, after depth test
@group(0) @binding(9) var material_input: texture_2d<f32>;  // the material view's input
@group(0) @binding(10) var<uniform> light_params: LightParams;  // lights: the cluster grid
@group(0) @binding(11) var<storage, read> cluster_counts: array<u32>;  // lights per cluster

const OVERDRAW_MAX: f32 = 32.0;  // engine/tools/views/passes.py

const SKY: vec3f = vec3f(0.05, 0.08, 0.20);  // depth 0: nothing drawn (reverse-Z far)
const LEGEND_PX: i32 = 12;  // luminance: the ramp strip along the bottom edge

@vertex
fn vs_fullscreen(@builtin(vertex_index) i: u32) -> @builtin(position) vec4f {
    let uv = vec2f(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4f(uv * 2.0 - 1.0, 0.0, 1.0);
}

// Reverse-Z infinite perspective: d = near / z, so the view distance is z = near / d; shown
// on a log scale, log(z / near) / log(far / near) as the grey's sRGB value (black at the near
// plane, white at `far`), the sky (d = 0) in its own colour.
fn depth_grey(d: f32) -> vec3f {
    if (d <= 0.0) {
        return SKY;
    }
    let g = clamp(log(1.0 / d) / log(params.far / params.near), 0.0, 1.0);
    return srgb_to_linear(vec3f(g));
}

// Turbo (Mikhailov, Google 2019) at 9 evenly spaced points, sRGB-encoded as published
// (engine/tools/views/passes.py TURBO9), linearly interpolated; t in [0, 1].
fn turbo9(i: u32) -> vec3f {  // a switch: lavapipe spills a runtime-indexed const array
    switch i {
        case 0u: { return vec3f(0.190, 0.072, 0.232); }
        case 1u: { return vec3f(0.276, 0.421, 0.891); }
        case 2u: { return vec3f(0.158, 0.736, 0.923); }
        case 3u: { return vec3f(0.197, 0.949, 0.595); }
        case 4u: { return vec3f(0.644, 0.990, 0.234); }
        case 5u: { return vec3f(0.933, 0.812, 0.227); }
        case 6u: { return vec3f(0.984, 0.493, 0.128); }
        case 7u: { return vec3f(0.816, 0.185, 0.018); }
        default: { return vec3f(0.480, 0.016, 0.011); }
    }
}

// floor(p * num / den) per axis without an integer division (dozens of instructions on a
// GPU): the float estimate p * ratio is off by at most one, corrected by integer products
// (p * num < 2^32 for any texture size wgpu allows).
fn scaled_floor(p: vec2u) -> vec2u {
    let n = p * params.num;
    var q = vec2u(vec2f(p) * params.ratio);
    q = select(q, q - 1u, q * params.den > n);
    q = select(q, q + 1u, (q + 1u) * params.den <= n);
    return q;
}

fn srgb_to_linear(c: vec3f) -> vec3f {
    return select(pow((c + 0.055) / 1.055, vec3f(2.4)), c / 12.92, c <= vec3f(0.04045));
}

fn ramp(t: f32) -> vec3f {
    let x = clamp(t, 0.0, 1.0) * 8.0;
    let i = min(u32(x), 7u);
    let c = mix(turbo9(i), turbo9(i + 1u), x - f32(i));
    return srgb_to_linear(c);  // the -srgb target encodes it back to the published colour
}

fn luminance(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));  // Rec. 709 / sRGB primaries
}

fn current_exposure() -> f32 {
    return select(view.sky_horizon.w, exposure.exposure, params.auto_exposure == 1u);
}

// log2 luminance false colour; the bottom strip is the ramp with a white tick where the
// current exposure puts middle grey (0.18 after exposure: log2(0.18 / e)).
fn luminance_view(px: vec2i, size: vec2i) -> vec3f {
    let lo = params.ev_lo;
    let hi = params.ev_hi;
    let key = log2(0.18 / max(current_exposure(), 1e-8));
    if (px.y >= size.y - LEGEND_PX) {
        let ev = lo + (hi - lo) * (f32(px.x) + 0.5) / f32(size.x);
        let px_per_ev = f32(size.x) / (hi - lo);
        if (abs(ev - key) * px_per_ev < 1.0) {
            return vec3f(1.0);
        }
        return ramp((ev - lo) / (hi - lo));
    }
    let l = luminance(textureLoad(hdr, px, 0).rgb);
    return ramp((log2(max(l, 1e-12)) - lo) / (hi - lo));
}

// Normals from the depth buffer: world positions of this pixel and its right and lower
// neighbours (or left/upper at the edges and silhouettes: the nearer pair), crossed. The
// homogeneous position inv_view_proj * (ndc, d, 1) is linear in ndc and d, so a neighbour's
// is this pixel's plus a column step and a depth step (2 vector FMAs, not a matrix product).
fn homogeneous(px: vec2i, size: vec2i, d: f32) -> vec4f {
    let ndc = vec2f((f32(px.x) + 0.5) / f32(size.x) * 2.0 - 1.0,
                    1.0 - (f32(px.y) + 0.5) / f32(size.y) * 2.0);
    return view.inv_view_proj * vec4f(ndc, d, 1.0);
}

fn normals_view(px: vec2i, size: vec2i) -> vec3f {
    let d = textureLoad(depth, px, 0);
    if (d <= 0.0) {
        return SKY;
    }
    let f = footprint(px, size, d);  // the nearer neighbours: this surface at a silhouette
    var n = normalize(cross(f.dy, f.dx));
    if (dot(n, view.eye.xyz - f.p) < 0.0) {
        n = -n;  // facing the camera
    }
    return n * 0.5 + 0.5;  // world-space, as colour: +Y (up) is (0.5, 1, 0.5)
}

// HDR target: NaN magenta, +Inf red, -Inf blue, negative cyan, over its dimmed luminance.
fn nan_view(px: vec2i) -> vec3f {
    let c = textureLoad(hdr, px, 0);
    // from the bits, four channels at once (no fast-math folding of isnan; no indexed loop)
    let bits = bitcast<vec4u>(c);
    let special = (bits & vec4u(0x7f800000u)) == vec4u(0x7f800000u);
    let mantissa = (bits & vec4u(0x007fffffu)) != vec4u(0u);
    let sign = (bits & vec4u(0x80000000u)) != vec4u(0u);
    if (any(special & mantissa)) {
        return vec3f(1.0, 0.0, 1.0);
    }
    let inf = special & !mantissa;
    if (any(inf & !sign)) {
        return vec3f(1.0, 0.0, 0.0);
    }
    if (any(inf)) {
        return vec3f(0.0, 0.0, 1.0);
    }
    if (any(sign & (c != vec4f(0.0)))) {
        return vec3f(0.0, 1.0, 1.0);
    }
    let l = luminance(c.rgb);
    return vec3f(0.25 * l / (1.0 + l));
}

// PCG hash (O'Neill; the RXS-M-XS output of Jarzynski & Olano 2020's "pcg"): ids -> colour
fn pcg(x: u32) -> u32 {
    let state = x * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn id_colour(id: u32) -> vec3f {  // sRGB-encoded bytes of the hash, decoded
    let h = pcg(id);
    let c = vec3f(f32(h & 255u), f32((h >> 8u) & 255u), f32((h >> 16u) & 255u)) / 255.0;
    return srgb_to_linear(c);
}

fn lod_colour(lod: u32) -> vec3f {  // engine/tools/views/passes.py LOD_COLOURS (sRGB)
    switch min(lod, 5u) {
        case 0u: { return srgb_to_linear(vec3f(0.20, 0.80, 0.20)); }
        case 1u: { return srgb_to_linear(vec3f(0.95, 0.85, 0.20)); }
        case 2u: { return srgb_to_linear(vec3f(0.95, 0.50, 0.10)); }
        case 3u: { return srgb_to_linear(vec3f(0.90, 0.15, 0.15)); }
        case 4u: { return srgb_to_linear(vec3f(0.80, 0.20, 0.80)); }
        default: { return srgb_to_linear(vec3f(0.20, 0.40, 0.95)); }
    }
}

// Fragments per pixel (channel `level`: 0 before, 1 after the depth test) as Turbo over
// log2 1 .. OVERDRAW_MAX; the bottom strip is the ramp with a white tick per power of two.
fn overdraw_view(px: vec2i, size: vec2i) -> vec3f {
    let top = log2(OVERDRAW_MAX);
    if (px.y >= size.y - LEGEND_PX) {
        let e = top * (f32(px.x) + 0.5) / f32(size.x);  // log2 of the count at this column
        let px_per_e = f32(size.x) / top;
        if (abs(e - round(e)) * px_per_e < 1.0) {
            return vec3f(1.0);
        }
        return ramp(e / top);
    }
    let n = textureLoad(overdraw, px, 0)[min(params.level, 1u)];
    if (n < 0.5) {
        return SKY;
    }
    return ramp(log2(n) / top);
}

// Measured ns per pixel (View.Geometry's R in cost mode) as Turbo on log2 ns over
// [ev_lo, ev_hi]; the bottom strip is the ramp with a white tick per power of two ns.
fn cost_view(px: vec2i, size: vec2i) -> vec3f {
    let lo = params.ev_lo;
    let hi = params.ev_hi;
    if (px.y >= size.y - LEGEND_PX) {
        let e = lo + (hi - lo) * (f32(px.x) + 0.5) / f32(size.x);
        if (abs(e - round(e)) * f32(size.x) / (hi - lo) < 1.0) {
            return vec3f(1.0);
        }
        return ramp((e - lo) / (hi - lo));
    }
    let v = textureLoad(overdraw, px, 0).xy;
    if (v.y < 0.5) {
        return SKY;
    }
    return ramp((log2(max(v.x, 1e-12)) - lo) / (hi - lo));
}

// One entry point per view, fs_<name> (engine/tools/views/views.py): each pipeline compiles only
// its own view's code.
@fragment
fn fs_depth(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(depth_grey(textureLoad(depth, vec2i(frag.xy), 0)), 1.0);
}

@fragment
fn fs_hiz(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    // level N at output size: the texel of level N covering this pixel's footprint in the
    // power-of-two level 0 (engine/passes/hiz.py)
    let t = min(scaled_floor(vec2u(frag.xy)) >> vec2u(params.level), params.dims - 1u);
    return vec4f(depth_grey(textureLoad(pyramid, t, params.level).r), 1.0);
}

@fragment
fn fs_shadow(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    // the cascades' square maps side by side, letterboxed in the output; reverse-Z ortho:
    // white nearest the sun
    let size = vec2i(textureDimensions(depth));
    let n = i32(textureNumLayers(shadow_map));
    let side = min(size.y, size.x / n);
    let q = vec2i(frag.xy) - (size - vec2i(side * n, side)) / 2;
    if (any(q < vec2i(0)) || q.x >= side * n || q.y >= side) {
        return vec4f(vec3f(0.02), 1.0);
    }
    let layer = q.x / side;
    let t = scaled_floor(vec2u(vec2i(q.x - layer * side, q.y)));
    return vec4f(vec3f(textureLoad(shadow_map, t, layer, 0)), 1.0);
}

// -- cascades: which cascade shadows each pixel, and how many of its texels a pixel spans --

const TEXELS_LOG2: f32 = 4.0;  // texels view: log2 texels per pixel over -4 .. +4

fn cascade_colour(c: u32) -> vec3f {  // engine/tools/views/reference.py CASCADE_COLOURS (sRGB)
    switch c {
        case 0u: { return srgb_to_linear(vec3f(0.20, 0.80, 0.20)); }
        case 1u: { return srgb_to_linear(vec3f(0.25, 0.45, 0.95)); }
        case 2u: { return srgb_to_linear(vec3f(0.95, 0.85, 0.20)); }
        default: { return srgb_to_linear(vec3f(0.90, 0.15, 0.15)); }
    }
}

// Cascade c's shadow-map texel coordinates of world point p (x right, y down), and whether
// p is inside its box.
fn cascade_texel(p: vec3f, c: u32) -> vec3f {
    let s = view.cascade_view_proj[c] * vec4f(p, 1.0);
    let uv = s.xy * vec2f(0.5, -0.5) + 0.5;
    let inside = all(uv >= vec2f(0.0)) && all(uv <= vec2f(1.0)) && s.z >= 0.0 && s.z <= 1.0;
    return vec3f(uv / view.cascade_params.z, select(0.0, 1.0, inside));
}

// World position of the pixel and its steps to the next pixel right and down, each taken
// toward the nearer neighbour (at a silhouette the other one is on another surface).
struct Footprint {
    p: vec3f,
    dx: vec3f,
    dy: vec3f,
};

fn footprint(px: vec2i, size: vec2i, d: f32) -> Footprint {
    let m = view.inv_view_proj;
    let h = homogeneous(px, size, d);
    let p = h.xyz / h.w;
    let sx = m[0] * (2.0 / f32(size.x));
    let sy = m[1] * (-2.0 / f32(size.y));
    let xr = min(px.x + 1, size.x - 1);
    let xl = max(px.x - 1, 0);
    let yd = min(px.y + 1, size.y - 1);
    let yu = max(px.y - 1, 0);
    let hr = h + sx * f32(xr - px.x) + m[2] * (textureLoad(depth, vec2i(xr, px.y), 0) - d);
    let hl = h + sx * f32(xl - px.x) + m[2] * (textureLoad(depth, vec2i(xl, px.y), 0) - d);
    let hd = h + sy * f32(yd - px.y) + m[2] * (textureLoad(depth, vec2i(px.x, yd), 0) - d);
    let hu = h + sy * f32(yu - px.y) + m[2] * (textureLoad(depth, vec2i(px.x, yu), 0) - d);
    let r = (hr.xyz / hr.w - p) / f32(max(xr - px.x, 1));
    let l = (p - hl.xyz / hl.w) / f32(max(px.x - xl, 1));
    let dn = (hd.xyz / hd.w - p) / f32(max(yd - px.y, 1));
    let up = (p - hu.xyz / hu.w) / f32(max(px.y - yu, 1));
    let dx = select(r, l, (dot(l, l) < dot(r, r) && xl != px.x) || xr == px.x);
    let dy = select(dn, up, (dot(up, up) < dot(dn, dn) && yu != px.y) || yd == px.y);
    return Footprint(p, dx, dy);
}

// level 0: the cascade per pixel in its colour (mixed in the blend bands), lit by the sun
// through normals from depth so the scene stays readable; grey where no cascade's box holds
// the surface (unshadowed). level 1: texels of the pixel's cascade across one pixel (the
// square root of the area ratio) as Turbo on log2 over -4..+4, ticks per power of two.
fn cascades_view(px: vec2i, size: vec2i) -> vec3f {
    let top = TEXELS_LOG2;
    if (params.level == 1u && px.y >= size.y - LEGEND_PX) {
        let e = -top + 2.0 * top * (f32(px.x) + 0.5) / f32(size.x);
        if (abs(e - round(e)) * f32(size.x) / (2.0 * top) < 1.0) {
            return vec3f(1.0);
        }
        return ramp((e + top) / (2.0 * top));
    }
    let d = textureLoad(depth, px, 0);
    if (d <= 0.0) {
        return SKY;
    }
    let f = footprint(px, size, d);
    let pick = cascade_pick(dot(view.cascade_depth.xyz, f.p) + view.cascade_depth.w);
    let c = pick.c;
    let t = cascade_texel(f.p, c);
    if (t.z < 0.5) {
        return vec3f(0.12);  // outside every cascade: unshadowed
    }
    if (params.level == 1u) {
        let m = view.cascade_view_proj[c];
        let k = vec2f(0.5, 0.5) / view.cascade_params.z;  // NDC -> texels
        let a = (m * vec4f(f.dx, 0.0)).xy * k;
        let b = (m * vec4f(f.dy, 0.0)).xy * k;
        let texels = sqrt(abs(a.x * b.y - a.y * b.x));
        return ramp((log2(max(texels, 1e-12)) + top) / (2.0 * top));
    }
    let colour = mix(cascade_colour(c), cascade_colour(c + 1u), pick.next);
    let n = cross(f.dy, f.dx);
    let len = length(n);  // 0 (or not finite) where the footprint degenerates: unshaded
    let ok = len > 1e-30 && len < 1e30;
    let lambert = select(1.0, abs(dot(n / select(1.0, len, ok), view.sun_dir.xyz)), ok);
    return colour * (0.35 + 0.65 * lambert);
}

@fragment
fn fs_cascades(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(cascades_view(vec2i(frag.xy), vec2i(textureDimensions(depth))), 1.0);
}

@fragment
fn fs_luminance(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(luminance_view(vec2i(frag.xy), vec2i(textureDimensions(depth))), 1.0);
}

@fragment
fn fs_normals(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(normals_view(vec2i(frag.xy), vec2i(textureDimensions(depth))), 1.0);
}

@fragment
fn fs_nan(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(nan_view(vec2i(frag.xy)), 1.0);
}

@fragment
fn fs_overdraw(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(overdraw_view(vec2i(frag.xy), vec2i(textureDimensions(depth))), 1.0);
}

@fragment
fn fs_cost(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(cost_view(vec2i(frag.xy), vec2i(textureDimensions(depth))), 1.0);
}

@fragment
fn fs_ids(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let k = textureLoad(ids, vec2i(frag.xy), 0).x;  // scene row + 1
    return vec4f(select(id_colour(k - 1u), SKY, k == 0u), 1.0);
}

@fragment
fn fs_lod(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let k = textureLoad(ids, vec2i(frag.xy), 0).y;  // LOD + 1
    return vec4f(select(lod_colour(k - 1u), SKY, k == 0u), 1.0);
}

// -- material inputs (View.Geometry drew them with the mesh shader; sky: dark blue) --------

fn material_texel(frag: vec4f) -> vec4f {
    return textureLoad(material_input, vec2i(frag.xy), 0);
}

fn sky_or(frag: vec4f, c: vec3f) -> vec4f {
    let d = textureLoad(depth, vec2i(frag.xy), 0);
    return vec4f(select(c, vec3f(0.02, 0.03, 0.08), d == 0.0), 1.0);
}

@fragment
fn fs_basecolor(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return sky_or(frag, material_texel(frag).rgb);
}

@fragment
fn fs_roughness(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return sky_or(frag, vec3f(srgb_to_linear(vec3f(material_texel(frag).r))));
}

@fragment
fn fs_metallic(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return sky_or(frag, vec3f(srgb_to_linear(vec3f(material_texel(frag).r))));
}

@fragment
fn fs_shading(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return sky_or(frag, srgb_to_linear(material_texel(frag).rgb * 0.5 + 0.5));
}

@fragment
fn fs_material(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return sky_or(frag, id_colour(u32(material_texel(frag).r) + 1u));
}

@fragment
fn fs_mip(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    let level = material_texel(frag).r;
    let c = select(turbo9(u32(clamp(level, 0.0, 8.0))), vec3f(0.2), level < 0.0);
    return sky_or(frag, srgb_to_linear(c));  // sRGB as published: the target encodes it back
}

// -- the local lights per cluster (engine/lights; Lights.Cluster's counts) -------------------

// Lights in the cluster of each pixel's depth as Turbo on log2 1 .. CLUSTER_CAP, white at the
// cap, the tiles' edges darkened; the bottom strip is the ramp, a white tick per power of two.
fn lights_view(frag: vec2f, size: vec2i) -> vec3f {
    let top = log2(f32(CLUSTER_CAP));
    let px = vec2i(frag);
    if (px.y >= size.y - LEGEND_PX) {
        let e = top * (frag.x / f32(size.x));  // log2 of the count at this column
        if (abs(e - round(e)) * f32(size.x) / top < 1.0) {
            return vec3f(1.0);
        }
        return ramp(e / top);
    }
    let depth = textureLoad(depth, px, 0);
    if (depth <= 0.0) {
        return SKY;
    }
    let h = view.inv_view_proj * vec4f(frag.x * view.size.z * 2.0 - 1.0,
                                       1.0 - frag.y * view.size.w * 2.0, depth, 1.0);
    let p = (light_params.view * vec4f(h.xyz / h.w, 1.0)).xyz;
    var n = 0u;
    if (light_params.modes.x > 0u) {
        n = cluster_counts[cluster_index(frag, -p.z)];
    }
    var c = select(ramp(log2(f32(max(n, 1u))) / top), SKY * 0.5, n == 0u);
    if (n >= CLUSTER_CAP) {
        c = vec3f(1.0);
    }
    let tile = frag * light_params.grid.xy;  // tile coordinates: their edges darkened
    let edge = min(fract(tile), 1.0 - fract(tile)) / light_params.grid.xy;  // pixels to an edge
    return select(c, c * 0.45, any(edge < vec2f(0.75)));
}

@fragment
fn fs_lights(@builtin(position) frag: vec4f) -> @location(0) vec4f {
    return vec4f(lights_view(frag.xy, vec2i(textureDimensions(depth))), 1.0);
}
