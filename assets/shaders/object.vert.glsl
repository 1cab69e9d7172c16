#version 330 core
// Instanced objects: one mesh, many instances.  Per-instance data comes from the
// culling pipeline, for the survivors of the distance and frustum filters only.

uniform mat4 u_view_projection;
uniform vec3 u_camera;
uniform bool u_billboard;   // a card in the mesh's xy plane: turn it about +y to face the camera

in vec3 in_position;        // mesh vertex, inside the unit sphere
in vec3 in_normal;
in vec4 in_instance;        // xyz: bounding-sphere centre, w: scale (= bounding radius)
in vec4 in_params;          // x: yaw (radians), y: tint, z: fade (0..2, see the fragment shader), w: highlight

out vec3 v_world;
out vec3 v_normal;
flat out float v_tint;
flat out float v_fade;
flat out float v_highlight;

void main() {
    float c = cos(in_params.x);
    float s = sin(in_params.x);
    if (u_billboard) {
        // The card's +z turns to the camera's direction seen from above: (-s, c) = (dx, dz).
        vec2 to_eye = u_camera.xz - in_instance.xz;
        float len = length(to_eye);
        vec2 d = len > 1e-6 ? to_eye / len : vec2(0.0, 1.0);
        s = -d.x;
        c = d.y;
    }
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
