"""The package's layout holds: shared pieces live below their users.

``culling.core`` imports nothing above it; the tree and the grid never import each
other; ``culling.uses`` builds on both; and no two modules of one subpackage import
each other (docs/DESIGN.md, "Module map").  Read from the installed package's files,
so the check runs on the wheel too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import culling

PACKAGE = Path(culling.__file__).resolve().parent

#: What each subpackage may import from its siblings (besides itself and the top-level modules).
ALLOWED = {
    "core": set(),
    "tree": {"core"},
    "grid": {"core"},
    "uses": {"core", "tree", "grid"},
}


def _culling_imports(path: Path) -> set[str]:
    """The ``culling.*`` modules ``path`` imports, as dotted names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("culling."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "culling":
                found.update(f"culling.{alias.name}" for alias in node.names)
            elif node.module.startswith("culling."):
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if _module_path(name) is not None}


def _module_path(name: str) -> Path | None:
    """The file of module ``name`` inside the package, or None for a name that is not a module."""
    parts = name.split(".")[1:]
    if not parts:
        return None
    candidate = PACKAGE.joinpath(*parts)
    if candidate.with_suffix(".py").is_file():
        return candidate.with_suffix(".py")
    if (candidate / "__init__.py").is_file():
        return candidate / "__init__.py"
    return None


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        found[".".join(["culling", *parts])] = path
    return found


def test_subpackages_import_only_the_floors_below_them():
    bad = {}
    for name, path in _modules().items():
        parts = name.split(".")
        if len(parts) < 3 or parts[1] not in ALLOWED:
            continue
        own = parts[1]
        for imported in _culling_imports(path):
            other = imported.split(".")[1]
            if other != own and other in ALLOWED and other not in ALLOWED[own]:
                bad.setdefault(name, []).append(imported)
    assert not bad, f"imports above or beside their floor: {bad}"


def test_no_two_modules_of_one_subpackage_import_each_other():
    modules = _modules()
    imports = {name: {i for i in _culling_imports(path) if i in modules} for name, path in modules.items()}
    cycles = sorted((a, b) for a in imports for b in imports[a]
                    if a < b and a in imports.get(b, set()) and a.rsplit(".", 1)[0] == b.rsplit(".", 1)[0])
    assert not cycles, f"modules that import each other: {cycles}"


def test_every_subpackage_lists_its_public_names():
    for sub in ALLOWED:
        module = __import__(f"culling.{sub}", fromlist=["__all__"])
        assert module.__all__, f"culling.{sub} has an empty __all__"
        for name in module.__all__:
            assert hasattr(module, name), f"culling.{sub}.__all__ names {name!r}, which it lacks"
