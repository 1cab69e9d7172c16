"""Packaging: the wheel is tagged for what it holds, and where no shipped kernel fits it still installs.

A wheel with shipped kernels (the default build, ``tools/shipping_backend.py``)
holds machine code for one Python, ABI and platform and is tagged so; CI builds
it, installs it outside the checkout and checks that its cold start compiles
nothing (``.ci/run``).  Everywhere else pip builds from the source distribution
(compiling the kernels for that machine), or ``CULLING_SHIP_KERNELS=0`` builds a
pure wheel whose kernels compile on first use: that path is tested here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import numpy as np, culling, os
assert os.path.realpath(culling.__file__).startswith(os.path.realpath(os.environ["SITE"])), culling.__file__
before = culling.kernels_cached()
tree = culling.ViewDistanceTree(size=64.0, dim=2)
handles = [tree.insert(point, radius) for point, radius in (([1.0, 1.0], 3.0), ([10.0, 10.0], 1.0), ([5.0, 5.0], 2.0))]
tree.remove(handles[1])
tree.check_invariants()
print(before, handles, len(tree))
"""


def _pure_wheel(out: Path) -> Path:
    env = {**os.environ, "CULLING_SHIP_KERNELS": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    return wheel


def test_a_wheel_built_without_kernels_is_pure_and_compiles_them_on_first_use(tmp_path):
    wheel = _pure_wheel(tmp_path / "dist")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "culling/__init__.py" in names and not any("_compiled" in n for n in names)
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"culling"}

    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # numba and NumPy from this environment, culling from the installed wheel, an empty kernel cache
    deps = sysconfig.get_paths()["purelib"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON", "CULLING_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(site), deps]), SITE=str(site), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "False [0, 1, 2] 2"  # nothing shipped: compiled on first use (single inserts
    # and a remove: some 15 kernels, half the compile of a batch and an exact query),
    assert any((tmp_path / "cache").rglob("*.nbi"))  # and cached for the next run


def test_the_shipping_wheel_is_tagged_for_this_python_abi_and_platform():
    """The tag setuptools gives a wheel with machine code in it (what the backend's ``_platform_wheel``
    asks for): this interpreter, its ABI and its platform, never ``py3-none-any``."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import shipping_backend
    finally:
        sys.path.remove(str(ROOT / "tools"))
    from setuptools.dist import Distribution

    plain = Distribution({"name": "x"})
    with shipping_backend._platform_wheel():
        assert Distribution({"name": "x"}).has_ext_modules()
    assert not plain.has_ext_modules()
    import tomllib  # the build compiles with what the library itself needs (it asked numba>=0.59, which fails)

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert shipping_backend.KERNEL_REQUIRES == dependencies


def test_the_metadata_asks_for_what_the_package_runs_on():
    """``requires-python >= 3.10`` installed a package that failed on import there (``typing.Self``), and
    ``numba >= 0.59`` one whose patches failed every compile below 0.63: the bounds are what it runs on."""
    import tomllib

    from culling.runtime.numba_patches import OLDEST_NUMBA, numba_version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11" and sys.version_info >= (3, 11)
    numba_bound = next(d for d in project["dependencies"] if d.split(">=")[0].strip() == "numba")
    assert numba_bound.replace(" ", "") == "numba>={}.{}".format(*OLDEST_NUMBA)
    assert numba_version() >= OLDEST_NUMBA


def test_an_older_numba_is_left_as_it_is(monkeypatch):
    """Below OLDEST_NUMBA the patches stand aside (numba compiles as it does), as CULLING_NUMBA_PATCHES=0."""
    from culling.runtime import numba_patches

    called = []
    monkeypatch.setattr(numba_patches, "numba_version", lambda: (0, 62))
    monkeypatch.setattr(numba_patches, "_front_end_once", lambda: called.append(True))
    numba_patches.apply()
    assert not called
    monkeypatch.setattr(numba_patches, "numba_version", lambda: numba_patches.OLDEST_NUMBA)
    monkeypatch.delenv(numba_patches.PATCHES_ENV, raising=False)
    numba_patches.apply()  # the other patches are in place already: each is applied once per process
    assert called
