"""The wheel's build backend: setuptools, with the kernels compiled ahead of time and shipped inside.

``build_wheel`` first runs :func:`culling.shipped.ship_kernels` on this source
(every kernel compiled for the architecture's baseline CPU into
``culling/_compiled/``, about as long as a cold first run), builds the wheel
with setuptools, and removes the folder again, so the checkout stays as it
was.  Building a wheel therefore needs NumPy and numba, which the build
environment gets (``get_requires_for_build_wheel``); editable installs and
source distributions are setuptools' own and compile nothing.
``CULLING_SHIP_KERNELS=0`` builds a wheel without kernels (every install
then compiles them on first use, as an editable install does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "culling" / "_compiled"

#: What compiling the kernels needs on top of setuptools: the library's own dependencies.
KERNEL_REQUIRES = ["numpy>=1.24", "numba>=0.59"]


def _shipping() -> bool:
    return os.environ.get("CULLING_SHIP_KERNELS", "1").strip() != "0"


def get_requires_for_build_wheel(config_settings=None):  # noqa: ANN001, ANN201 - PEP 517's signature
    return _setuptools.get_requires_for_build_wheel(config_settings) + (KERNEL_REQUIRES if _shipping() else [])


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):  # noqa: ANN001, ANN201
    if not _shipping():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    subprocess.run([sys.executable, "-m", "culling", "ship-kernels", str(SHIPPED)], env=env, check=True)
    try:
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        shutil.rmtree(SHIPPED, ignore_errors=True)
