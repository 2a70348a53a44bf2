// Post.TAA: temporal anti-aliasing (Karis 2014, "High Quality Temporal Supersampling").
// The frame was rendered with a sub-pixel jittered projection; each pixel follows the motion
// vector (frame.motion: the camera's and the moving instances'; the sky's from the Sky pass) of
// the nearest surface in its 3x3 neighbourhood (edges take the foreground's motion) into last
// frame's resolved image, clamps that history to the 3x3 neighbourhood of the current frame
// (rejects disoccluded and changed colour), and blends with luma weights 1 / (1 + luma) (no
// fireflies). A reset (first frame, resize, camera cut) takes the frame.

struct Taa {
    params: vec4f,  // x: current frame's weight (1 = reset), yzw: unused
};

@group(0) @binding(0) var<uniform> taa: Taa;
@group(0) @binding(1) var current: texture_2d<f32>;
@group(0) @binding(2) var depth: texture_depth_2d;
@group(0) @binding(3) var history: texture_2d<f32>;
@group(0) @binding(4) var linear_clamp: sampler;
@group(0) @binding(5) var resolved: texture_storage_2d<rgba16float, write>;
@group(0) @binding(6) var motion: texture_2d<f32>;  // pixels, to last frame's position

fn luma(c: vec3f) -> f32 {
    return dot(c, vec3f(0.2126, 0.7152, 0.0722));
}

fn history_at(uv: vec2f) -> vec3f {
    return textureSampleLevel(history, linear_clamp, uv, 0.0).rgb;
}

// Catmull-Rom filtered history from five bilinear fetches (the 4x4 kernel without its
// corners, renormalised): bilinear history would blur a little more every frame in motion.
fn history_catmull_rom(uv: vec2f, size: vec2f) -> vec3f {
    let pos = uv * size;
    let center = floor(pos - 0.5) + 0.5;
    let f = pos - center;
    let f2 = f * f;
    let f3 = f2 * f;
    let w0 = -0.5 * f3 + f2 - 0.5 * f;
    let w1 = 1.5 * f3 - 2.5 * f2 + 1.0;
    let w2 = -1.5 * f3 + 2.0 * f2 + 0.5 * f;
    let w3 = 0.5 * f3 - 0.5 * f2;
    let w12 = w1 + w2;
    let t0 = (center - 1.0) / size;
    let t12 = (center + w2 / w12) / size;
    let t3 = (center + 2.0) / size;
    let a = w12.x * w0.y;
    let b = w0.x * w12.y;
    let c = w12.x * w12.y;
    let d = w3.x * w12.y;
    let e = w12.x * w3.y;
    let sum = history_at(vec2f(t12.x, t0.y)) * a + history_at(vec2f(t0.x, t12.y)) * b
        + history_at(t12) * c + history_at(vec2f(t3.x, t12.y)) * d
        + history_at(vec2f(t12.x, t3.y)) * e;
    return sum / (a + b + c + d + e);
}


@compute @workgroup_size(8, 8)
fn resolve(@builtin(global_invocation_id) gid: vec3u) {
    let size = textureDimensions(current);
    if (any(gid.xy >= size)) {
        return;
    }
    let p = vec2i(gid.xy);
    let hi = vec2i(size) - vec2i(1);
    let now = textureLoad(current, p, 0).rgb;
    var lo_c = now;
    var hi_c = now;
    var nearest = p;
    var nearest_depth = -1.0;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let q = clamp(p + vec2i(dx, dy), vec2i(0), hi);
            let c = textureLoad(current, q, 0).rgb;
            lo_c = min(lo_c, c);
            hi_c = max(hi_c, c);
            let d = textureLoad(depth, q, 0);  // reverse-Z: the largest is the nearest
            if (d > nearest_depth) {
                nearest_depth = d;
                nearest = q;
            }
        }
    }
    let alpha = taa.params.x;
    if (alpha >= 1.0) {
        textureStore(resolved, p, vec4f(now, 1.0));
        return;
    }
    let prev_uv = (vec2f(gid.xy) + 0.5 + textureLoad(motion, nearest, 0).xy) / vec2f(size);
    if (any(prev_uv < vec2f(0.0)) || any(prev_uv > vec2f(1.0))) {
        textureStore(resolved, p, vec4f(now, 1.0));  // came from off screen: no history
        return;
    }
    let old = clamp(history_catmull_rom(prev_uv, vec2f(size)), lo_c, hi_c);
    let w_now = alpha / (1.0 + luma(now));
    let w_old = (1.0 - alpha) / (1.0 + luma(old));
    textureStore(resolved, p, vec4f((now * w_now + old * w_old) / (w_now + w_old), 1.0));
}
