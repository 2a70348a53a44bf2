// The BRDF and the ambient light of the standard frame's materials. Numpy twin:
// engine/materials/reference.py (a rendered sphere is checked against it).
//
// Cook-Torrance microfacet specular with the GGX / Trowbridge-Reitz distribution (Walter et
// al. 2007, "Microfacet Models for Refraction through Rough Surfaces"), the height-correlated
// Smith visibility term (Heitz 2014, "Understanding the Masking-Shadowing Function in
// Microfacet-Based BRDFs", eq. 99) and Schlick's Fresnel (Schlick 1994), combined with a
// Lambertian diffuse exactly as the glTF 2.0 specification's Appendix B "BRDF
// Implementation" does: alpha = roughness^2,
//   metal      = V D (base + (1 - base) (1 - VdotH)^5)
//   dielectric = mix(base / pi, V D, 0.04 + 0.96 (1 - VdotH)^5)
//   f          = mix(dielectric, metal, metallic).
// The sun's irradiance at normal incidence is pi x sun_color: a white Lambertian surface
// facing it reflects radiance sun_color, as the frame's Blinn-Phong shading did, so exposure
// and tone mapping are unchanged.

const PI: f32 = 3.141592653589793;

fn ggx_d(ndh: f32, a2: f32) -> f32 {
    let d = ndh * ndh * (a2 - 1.0) + 1.0;
    return a2 / (PI * d * d);
}

fn smith_v(ndl: f32, ndv: f32, a2: f32) -> f32 {
    let gv = ndl * sqrt(ndv * ndv * (1.0 - a2) + a2);
    let gl = ndv * sqrt(ndl * ndl * (1.0 - a2) + a2);
    let s = gv + gl;
    return select(0.0, 0.5 / s, s > 0.0);
}

// f(l, v) of the glTF metallic-roughness material (per steradian), n, v, l unit vectors.
fn brdf(base: vec3f, metallic: f32, roughness: f32, n: vec3f, v: vec3f, l: vec3f) -> vec3f {
    let h = normalize(l + v);
    let ndl = clamp(dot(n, l), 0.0, 1.0);
    let ndv = clamp(dot(n, v), 1e-4, 1.0);
    let ndh = clamp(dot(n, h), 0.0, 1.0);
    let vdh = clamp(dot(v, h), 0.0, 1.0);
    let a = roughness * roughness;
    let a2 = max(a * a, 1e-8);
    let spec = smith_v(ndl, ndv, a2) * ggx_d(ndh, a2);
    let fw = pow(1.0 - vdh, 5.0);
    let metal = spec * (base + (1.0 - base) * fw);
    let dielectric = mix(base / PI, vec3f(spec), 0.04 + 0.96 * fw);
    return mix(dielectric, metal, metallic);
}

// The sky's SH (bands 0-2) at direction d, each band weighted by w.
fn sh_eval(d: vec3f, w: vec3f) -> vec3f {
    let s = shading.sh;
    var c = w.x * 0.282095 * s[0].rgb;
    c += w.y * 0.488603 * (d.y * s[1].rgb + d.z * s[2].rgb + d.x * s[3].rgb);
    c += w.z * (1.092548 * d.x * d.y * s[4].rgb + 1.092548 * d.y * d.z * s[5].rgb
        + 0.315392 * (3.0 * d.z * d.z - 1.0) * s[6].rgb + 1.092548 * d.x * d.z * s[7].rgb
        + 0.546274 * (d.x * d.x - d.y * d.y) * s[8].rgb);
    return c;
}

// Karis 2014, "Physically Based Shading on Mobile": the split-sum environment BRDF, fitted.
fn env_brdf(f0: vec3f, roughness: f32, ndv: f32) -> vec3f {
    let r = roughness * vec4f(-1.0, -0.0275, -0.572, 0.022) + vec4f(1.0, 0.0425, 1.04, -0.04);
    let a004 = min(r.x * r.x, exp2(-9.28 * ndv)) * r.x + r.y;
    let ab = vec2f(-1.04, 1.04) * a004 + r.zw;
    return f0 * ab.x + ab.y;
}

// Light from the sky (no sun): diffuse irradiance / pi at n (cosine lobe band factors
// 1, 2/3, 1/4), and specular radiance along the reflection prefiltered by GGX's lobe taken
// as a Phong lobe of exponent s = 2 / alpha^2 - 2 (band factors exp(-l^2 / 2s)).
fn ambient(base: vec3f, metallic: f32, roughness: f32, n: vec3f, v: vec3f) -> vec3f {
    let ndv = clamp(dot(n, v), 1e-4, 1.0);
    let a = roughness * roughness;
    let s = max(2.0 / max(a * a, 1e-8) - 2.0, 1e-4);
    let r = reflect(-v, n);
    let spec = sh_eval(r, vec3f(1.0, exp(-0.5 / s), exp(-2.0 / s)));
    let diffuse = sh_eval(n, vec3f(1.0, 2.0 / 3.0, 0.25));
    let f0 = mix(vec3f(0.04), base, metallic);
    return base * (1.0 - metallic) * diffuse + env_brdf(f0, roughness, ndv) * spec;
}
