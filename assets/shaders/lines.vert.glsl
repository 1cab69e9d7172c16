#version 330 core
// Debug overlay: coloured line segments in world space.

uniform mat4 u_view_projection;

in vec3 in_position;
in vec4 in_colour;

out vec4 v_colour;

void main() {
    v_colour = in_colour;
    gl_Position = u_view_projection * vec4(in_position, 1.0);
}
