"""Data files of the demo: GLSL 330 core shaders in ``assets/shaders``.

Loaded through :func:`engine.shaders.load_program`, which finds them next to
the ``engine`` package.  This file makes ``assets`` a package so the shaders
can ship as package data in a non-editable install.
"""
