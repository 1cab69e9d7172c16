#version 330 core
// Terrain: a height-field grid, one draw call.

uniform mat4 u_view_projection;

in vec3 in_position;
in vec3 in_normal;

out vec3 v_world;
out vec3 v_normal;

void main() {
    v_world = in_position;
    v_normal = in_normal;
    gl_Position = u_view_projection * vec4(in_position, 1.0);
}
