"""The demo application: command line, interactive window and headless runner.

This package wires the scenes (``scenes/``: worlds as plain arrays) into the
engine (``engine/``: camera, frustum, culling pipeline, renderer, overlay,
HUD, window base).  Neither of those imports the other; only this package
knows both.  ``run_demo.py`` only calls :func:`demo.cli.main`.

* :mod:`demo.demo`: :class:`~demo.demo.Demo`, one scene with its tree,
  pipeline and renderer; ``update`` (culling) and ``render`` (drawing);
* :mod:`demo.interactive`: the fly-through window (input, HUD, screenshots);
* :mod:`demo.headless`: the same frame offscreen on EGL, written to PNG/GIF;
* :mod:`demo.cli`: flags and one-line errors.

Importing it opens no window and loads neither pyglet nor moderngl, nor
numba: :mod:`demo.cli` parses the flags before anything heavy is imported,
so ``--help`` and a usage error answer at once.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from demo.demo import Demo, DemoError, DemoSettings


def __getattr__(name: str) -> Any:  # PEP 562: demo.demo (numba, the engine) is imported on first use
    if name not in __all__:
        raise AttributeError(f"module 'demo' has no attribute {name!r}")
    import demo.demo

    return getattr(demo.demo, name)


__all__ = ["Demo", "DemoError", "DemoSettings"]
