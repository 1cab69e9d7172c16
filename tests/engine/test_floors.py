"""The floors hold: culling/ imports no GL library and no Ray, scenes/ and engine/ never import
each other, server/ imports neither, assets/ (content both build from) imports none of them, and
only demo/ wires them together (docs/DESIGN.md, "Floors")."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GL = {"pyglet", "moderngl", "pyrr", "glcontext", "PIL"}


def _imported_tops(package: str) -> dict[str, set[str]]:
    """Top-level names each module of ``package`` imports (at any depth of the file)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names.add(arg.value.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


@pytest.mark.parametrize("package, forbidden", [
    ("culling", GL | {"engine", "scenes", "demo", "server", "ray"}),
    ("scenes", GL | {"engine", "demo", "server", "ray"}),
    ("engine", {"scenes", "demo", "server", "ray"}),
    ("server", GL | {"engine", "scenes", "demo", "benchmarks"}),
    ("assets", GL | {"culling", "engine", "scenes", "demo", "server", "ray"}),
])
def test_no_import_across_floors(package, forbidden):
    bad = {module: sorted(names & forbidden) for module, names in _imported_tops(package).items()
           if names & forbidden}
    assert not bad, f"{package}/ imports across its floor: {bad}"


def test_importing_a_scene_loads_no_engine_and_no_gl():
    code = ("import sys, scenes, scenes.forest, scenes.clusters, scenes.swarm; "
            "print(sorted(m for m in ('engine', 'demo', 'pyglet', 'moderngl', 'pyrr', 'PIL') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_scene_mesh_bases_match_the_engine_meshes():
    from engine.lod import full_detail_meshes
    from engine.meshes import MESHES
    from scenes.base import MESH_BASES, mesh_base

    # Scenes name full-detail meshes; the lower levels of detail are the engine's business.
    assert set(MESH_BASES) == set(full_detail_meshes())
    for name in MESH_BASES:
        assert mesh_base(name) == MESHES[name].base
    with pytest.raises(KeyError, match="unknown mesh 'teapot'"):
        mesh_base("teapot")


def test_importing_culling_and_the_regions_loads_no_ray():
    code = ("import sys, culling, server.regions; "
            "print(sorted(m for m in ('ray', 'engine', 'scenes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", ["engine", "scenes", "demo", "examples", "benchmarks", "server"])
def test_the_floors_above_culling_use_only_its_public_names(package):
    import culling

    public = set(culling.__all__)
    bad = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.startswith("culling."):
                    bad.setdefault(str(path.relative_to(ROOT)), []).append(node.module)
                elif node.module == "culling":
                    bad.setdefault(str(path.relative_to(ROOT)), []).extend(
                        alias.name for alias in node.names if alias.name not in public)
            elif isinstance(node, ast.Import):
                bad.setdefault(str(path.relative_to(ROOT)), []).extend(
                    alias.name for alias in node.names if alias.name.startswith("culling."))
    bad = {module: names for module, names in bad.items() if names}
    if package == "benchmarks":  # private on purpose: the profiler times the compiled steps one by one,
        bad.pop("benchmarks/profiling.py", None)  # and the layout comparison prefetches as settle does
        bad.pop("benchmarks/pool_layout.py", None)
    assert not bad, f"{package}/ reaches past culling's public names: {bad}"
