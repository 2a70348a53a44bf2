// Shading with the local lights: every light (plain forward) or the fragment's cluster's list
// (clustered forward and deferred). The including module declares the lights' bindings
// (mesh_lights.wgsl, light_deferred.wgsl): light_params, lights, cluster_counts,
// cluster_lights; and includes brdf.wgsl.
// #include "lights_common.wgsl"

// Radiance a light reflects towards v from a surface at `world` (glTF BRDF, brdf.wgsl):
// KHR_lights_punctual's point and spot lights, intensity / d^2 windowed to the range by
// saturate(1 - (d / range)^4)^2 (Karis 2013, "Real Shading in Unreal Engine 4", p. 12; the
// window KHR_lights_punctual recommends), the spot's cone by the extension's smooth angular
// attenuation (its "Inner and Outer Cone Angles" section).
fn light_radiance(light: Light, world: vec3f, n: vec3f, v: vec3f, base: vec3f, metallic: f32,
                  roughness: f32) -> vec3f {
    let to_light = light.position - world;
    let d2 = dot(to_light, to_light);
    let r2 = light.range * light.range;
    if (!(d2 < r2) || d2 <= 0.0) {
        return vec3f(0.0);
    }
    let l = to_light * inverseSqrt(d2);
    let ndl = dot(n, l);
    if (ndl <= 0.0) {
        return vec3f(0.0);
    }
    let q = d2 / r2;
    let window = clamp(1.0 - q * q, 0.0, 1.0);
    let falloff = window * window / max(d2, LIGHT_MIN_DISTANCE * LIGHT_MIN_DISTANCE);
    let cone = clamp(dot(light.direction, -l) * light.spot_scale + light.spot_offset, 0.0, 1.0);
    let e = light.intensity * (falloff * cone * cone * ndl);
    return brdf(base, metallic, roughness, n, v, l) * e;
}

// The sum of light_radiance over the lights `mode` picks (LIGHTS_*) for a fragment at
// framebuffer position `frag`, view depth `d`, world position `world`.
fn local_lights(mode: u32, frag: vec2f, d: f32, world: vec3f, n: vec3f, v: vec3f, base: vec3f,
                metallic: f32, roughness: f32) -> vec3f {
    var sum = vec3f(0.0);
    if (mode == LIGHTS_ALL) {
        let count = light_params.modes.x;
        for (var i = 0u; i < count; i++) {
            sum += light_radiance(lights[i], world, n, v, base, metallic, roughness);
        }
    } else if (mode == LIGHTS_CLUSTERED) {
        let c = cluster_index(frag, d);
        let count = min(cluster_counts[c], CLUSTER_CAP);
        let first = c * CLUSTER_CAP;
        for (var i = 0u; i < count; i++) {
            let light = lights[cluster_lights[first + i]];
            sum += light_radiance(light, world, n, v, base, metallic, roughness);
        }
    }
    return sum;
}
