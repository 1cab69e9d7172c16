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

Importing it opens no window and loads neither pyglet nor moderngl.
"""

from demo.demo import Demo, DemoError, DemoSettings

__all__ = ["Demo", "DemoError", "DemoSettings"]
