"""The layout as the docs tell it agrees with the tree: docs/DESIGN.md's module map
names every module of ``culling`` and nothing that is not there, its floors table names
every subpackage, and the README's layout table names every folder of the repository
and every floor of ``culling``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "culling"
DESIGN = (ROOT / "docs" / "DESIGN.md").read_text()
README = (ROOT / "README.md").read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def _modules() -> set[str]:
    return {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
            if (path.name != "__init__.py" or path.parent == PACKAGE) and "_compiled" not in path.parts}


def _subpackages() -> set[str]:
    return {path.parent.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("__init__.py")
            if path.parent != PACKAGE and "_compiled" not in path.parts}


def test_the_module_map_names_every_module_and_only_those():
    named = {name for name in re.findall(r"`([a-z_/]+\.py)`", _section(DESIGN, "Module map"))
             if not name.startswith("tools/")}  # the wheel's build backend, named beside shipped.py
    assert _modules() - named == set(), "modules missing from docs/DESIGN.md's module map"
    assert named - _modules() == set(), "docs/DESIGN.md's module map names modules that do not exist"


def test_the_floors_table_names_every_subpackage():
    floors = _section(DESIGN, "Floors")
    for sub in _subpackages():
        assert f"`{sub}/`" in floors, f"culling/{sub}/ missing from docs/DESIGN.md's floors"


def test_the_readme_layout_names_every_folder_and_every_floor():
    layout = _section(README, "The layout")
    folders = {path.name for path in ROOT.iterdir() if path.is_dir() and not path.name.startswith(".")
               and (path / "__init__.py").exists() or path.name in {"tests", "assets", "benchmarks", "examples"}}
    for folder in folders:
        assert f"`{folder}/`" in layout, f"{folder}/ missing from the README's layout"
    for sub in _subpackages():
        assert f"`{sub}/`" in layout, f"culling/{sub}/ missing from the README's layout"
    assert "[docs/DESIGN.md](docs/DESIGN.md)" in README


def test_the_tests_mirror_the_floors():
    tests = ROOT / "tests" / "culling"
    for sub in _subpackages():
        assert (tests / sub).is_dir() and any((tests / sub).glob("test_*.py")), f"tests/culling/{sub}/"


CONTRACT = (ROOT / "docs" / "CONTRACT.md").read_text()


def test_the_contract_names_every_public_name_and_links_every_section():
    import culling

    package = _section(CONTRACT, "Package")
    named = set(re.findall(r"^\| `([A-Za-z_]+)", package, re.M)) | set(re.findall(r", `([A-Za-z_]+)", package))
    assert set(culling.__all__) - named == set(), "public names missing from docs/CONTRACT.md's Package table"
    contents = CONTRACT[CONTRACT.index("Contents:"):CONTRACT.index("## Package")]
    for title in re.findall(r"^## (.+)$", CONTRACT, re.M):
        anchor = re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
        assert f"(#{anchor})" in contents, f"section {title!r} missing from docs/CONTRACT.md's contents"
