"""The one shader loader: GLSL files in, moderngl programs out.

A program ``name`` is the pair ``assets/shaders/<name>.vert.glsl`` and
``<name>.frag.glsl``.  A compile or link error becomes a :class:`ShaderError`
whose message names the file and the line, compiler style
(``assets/shaders/object.frag.glsl:12: error: ...``), followed by the line
itself, instead of the driver's ``0:12(5)`` that names neither.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import moderngl

__all__ = ["SHADER_DIR", "ShaderError", "load_program", "shader_path", "uniform"]

#: Where the GLSL sources live: ``assets/shaders`` at the repository root.
SHADER_DIR = Path(__file__).resolve().parent.parent / "assets" / "shaders"

_STAGES = {"vertex_shader": "vert", "fragment_shader": "frag", "geometry_shader": "geom"}
# Driver log formats: Mesa "0:12(5): error: ...", NVIDIA "0(12) : error ...",
# AMD/Intel "ERROR: 0:12: ...".
_LINE_PATTERNS = (
    re.compile(r"^\s*\d+:(?P<line>\d+)\(\d+\):\s*(?P<msg>.*)$"),
    re.compile(r"^\s*\d+\((?P<line>\d+)\)\s*:\s*(?P<msg>.*)$"),
    re.compile(r"^\s*(?P<kind>ERROR|WARNING):\s*\d+:(?P<line>\d+):\s*(?P<msg>.*)$"),
)


class ShaderError(RuntimeError):
    """A shader failed to load, compile or link; the message names file and line."""


def shader_path(name: str, stage: str, directory: Path | None = None) -> Path:
    """Path of ``<name>.<stage>.glsl`` (``stage`` is ``"vert"`` or ``"frag"``)."""
    return Path(directory or SHADER_DIR) / f"{name}.{stage}.glsl"


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ShaderError(f"{_display(path)}: cannot read shader: {exc.strerror or exc}") from None


def _translate(log: str, paths: dict[str, Path], sources: dict[str, str]) -> str:
    """Rewrite a moderngl compile log so each error names its file and line."""
    stage_path = None
    out: list[str] = []
    for raw in log.splitlines():
        text = raw.strip()
        if not text or set(text) <= {"="}:
            continue
        if text in _STAGES:
            stage_path = paths.get(_STAGES[text])
            continue
        if text in ("GLSL Compiler failed", "GLSL Linker failed", "Program"):
            continue
        for pattern in _LINE_PATTERNS:
            m = pattern.match(text)
            if m and stage_path is not None:
                line = int(m.group("line"))
                msg = m.group("msg")
                if "kind" in m.groupdict() and m.group("kind"):
                    msg = f"{m.group('kind').lower()}: {msg}"
                out.append(f"{_display(stage_path)}:{line}: {msg}")
                src_lines = sources[stage_path.name].splitlines()
                if 1 <= line <= len(src_lines):
                    out.append(f"    {src_lines[line - 1].strip()}")
                break
        else:
            where = ", ".join(_display(p) for p in paths.values())
            out.append(f"{where}: {text}")
    return "\n".join(out) if out else log.strip()


def load_program(ctx: moderngl.Context, name: str, directory: Path | None = None) -> moderngl.Program:
    """Compile and link the program ``name`` from its ``.vert.glsl``/``.frag.glsl`` pair.

    Parameters
    ----------
    ctx : moderngl.Context
    name : str
        Base name, e.g. ``"object"``.
    directory : Path, optional
        Where to look instead of :data:`SHADER_DIR` (tests use this).

    Returns
    -------
    moderngl.Program

    Raises
    ------
    ShaderError
        Missing file, or a compile/link error; the message's lines read
        ``path:line: message``.
    """
    import moderngl  # local: keep this module importable without a GL stack

    paths = {stage: shader_path(name, stage, directory) for stage in ("vert", "frag")}
    sources = {p.name: _read(p) for p in paths.values()}
    try:
        return ctx.program(
            vertex_shader=sources[paths["vert"].name],
            fragment_shader=sources[paths["frag"].name],
        )
    except moderngl.Error as exc:
        raise ShaderError(_translate(str(exc), paths, sources)) from None


def uniform(program: moderngl.Program, name: str) -> moderngl.Uniform:
    """The uniform ``name`` of ``program``.

    ``program[name]`` may also be an attribute, a varying or a uniform block;
    this narrows it to what can be written.

    Raises
    ------
    KeyError
        The program has no member ``name`` (or the compiler optimised it out).
    TypeError
        ``name`` is not a plain uniform.
    """
    import moderngl  # local: keep this module importable without a GL stack

    member = program[name]
    if not isinstance(member, moderngl.Uniform):
        raise TypeError(f"{name!r} is a {type(member).__name__}, not a uniform")
    return member
