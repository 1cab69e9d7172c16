#version 330 core

uniform vec3 u_camera;
uniform vec3 u_light_dir;
uniform vec3 u_sky;
uniform vec3 u_low_colour;
uniform vec3 u_high_colour;
uniform vec2 u_height_range;     // min and max terrain height
uniform float u_fog_distance;
uniform bool u_flat;

in vec3 v_world;
in vec3 v_normal;

out vec4 f_colour;

void main() {
    if (u_flat) {
        f_colour = vec4(u_low_colour, 1.0);
        return;
    }
    vec3 n = normalize(v_normal);
    float h = clamp((v_world.y - u_height_range.x) / max(u_height_range.y - u_height_range.x, 1e-3), 0.0, 1.0);
    // A faint 64 m grid so motion and scale read even on flat ground.
    vec2 cell = abs(fract(v_world.xz / 64.0 + 0.5) - 0.5) * 64.0;
    float line = 1.0 - 0.12 * (1.0 - smoothstep(0.0, 0.6, min(cell.x, cell.y)));
    vec3 base = mix(u_low_colour, u_high_colour, h) * line;
    float diffuse = max(dot(n, u_light_dir), 0.0);
    vec3 lit = base * (0.4 + 0.6 * diffuse);
    float d = length(u_camera - v_world) / u_fog_distance;
    float fog = 1.0 - exp(-d * d);
    f_colour = vec4(mix(lit, u_sky, fog), 1.0);
}
