"""Run the doctests of engine/, scenes/, assets/ and the demo (pytest's --doctest-modules covers culling/ only).

The modules are found by their examples (a line starting with ``>>>``), so a
new example is run without editing this file, and each case asserts its module
really ran examples: a module whose examples stopped being collected (an
indented code block instead of a prompt, a typo in the prompt) fails here
instead of passing with zero examples.
"""

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["engine", "scenes", "assets", "demo"]
PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)


def _modules_with_examples() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            if PROMPT.search(path.read_text(encoding="utf-8")):
                found.append(package if path.stem == "__init__" else f"{package}.{path.stem}")
    return found


MODULES = _modules_with_examples()


def test_the_examples_are_found():
    assert {"engine.camera", "engine.frustum", "engine.hud", "scenes", "scenes.base"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    prompts = len(PROMPT.findall(Path(module.__file__).read_text(encoding="utf-8")))
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted == prompts, f"{name}: {prompts} '>>>' lines in the source, {result.attempted} examples run"


def test_imports_have_no_side_effects():
    """Importing the engine or the demo loads neither pyglet nor a GL context (no display needed)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, engine, engine.window, scenes, demo, demo.interactive, demo.demo, demo.headless, demo.cli; "
            "print(sorted(m for m in ('pyglet', 'moderngl') if m in sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
