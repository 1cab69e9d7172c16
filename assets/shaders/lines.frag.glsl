#version 330 core

in vec4 v_colour;

out vec4 f_colour;

void main() {
    f_colour = v_colour;
}
