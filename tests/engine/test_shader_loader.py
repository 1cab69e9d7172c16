"""The shader loader: every program compiles, and errors name the file and line."""

import pytest

from engine.shaders import SHADER_DIR, ShaderError, load_program


@pytest.mark.parametrize("name", ["object", "ground", "lines"])
def test_every_program_compiles(gl_ctx, name):
    prog = load_program(gl_ctx, name)
    assert "u_view_projection" in prog
    prog.release()
    assert (SHADER_DIR / f"{name}.vert.glsl").read_text().startswith("#version 330 core")


def _write(tmp_path, name, vert, frag):
    (tmp_path / f"{name}.vert.glsl").write_text(vert)
    (tmp_path / f"{name}.frag.glsl").write_text(frag)


VERT = "#version 330 core\nin vec3 in_position;\nvoid main() {\n    gl_Position = vec4(in_position, 1.0);\n}\n"
FRAG = "#version 330 core\nout vec4 f_colour;\nvoid main() {\n    f_colour = vec4(1.0);\n}\n"


def test_compile_error_names_file_and_line(gl_ctx, tmp_path):
    bad_frag = "#version 330 core\nout vec4 f_colour;\n\nvoid main() {\n    f_colour = vec4(1.0) + missing_thing;\n}\n"
    _write(tmp_path, "broken", VERT, bad_frag)
    with pytest.raises(ShaderError) as info:
        load_program(gl_ctx, "broken", directory=tmp_path)
    first = str(info.value).splitlines()[0]
    assert first.endswith("missing_thing' undeclared") or "missing_thing" in first
    assert "broken.frag.glsl:5:" in first
    assert "missing_thing" in str(info.value).splitlines()[1]        # the offending source line


def test_vertex_syntax_error_names_vertex_file(gl_ctx, tmp_path):
    _write(tmp_path, "syntax", VERT.replace("1.0);", "1.0)"), FRAG)
    with pytest.raises(ShaderError, match=r"syntax\.vert\.glsl:5: .*syntax error"):
        load_program(gl_ctx, "syntax", directory=tmp_path)


def test_link_error_and_missing_file(gl_ctx, tmp_path):
    _write(tmp_path, "link", VERT.replace("void main", "out vec3 v_x;\nvoid main"),
           FRAG.replace("out vec4", "in vec2 v_x;\nout vec4").replace("vec4(1.0)", "vec4(v_x, 0.0, 1.0)"))
    with pytest.raises(ShaderError, match="link.vert.glsl, .*link.frag.glsl: .*v_x"):
        load_program(gl_ctx, "link", directory=tmp_path)
    with pytest.raises(ShaderError, match=r"nothing\.vert\.glsl: cannot read shader"):
        load_program(gl_ctx, "nothing", directory=tmp_path)
