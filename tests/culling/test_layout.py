"""The package's layout holds: shared pieces live below their users.

The floors, lowest first (docs/DESIGN.md, "Module map"): ``runtime`` (JIT, threads,
locks, Ctrl-C) imports nothing; ``core`` (geometry and storage) only ``runtime``;
``pairs`` (the broad phase) builds on both; the structures' base class
(``culling.structure``) on those three; the tree and the grid on the base class and
never on each other; ``uses`` on the tree and the grid.  No module imports its own
package's ``__init__`` (no package-init cycles), and no two modules of one
subpackage import each other.  Read from the installed package's files, so the
check runs on the wheel too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import culling

PACKAGE = Path(culling.__file__).resolve().parent

#: The answers' records, importable from every floor.
RECORDS = {"answer", "trace", "interface", "records"}

#: What each floor (a subpackage, or the base class's module) may import besides itself and the records.
ALLOWED = {
    "runtime": set(),
    "core": {"runtime"},
    "pairs": {"core", "runtime"},
    "structure": {"core", "pairs", "runtime"},
    "tree": {"core", "pairs", "runtime", "structure"},
    "grid": {"core", "pairs", "runtime", "structure"},
    "uses": {"core", "runtime", "structure", "tree", "grid"},
}

#: The floors that are subpackages (``structure`` is one module).
SUBPACKAGES = [floor for floor in ALLOWED if floor != "structure"]


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    found: list[ast.AST] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            found.extend(node for branch in node.orelse for node in [branch, *_runtime_nodes(branch)])
            continue
        found.append(node)
        found.extend(_runtime_nodes(node))
    return found


def _culling_imports(path: Path) -> set[str]:
    """The ``culling.*`` modules ``path`` imports when it runs, as dotted names."""
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
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


def test_floors_import_only_the_floors_below_them():
    bad = {}
    for name, path in _modules().items():
        own = name.split(".")[1] if "." in name else None
        if own not in ALLOWED:
            continue
        for imported in _culling_imports(path):
            other = imported.split(".")[1]
            if other != own and other not in ALLOWED[own] | RECORDS:
                bad.setdefault(name, []).append(imported)
    assert not bad, f"imports above or beside their floor: {bad}"


def test_the_records_import_only_each_other():
    for record in RECORDS:
        path = PACKAGE / f"{record}.py"
        others = {imported.split(".")[1] for imported in _culling_imports(path)}
        assert others <= RECORDS, f"culling.{record} imports {others - RECORDS}"


def test_no_module_imports_its_own_package():
    """``from culling.tree import walk`` inside ``culling.tree`` runs the package's
    ``__init__`` from one of its own modules: a cycle that breaks on reordering."""
    cycles = {}
    for name, path in _modules().items():
        package = name.rsplit(".", 1)[0] if path.name != "__init__.py" else None
        if package and package != "culling" and package in _culling_imports(path):
            cycles[name] = package
    assert not cycles, f"modules importing their own package: {cycles}"


def test_every_floor_has_its_folder():
    for floor in SUBPACKAGES:
        assert (PACKAGE / floor / "__init__.py").is_file(), floor
    assert (PACKAGE / "structure.py").is_file()


def test_no_two_modules_of_one_subpackage_import_each_other():
    modules = _modules()
    imports = {name: {i for i in _culling_imports(path) if i in modules} for name, path in modules.items()}
    cycles = sorted((a, b) for a in imports for b in imports[a]
                    if a < b and a in imports.get(b, set()) and a.rsplit(".", 1)[0] == b.rsplit(".", 1)[0])
    assert not cycles, f"modules that import each other: {cycles}"


def test_every_subpackage_lists_its_public_names():
    for sub in SUBPACKAGES:
        module = __import__(f"culling.{sub}", fromlist=["__all__"])
        assert module.__all__, f"culling.{sub} has an empty __all__"
        for name in module.__all__:
            assert hasattr(module, name), f"culling.{sub}.__all__ names {name!r}, which it lacks"
