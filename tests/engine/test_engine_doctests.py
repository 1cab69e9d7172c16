"""Run the doctests of engine/, scenes/ and demo/ (pytest's --doctest-modules covers culling/ only)."""

import doctest
import importlib

import pytest

MODULES = ["engine.camera", "engine.frustum", "engine.hud", "engine.window",
           "scenes", "scenes.base", "demo.cli"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


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
