"""Kernels compiled ahead of time and shipped inside the wheel: a first run that compiles nothing.

A fresh install would otherwise compile every kernel on first use (half a
minute and more on a small machine).  The wheel's build runs
:func:`ship_kernels`: every kernel is compiled in a separate process for the
architecture's baseline CPU (``NUMBA_CPU_NAME=generic``, so the machine code
runs on every machine of the architecture) into an empty numba cache, and
the cache's files are copied into ``culling/_compiled/``, one folder per
source folder, each index stamped ``("shipped", fingerprint)``, the
kernel's fingerprint of its sources (:mod:`culling.runtime.fingerprint`).
At run time a kernel whose own cache has no entry loads the shipped one
(:func:`culling.runtime.jit._with_shipped`) when the source, numba's version,
Python's version and the architecture all match; otherwise it compiles as
before.  ``CULLING_SHIPPED_KERNELS=0`` ignores the shipped kernels.

The kernels' code is the same as a native compile's, less the newest
instructions (AVX2, FMA): the loops are scalar and bound by memory, and the
benchmarks measured no difference beyond noise.  To compile them for the
machine at hand instead, set ``CULLING_SHIPPED_KERNELS=0`` (and run
``python -m culling warm-up`` once with it).

``python -m culling ship-kernels DIR`` runs it by hand.  For this machine's
CPU (``--native``, what ``pip install -e .`` runs) it first asks whether the
package's ``_compiled`` folder already holds every kernel for these sources
and this CPU (:func:`native_kernels_current`): a reinstall of an unchanged
checkout then compiles nothing.  Where some are stale (a kernel's source was
edited), the compile starts from the folder's kernels (:func:`_seed`), so only
the kernels whose fingerprint changed compile again.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from culling.runtime.jit import NATIVE_MARK, PORTABLE_CPU, SHIPPED_DIR, SHIPPED_ENV, SHIPPED_LABEL

__all__ = ["SHIPPED_DIR", "native_kernels_current", "native_stamp", "ship_kernels"]

_PACKAGE = SHIPPED_DIR.parent


def _cache_folders() -> dict[str, Path]:
    """numba's cache subfolder name (``NUMBA_CACHE_DIR``) of each source folder of the package, and
    that folder's place under ``_compiled/`` (numba names it by the folder's name and a hash of its path)."""
    folders = {}
    for source in sorted({path.parent for path in _PACKAGE.rglob("*.py")}):
        if SHIPPED_DIR in source.parents or source == SHIPPED_DIR:
            continue
        hashed = hashlib.sha1(os.path.abspath(source).encode()).hexdigest()
        folders[f"{source.name}_{hashed}"] = source.relative_to(_PACKAGE)
    return folders


def native_stamp() -> str:
    """This machine's CPU as LLVM names it, with its features: what a native compile is for (written into
    :data:`~culling.runtime.jit.NATIVE_MARK`, and compared before those kernels are reused)."""
    import llvmlite.binding as llvm

    return f"{llvm.get_host_cpu_name()} {llvm.get_host_cpu_features().flatten()}"


def native_kernels_current(out: Path | str = SHIPPED_DIR) -> int:
    """How many kernel index files ``out`` holds when they are this package's own ``_compiled`` folder,
    compiled for this CPU (:func:`native_stamp`) and current for these sources: every kernel group's
    probed kernels (which between them read every source file the group's kernels depend on) load from
    it with an empty numba cache, in a child process.  0 when any of that fails."""
    out = Path(out)
    mark = out / NATIVE_MARK
    if out.resolve() != SHIPPED_DIR.resolve() or not mark.is_file() or native_stamp() not in mark.read_text():
        return 0
    with tempfile.TemporaryDirectory(prefix="culling-check-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, **{SHIPPED_ENV: "1"})
        env["PYTHONPATH"] = os.pathsep.join([str(_PACKAGE.parent), *filter(None, [env.get("PYTHONPATH")])])
        check = "import sys, culling; sys.exit(0 if culling.kernels_cached() else 1)"
        found = subprocess.run([sys.executable, "-c", check], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL).returncode == 0
    return sum(1 for _ in out.glob("*/*.nbi")) if found else 0


def ship_kernels(out: Path | str = SHIPPED_DIR, quiet: bool = False, program: str | None = None,
                 native: bool = False) -> int:
    """Compile every kernel for the portable CPU and write them, stamped, into ``out``; returns how many
    index files were written.  Runs ``python -m culling warm-up`` in a child process (its workers use
    every core), or ``program`` (Python source: ship what it compiles).

    ``native``: compile for this machine's own CPU instead (``pip install -e .``: a checkout's kernels
    run where they were built, with every instruction the CPU has); ``out`` then holds
    :data:`culling.runtime.jit.NATIVE_MARK`, and only a machine with the same CPU loads them.
    """
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="culling-ship-") as cache:
        cpu = {} if native else {"NUMBA_CPU_NAME": PORTABLE_CPU, "NUMBA_CPU_FEATURES": ""}
        env = {k: v for k, v in os.environ.items() if not (native and k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"))}
        env.update(cpu, NUMBA_CACHE_DIR=cache, **{SHIPPED_ENV: "0"})
        env["PYTHONPATH"] = os.pathsep.join([str(_PACKAGE.parent), *filter(None, [env.get("PYTHONPATH")])])
        if native:
            _seed(Path(cache), out)
        command = ["-m", "culling", "warm-up"] if program is None else ["-c", program]
        subprocess.run([sys.executable, *command], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL if quiet else None)
        if native:
            _drop_superseded(Path(cache))
        if out.exists():
            shutil.rmtree(out)
        written = 0
        folders = _cache_folders()
        for folder in sorted(Path(cache).iterdir()):
            target = out / folders[folder.name]
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted(folder.iterdir()):
                if path.suffix == ".nbi":
                    _restamp(path, target / path.name)
                    written += 1
                elif path.suffix == ".nbc":
                    shutil.copyfile(path, target / path.name)
        if native:
            (out / NATIVE_MARK).write_text(f"compiled for this machine's CPU (pip install -e .): {native_stamp()}\n")
    return written


def _seed(cache: Path, out: Path) -> None:
    """Fill the empty numba cache ``cache`` with the kernels ``out`` holds when they were compiled for this
    CPU (its :data:`~culling.runtime.jit.NATIVE_MARK` names :func:`native_stamp`), relabelled as a local
    cache's: the warm-up then loads every kernel whose fingerprint still matches and compiles only the
    others (numba replaces a stale index whole).  A folder for another CPU, or none, seeds nothing."""
    mark = out / NATIVE_MARK
    if not mark.is_file() or native_stamp() not in mark.read_text():
        return
    for folder, relative in _cache_folders().items():
        source = out / relative
        if not source.is_dir():
            continue
        target = cache / folder
        target.mkdir(parents=True, exist_ok=True)
        for path in source.iterdir():
            if path.suffix == ".nbi":
                _restamp(path, target / path.name, SHIPPED_LABEL, "source")
            elif path.suffix == ".nbc":
                shutil.copyfile(path, target / path.name)
            else:
                continue
            os.utime(target / path.name, ns=(0, 0))  # older than anything the warm-up writes: _drop_superseded


def _drop_superseded(cache: Path) -> None:
    """Delete the seeded files of kernels that moved: numba names a kernel's files by its module, name and
    first line, so an edit above a kernel leaves the seeded ones under the old line, never read again, and
    each edit's ship carried them on.  Where the warm-up wrote an index file for a kernel (it compiled it:
    :func:`_seed` dated the seeded files 1970), the seeded ones of the same module and name go, their data
    files with them."""
    for folder in cache.iterdir():
        kernels: dict[str, list[Path]] = {}
        for index in folder.glob("*.nbi"):
            kernels.setdefault(index.name.rsplit("-", 1)[0], []).append(index)
        for indexes in kernels.values():
            newest = max(path.stat().st_mtime_ns for path in indexes)
            for old in (path for path in indexes if path.stat().st_mtime_ns < newest):
                for path in [old, *folder.glob(glob.escape(old.name[: -len(".nbi")]) + ".*.nbc")]:
                    path.unlink()


def _restamp(index: Path, to: Path, was: str = "source", label: str = SHIPPED_LABEL) -> None:
    """Copy a numba index file with its stamp ``(was, fingerprint)`` relabelled ``(label, fingerprint)``
    (numba's format: its version pickled, then ``(stamp, overloads)`` pickled): a local cache's
    ``"source"`` stamp becomes the shipped one's, and back."""
    with open(index, "rb") as f:
        version = pickle.load(f)
        stamp, overloads = pickle.loads(f.read())
    if not (isinstance(stamp, tuple) and len(stamp) == 2 and stamp[0] == was):
        raise RuntimeError(f"{index} was not stamped {was!r} by culling.runtime.jit (its stamp: {stamp!r})")
    with open(to, "wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(pickle.dumps(((label, stamp[1]), overloads), protocol=-1))
