#version 330 core
// Flat-shaded objects with distance fog, and a dithered fade over the last
// stretch of an object's view distance instead of a pop.  The same dither
// cross-fades adjacent levels of detail: the incoming level keeps the
// thresholds below its fade, the outgoing one (fade 1 + s) the complement.

uniform vec3 u_colour;
uniform vec3 u_highlight_colour;
uniform vec3 u_camera;
uniform vec3 u_light_dir;       // towards the light, unit length
uniform vec3 u_sky;
uniform float u_fog_distance;
uniform bool u_dither;
uniform bool u_flat;            // debug/test view: the kind's colour, unlit, no fog

in vec3 v_world;
in vec3 v_normal;
flat in float v_tint;
flat in float v_fade;           // 0..1: keep thresholds below it; 1..2: keep those at or above fade - 1
flat in float v_highlight;

out vec4 f_colour;

// Ordered-dither threshold in (0, 1) from a 4x4 Bayer matrix.
float bayer4(vec2 frag) {
    ivec2 p = ivec2(mod(frag, 4.0));
    const float m[16] = float[16](0.0, 8.0, 2.0, 10.0,  12.0, 4.0, 14.0, 6.0,
                                  3.0, 11.0, 1.0, 9.0,  15.0, 7.0, 13.0, 5.0);
    return (m[p.y * 4 + p.x] + 0.5) / 16.0;
}

void main() {
    if (u_dither) {
        float threshold = bayer4(gl_FragCoord.xy);
        if (v_fade <= 1.0 ? v_fade < threshold : threshold < v_fade - 1.0) {
            discard;
        }
    }
    if (u_flat) {
        f_colour = vec4(u_colour, 1.0);
        return;
    }
    vec3 to_eye = u_camera - v_world;
    vec3 n = normalize(v_normal);
    if (dot(n, to_eye) < 0.0) {
        n = -n;                     // two-sided lighting: cards and thin parts
    }
    float diffuse = max(dot(n, u_light_dir), 0.0);
    vec3 base = mix(u_colour, u_highlight_colour, v_highlight) * (0.85 + 0.3 * v_tint);
    vec3 lit = base * (0.35 + 0.65 * diffuse);
    float d = length(to_eye) / u_fog_distance;
    float fog = 1.0 - exp(-d * d);
    f_colour = vec4(mix(lit, u_sky, fog), 1.0);
}
