"""The wheel's build backend: setuptools, with the kernels compiled ahead of time and shipped inside.

``build_wheel`` copies the library's sources into a temporary folder, runs
:func:`culling.shipped.ship_kernels` there (every kernel compiled for the
architecture's baseline CPU into ``culling/_compiled/``, in worker processes,
one per core, each finished step said on stderr), and builds the wheel from
that copy with setuptools, so the checkout is left exactly as it was (no
``build/``, no ``*.egg-info``; ``build_sdist`` works in such a copy too).  The wheel holds machine code for one
Python, ABI and platform, and is tagged so (``cp311-cp311-linux_x86_64``,
say): pip takes it only on that Python, ABI and platform.  Its kernels also need the numba that
built them; the wheel still asks only for ``numba >= 0.63`` (a pin would fight other packages over
numba), so under another numba they compile on first use, with one ``RuntimeWarning`` naming both
versions (:mod:`culling.runtime.jit`).  Elsewhere pip builds the
wheel from the source distribution (which holds this file), compiling the
kernels for that machine, or ``CULLING_SHIP_KERNELS=0`` builds a pure
``py3-none-any`` wheel that compiles them on first use.

``build_editable`` (``pip install -e .``) ships the kernels the same way into
the checkout's own ``culling/_compiled/`` (ignored by git), compiled for
this machine's own CPU (a checkout runs where it was built: the portable
CPU's code ran the moving frame about 15% slower here), so a checkout
starts like an installed wheel: the first run of the demo or the tests loads
the kernels instead of compiling them, and an edit recompiles only the
kernels whose sources it changed (:mod:`culling.runtime.fingerprint`), at run time
and when ``pip install -e .`` runs again (it starts from the kernels already there).

Building needs NumPy and numba, which the build environment gets
(``get_requires_for_build_wheel`` and ``..._editable``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from setuptools import build_meta as _setuptools

ROOT = Path(__file__).resolve().parent.parent

#: What compiling the kernels needs on top of setuptools: the library's own dependencies.
KERNEL_REQUIRES = ["numpy>=1.24", "numba>=0.63"]

#: What a wheel is built from (copied into a temporary folder): the library and its metadata's files.
WHEEL_SOURCES = ("culling", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "tools/shipping_backend.py")

#: What the sdist is built from: the wheel's sources, the documentation and the library's own tests
#: (MANIFEST.in lists them), so that a packager building from it can read the contract and run the tests.
SDIST_SOURCES = (*WHEEL_SOURCES, "docs", "tests/conftest.py", "tests/culling")


def _shipping() -> bool:
    return os.environ.get("CULLING_SHIP_KERNELS", "1").strip() != "0"


def _say(message: str) -> None:
    print(f"culling build: {message}", file=sys.stderr, flush=True)


def get_requires_for_build_wheel(config_settings=None):  # noqa: ANN001, ANN201 - PEP 517's signature
    with _in_a_copy():  # setuptools writes *.egg-info where it asks
        return _setuptools.get_requires_for_build_wheel(config_settings) + (KERNEL_REQUIRES if _shipping() else [])


def get_requires_for_build_sdist(config_settings=None):  # noqa: ANN001, ANN201
    with _in_a_copy():
        return _setuptools.get_requires_for_build_sdist(config_settings)


def get_requires_for_build_editable(config_settings=None):  # noqa: ANN001, ANN201
    return _setuptools.get_requires_for_build_editable(config_settings) + (KERNEL_REQUIRES if _shipping() else [])


@contextlib.contextmanager
def _in_a_copy(sources: tuple[str, ...] = WHEEL_SOURCES) -> Iterator[Path]:
    """Work in a temporary copy of ``sources`` (setuptools writes ``build/`` and ``*.egg-info``
    where it runs): the checkout is only read."""
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="culling-wheel-") as tmp:
        copy = Path(tmp)
        for name in sources:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "_compiled", ".hypothesis"))
            elif source.exists():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, copy / name)
        os.chdir(copy)
        try:
            yield copy
        finally:
            os.chdir(here)


def _ship(root: Path, what: str, native: bool = False) -> None:
    """Compile every kernel of ``root``'s ``culling`` into its ``_compiled`` folder, saying so (``native``:
    for this machine's CPU, as a checkout's kernels run only here)."""
    _say(f"compiling the kernels for {what} (worker processes, one per core; about a minute of CPU) ...")
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))
    command = [sys.executable, "-m", "culling", "ship-kernels", str(root / "culling" / "_compiled")]
    subprocess.run(command + (["--native"] if native else []), env=env, cwd=root, check=True)
    _say(f"kernels compiled in {time.perf_counter() - start:.0f} s")


@contextlib.contextmanager
def _platform_wheel() -> Iterator[None]:
    """Make setuptools tag the wheel for this Python, ABI and platform (the shipped kernels are machine
    code for them), as it tags a wheel with extension modules."""
    from setuptools.dist import Distribution

    before = Distribution.has_ext_modules
    Distribution.has_ext_modules = lambda self: True  # type: ignore[method-assign]
    try:
        yield
    finally:
        Distribution.has_ext_modules = before  # type: ignore[method-assign]


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):  # noqa: ANN001, ANN201
    with _in_a_copy():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):  # noqa: ANN001, ANN201
    wheel_directory = os.path.abspath(wheel_directory)
    with _in_a_copy() as copy:
        if not _shipping():
            _say("CULLING_SHIP_KERNELS=0: a pure wheel, its kernels compile on first use")
            return _setuptools.build_wheel(wheel_directory, config_settings, None)
        _ship(copy, "the wheel")
        _say("packing the wheel ...")
        with _platform_wheel():
            name = _setuptools.build_wheel(wheel_directory, config_settings, None)
        _say(f"built {name}")
        return name


def build_sdist(sdist_directory, config_settings=None):  # noqa: ANN001, ANN201
    """The library's sources, its documentation and tests, and this backend (no compiled kernels), made
    in a copy like the wheel."""
    sdist_directory = os.path.abspath(sdist_directory)
    with _in_a_copy(SDIST_SOURCES):
        return _setuptools.build_sdist(sdist_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):  # noqa: ANN001, ANN201
    return _setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):  # noqa: ANN001, ANN201
    if _shipping():
        _ship(ROOT, "this checkout (culling/_compiled, for this machine's CPU)", native=True)
    with warnings.catch_warnings():
        # setuptools' boxed note that a folder named as the package may shadow it on import: here that
        # folder is the package (the checkout's culling/), and the box was the README command's only output
        warnings.filterwarnings("ignore", message="Editable installation")
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
