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

// Dither threshold in (0, 1): interleaved gradient noise (Jimenez 2014), a
// blue-noise-like pattern with no visible 4x4 grid at 1:1, cheap in a shader.
// Any threshold function keeps the two cross-fade halves complementary.
float dither_threshold(vec2 frag) {
    vec2 p = floor(frag);
    return fract(52.9829189 * fract(dot(p, vec2(0.06711056, 0.00583715))));
}

void main() {
    if (u_dither) {
        float threshold = dither_threshold(gl_FragCoord.xy);
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
