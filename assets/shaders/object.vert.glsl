#version 330 core
// Instanced objects: one mesh, many instances.  Per-instance data comes from the
// culling pipeline, for the survivors of the distance and frustum filters only.

uniform mat4 u_view_projection;

in vec3 in_position;        // mesh vertex, inside the unit sphere
in vec3 in_normal;
in vec4 in_instance;        // xyz: bounding-sphere centre, w: scale (= bounding radius)
in vec4 in_params;          // x: yaw (radians), y: tint, z: fade (0..1), w: highlight

out vec3 v_world;
out vec3 v_normal;
flat out float v_tint;
flat out float v_fade;
flat out float v_highlight;

void main() {
    float c = cos(in_params.x);
    float s = sin(in_params.x);
    // Yaw about +y: the mesh's -z axis turns to (sin yaw, 0, -cos yaw).
    mat3 yaw = mat3(c, 0.0, s,  0.0, 1.0, 0.0,  -s, 0.0, c);
    vec3 world = in_instance.xyz + yaw * (in_position * in_instance.w);
    v_world = world;
    v_normal = yaw * in_normal;
    v_tint = in_params.y;
    v_fade = in_params.z;
    v_highlight = in_params.w;
    gl_Position = u_view_projection * vec4(world, 1.0);
}
