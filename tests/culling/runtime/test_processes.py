"""Processes: fork after any call, read-only installs, concurrent cold compiles, warm-up.

The subprocess tests compile kernels in an empty cache, which takes
seconds: each runs the least that shows its point (a tree built and one
exact query, the kernels a viewer's first query compiles and calls into
one another, about 15 CPU seconds cold; or one small kernel).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import culling
from culling.runtime.jit import KERNELS

PACKAGE = Path(culling.__file__).resolve().parent

#: A small program: a tree built, one exact query (two dozen kernels, calling one another: the build's,
#: the walk's, the exact decision's); prints the answer, sorted.  (A ``query_many`` would add its own
#: kernels, ten CPU seconds more of compiling each run, and prove nothing more about caches.)
PROGRAM = """
import numpy as np, culling
rng = np.random.default_rng(7)
c = rng.uniform(0.0, 100.0, (500, 3))
tree = culling.ViewDistanceTree(size=128.0, dim=3)
tree.insert_many(c, rng.uniform(1.0, 20.0, 500))
print(*sorted(tree.query(c[0], exact=True).tolist()))
"""

#: A lighter program (about half :data:`PROGRAM`'s compile: single inserts and removes, 15 kernels, some calling
#: others), for the tests whose point is how kernels compile, not what the query answers: a tree of single
#: inserts and removes that checks its own invariants, then its size and handles.
SMALL_PROGRAM = """
import numpy as np, culling
rng = np.random.default_rng(7)
c = rng.uniform(0.0, 100.0, (60, 3))
tree = culling.ViewDistanceTree(size=128.0, dim=3)
h = [tree.insert(x, 1.0 + i % 7) for i, x in enumerate(c)]
for k in h[::3]:
    tree.remove(k)
tree.check_invariants()
print(len(tree), *h)
"""

#: What :data:`SMALL_PROGRAM` prints: 40 left of 60 handed out, 0 .. 59.
SMALL_EXPECTED = " ".join(map(str, [40, *range(60)]))

#: Appended to :data:`PROGRAM`: how many kernels this process compiled (not loaded from a cache).
COMPILED = """
from culling.runtime.jit import KERNELS
print("compiled", sum(1 for k in KERNELS if sum(k._cache_misses.values())))
"""


def _expected() -> str:
    rng = np.random.default_rng(7)
    c = rng.uniform(0.0, 100.0, (500, 3))
    tree = culling.ViewDistanceTree(size=128.0, dim=3)
    tree.insert_many(c, rng.uniform(1.0, 20.0, 500))
    answer = sorted(tree.query(c[0], exact=True).tolist())
    assert len(answer) >= 2  # the query has answers to get wrong
    return " ".join(map(str, answer))


def _run(code: str, env: dict[str, str], cwd: Path, timeout: float = 400.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def _env(**extra: str) -> dict[str, str]:
    """A child's environment: the package on its path; the kernels a wheel ships ignored (these tests are
    about compiling and caching; the shipped kernels have their own test) unless ``extra`` says otherwise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON", "CULLING_"))}
    env.update(PYTHONPATH=str(PACKAGE.parent), PYTHONDONTWRITEBYTECODE="1", CULLING_SHIPPED_KERNELS="0")
    env.update(extra)
    return env


# ----------------------------------------------------------------------------- fork

_FORKED: dict[str, object] = {}


def _child_answers(lo: int) -> tuple[list[int], list[int]]:
    tree = _FORKED["tree"]
    points = _FORKED["points"]
    assert isinstance(tree, culling.ViewDistanceTree) and isinstance(points, np.ndarray)
    handles, counts = tree.query_many(points[lo:lo + 200], exact=True)
    return handles.tolist(), counts.tolist()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_fork_pool_maps_query_many_after_the_parent_ran_it():
    rng = np.random.default_rng(8)
    centres = rng.uniform(0.0, 500.0, (5000, 3))
    tree = culling.ViewDistanceTree(size=512.0, dim=3)
    tree.insert_many(centres, rng.uniform(1.0, 30.0, 5000))
    points = rng.uniform(0.0, 500.0, (800, 3))
    expected = [tree.query_many(points[lo:lo + 200], exact=True) for lo in range(0, 800, 200)]  # the parent's pool
    _FORKED.update(tree=tree, points=points)
    try:
        with multiprocessing.get_context("fork").Pool(2) as workers:
            got = workers.map_async(_child_answers, range(0, 800, 200)).get(timeout=120)
    finally:
        _FORKED.clear()
    for (handles, counts), (want_h, want_c) in zip(got, expected):
        assert handles == want_h.tolist() and counts == want_c.tolist()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_queries_and_mutates_its_own_copy():
    tree = culling.ViewDistanceTree(size=64.0, dim=2)
    rng = np.random.default_rng(9)
    centres = rng.uniform(0.0, 60.0, (300, 2))
    handles = tree.insert_many(centres, rng.uniform(1.0, 9.0, 300))
    tree.query_many(centres, exact=True)
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if everything works
        try:
            tree.remove_many(handles[:100])
            tree.query_many(centres, exact=True)
            tree.check_invariants()
            os._exit(0 if len(tree) == 200 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(tree) == 300


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_writes_its_own_copy_of_a_dense_grids_mapped_cells():
    """The grid's per-cell columns are an anonymous mapping (``growth.untouched_zeros``): private, so a
    forked child's writes stay in the child."""
    grid = culling.DenseViewDistanceGrid(size=64.0, dim=2, min_radius=1.0)
    handles = grid.insert_many(np.array([[5.0, 5.0], [40.0, 40.0]]), np.array([1.0, 2.0]))
    pid = os.fork()
    if pid == 0:
        try:
            grid.remove_many(handles)
            grid.insert_many(np.array([[20.0, 20.0]]), np.array([1.0]))
            os._exit(0 if len(grid) == 1 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(grid) == 2 and grid.query([5.0, 5.0], exact=True).tolist() == [handles[0]]
    assert grid.query([20.0, 20.0]).size == 0
    grid.check_invariants()


def test_untouched_zeros_are_zero_writable_and_any_length():
    from culling.core.growth import untouched_zeros

    for dtype in (np.int32, np.int64, np.float64):
        a = untouched_zeros(100_000, dtype)
        assert a.dtype == dtype and a.shape == (100_000,) and not a.any() and a.flags.writeable
        a[77] = 3
        assert a.sum() == 3
    assert untouched_zeros(0, np.int32).shape == (0,)


def test_a_kernel_load_leaves_scipy_linalg_unimported_and_numbas_blas_working(tmp_path):
    """numba's BLAS probe, when numba imports its ``arraymath``, imports ``scipy.linalg`` (0.12 s); culling
    answers it from SciPy's presence instead, and numba's own linear algebra still works.  A process that
    only loads the kernels (the second run: the first filled the cache, or loaded what is shipped) does
    not import ``arraymath`` at all: no kernel holds its code."""
    pytest.importorskip("scipy")
    code = PROGRAM + """
import sys
h = tree.insert_many(c + 1.0, np.full(500, 3.0))
tree.update_many(h, c + 2.0)
tree.query_many(c[:50], exact=True)
im = culling.InterestManager(128.0)
im.insert_many(c, np.full(500, 5.0))
for step in range(2):
    im.tick(np.arange(20), c[:20] + step)
print("scipy.linalg" in sys.modules, "numba.np.arraymath" in sys.modules)
import numba, numba.np.arraymath
@numba.njit
def dot(a, b):
    return np.dot(a, b)
print(numba.np.arraymath._HAVE_BLAS, dot(np.ones(3), np.arange(3.0)))
"""
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"), CULLING_SHIPPED_KERNELS="1")
    first, second = (_run(code, env, tmp_path) for _ in range(2))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split("\n")[1] in ("False True", "False False")  # a compile imports arraymath
    assert second.stdout.split("\n")[1:3] == ["False False", "True 3.0"]


# ----------------------------------------------------------------------------- caches


def _run_read_only(site: Path, program: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    """``program`` with the package copy in ``site`` made unwritable: no ``__pycache__`` folder possible
    in it (a file of that name; and read-only for a user other than root), and every cache folder numba
    could use under a plain file."""
    for cache in list((site / "culling").rglob("__pycache__")):
        shutil.rmtree(cache)
    for folder in [site / "culling", *(p for p in (site / "culling").rglob("*") if p.is_dir())]:
        (folder / "__pycache__").write_text("not a folder")
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    env = {**env, "NUMBA_CACHE_DIR": str(blocker / "numba"), "HOME": str(blocker / "home"),
           "XDG_CACHE_HOME": str(blocker / "cache"), "PYTHONPATH": str(site)}
    for path in [site, *site.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        return _run("import warnings; warnings.simplefilter('always')\n" + program, env, tmp_path)
    finally:
        for path in [site, *site.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


def test_an_install_where_no_cache_can_be_written_compiles_in_memory(tmp_path):
    """A copy of the package where nothing can be written (:func:`_run_read_only`)."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "culling", ignore=shutil.ignore_patterns("__pycache__"))
    proc = _run_read_only(site, SMALL_PROGRAM + COMPILED, _env(), tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer, compiled = proc.stdout.splitlines()
    assert answer == SMALL_EXPECTED and int(compiled.split()[1]) >= 10  # the kernels compiled, in memory
    assert proc.stderr.count("no numba cache directory can be written") == 1, proc.stderr[-3000:]


#: Compiles (or loads) one small kernel; prints how many of its signatures came from the cache and how
#: many were compiled.
CACHE_PROBE = """
import numpy as np
from culling.core import members
members.candidates(np.arange(3), np.ones(3, dtype=np.int64))
print(sum(members.candidates.stats.cache_hits.values()), sum(members.candidates.stats.cache_misses.values()))
"""


#: :data:`CACHE_PROBE`, then how many kernels were loaded as shipped (what ``python -m culling warm-up`` reports).
SHIPPED_PROBE = CACHE_PROBE + """
from culling.runtime.jit import shipped_loaded
print(shipped_loaded())
"""


def test_an_edit_of_a_file_a_kernel_calls_into_compiles_it_again(tmp_path):
    """numba stamps a cached kernel with its own file only, but a kernel holds the code of what it
    calls from other files: its fingerprint (``culling.runtime.fingerprint``) covers them, so an edit of
    one (here ``runtime/compile_options.py``, which every kernel's options come from) loads nothing stale."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "culling", ignore=shutil.ignore_patterns("__pycache__"))
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = str(site)
    runs = []
    for edit in (False, False, True):
        if edit:
            with open(site / "culling" / "runtime" / "compile_options.py", "a") as source:
                source.write("# an edit in another module\n")
        proc = _run(CACHE_PROBE, env, tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(proc.stdout.split())
    assert runs == [["0", "1"], ["1", "0"], ["0", "1"]]  # compiled; loaded; compiled again after the edit


def _copy_shipping_the_probe(tmp_path: Path, native: bool = False) -> tuple[Path, dict[str, str]]:
    """A copy of the package (in ``site``) that ships :data:`CACHE_PROBE`'s kernel compiled, as a wheel
    ships all of them (``culling.shipped``; ``native``: as ``pip install -e`` ships them, for this
    machine's CPU), and the environment that imports it."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "culling", ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    env = _env(CULLING_SHIPPED_KERNELS="1", PYTHONPATH=str(site))
    ship = _run("from culling.shipped import ship_kernels; "
                f"print(ship_kernels(program={CACHE_PROBE!r}, native={native}))", env, tmp_path)
    assert ship.returncode == 0, ship.stderr[-3000:]
    assert int(ship.stdout) >= 1 and any((site / "culling" / "_compiled").rglob("*.nbc"))
    return site, env


@pytest.mark.parametrize("value, answer", [("maybe", "ValueError: CULLING_SHIPPED_KERNELS must be 0 (ignore the "
                                                      "shipped kernels) or 1, got 'maybe'"),
                                           ("", "imported"), (" 1 ", "imported"), ("0", "imported")])
def test_culling_shipped_kernels_other_than_0_or_1_is_refused_on_import(value, answer, tmp_path):
    """A misspelt switch (``CULLING_SHIPPED_KERNELS=no``, say) would otherwise leave the shipped kernels in use
    without a word: ``import culling`` refuses it.  Unset or empty means 1."""
    proc = _run("import culling; print('imported')", _env(CULLING_SHIPPED_KERNELS=value), tmp_path, timeout=120)
    got = proc.stdout.strip() if proc.returncode == 0 else proc.stderr.strip().splitlines()[-1]
    assert got == answer, proc.stderr


def test_shipped_kernels_another_numba_or_python_compiled_are_named_in_one_warning_on_import(tmp_path):
    """Kernels shipped by another numba (or for another Python) cannot load: ``import culling`` says so once,
    with both versions, rather than leaving a first frame to compile for half a minute without a word."""
    import pickle
    import warnings

    import numba

    from culling.runtime import jit

    here = f"py{sys.version_info.major}{sys.version_info.minor}"
    folder = tmp_path / "core"
    folder.mkdir()

    def ship(numba_version: str, python: str = here) -> str | None:
        """One index file as numba writes it (its version pickled first), alone in the folder: the misfit."""
        for old in folder.iterdir():
            old.unlink()
        with open(folder / f"members.keep_rows-139.{python}.nbi", "wb") as f:
            pickle.dump(numba_version, f, protocol=-1)
            f.write(pickle.dumps((("shipped", "x"), {}), protocol=-1))
        return jit.shipped_misfit(tmp_path)

    assert jit.shipped_misfit(tmp_path) is None  # nothing shipped
    assert ship(numba.__version__) is None
    assert ship(numba.__version__, "py27") == (f"the kernels shipped in {tmp_path} were compiled by numba "
                                               f"{numba.__version__} for py27; this is numba {numba.__version__} on {here}")
    assert ship("0.1.0") == (f"the kernels shipped in {tmp_path} were compiled by numba 0.1.0 for {here}; this is "
                             f"numba {numba.__version__} on {here}")
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mp.setattr(jit, "SHIPPED_DIR", tmp_path)
        mp.setenv("CULLING_SHIPPED_KERNELS", "1")
        jit._warn_where_shipped_cannot_load()
        mp.setenv("CULLING_SHIPPED_KERNELS", "0")
        jit._warn_where_shipped_cannot_load()  # ignored: not a word
    assert [(w.category, str(w.message)) for w in caught] == [(RuntimeWarning, (
        f"culling: {ship('0.1.0')}, so each kernel compiles on its first use (run `python -m culling warm-up` to "
        "compile them all ahead; CULLING_SHIPPED_KERNELS=0 ignores the shipped ones and this warning)"))]
    assert jit.shipped_misfit() is None  # this checkout's or wheel's own kernels fit


def test_a_wheels_shipped_kernels_load_where_the_cache_is_empty(tmp_path):
    """What a wheel ships (``culling.shipped``: kernels compiled for the portable CPU, stamped with each
    kernel's fingerprint of its sources) loads in a process whose numba cache is empty, and nothing is
    compiled or written there; ``CULLING_SHIPPED_KERNELS=0`` and an edit of the kernel's source compile
    instead."""
    site, env = _copy_shipping_the_probe(tmp_path)
    runs = []
    for name, extra, edit in (("shipped", {}, False), ("ignored", {"CULLING_SHIPPED_KERNELS": "0"}, False),
                              ("edited", {}, True)):
        if edit:
            with open(site / "culling" / "core" / "members.py", "a") as source:
                source.write("# an edit of the kernel's module\n")
        cache = tmp_path / f"cache-{name}"
        proc = _run(SHIPPED_PROBE, {**env, "NUMBA_CACHE_DIR": str(cache), **extra}, tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append((proc.stdout.split(), any(cache.rglob("*.nbi"))))
    # loaded from the wheel (and counted as shipped), the cache untouched; compiled and cached; compiled and
    # cached (stale shipment)
    assert runs == [(["1", "0", "1"], False), (["0", "1", "0"], True), (["0", "1", "0"], True)]


def test_a_checkouts_kernels_load_on_its_own_cpu_and_compile_on_another(tmp_path):
    """``pip install -e`` ships a checkout's kernels for this machine's CPU (``NATIVE_MARK``): they load
    here, with an empty cache; a process that asks numba for another CPU (as another machine would
    have) compiles instead of running code its CPU may lack."""
    site, env = _copy_shipping_the_probe(tmp_path, native=True)
    assert (site / "culling" / "_compiled" / "NATIVE").is_file()
    here = _run(CACHE_PROBE, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "here")}, tmp_path)
    other = _run(CACHE_PROBE, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "other"), "NUMBA_CPU_NAME": "generic",
                               "NUMBA_CPU_FEATURES": ""}, tmp_path)
    assert here.returncode == 0 and other.returncode == 0, here.stderr[-2000:] + other.stderr[-2000:]
    assert here.stdout.split() == ["1", "0"] and other.stdout.split() == ["0", "1"]


def test_a_read_only_install_loads_the_kernels_its_wheel_ships(tmp_path):
    """Where no cache folder can be written (:func:`_run_read_only`), the shipped kernels still load
    (numba's cache object is made without its locator), and the one warning says so."""
    site, env = _copy_shipping_the_probe(tmp_path)
    proc = _run_read_only(site, CACHE_PROBE, env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["1", "0"]  # loaded, not compiled
    assert proc.stderr.count("no numba cache directory can be written") == 1, proc.stderr[-3000:]
    assert "the kernels the wheel ships are loaded" in proc.stderr


def test_concurrent_cold_compiles_into_one_cache_are_safe(tmp_path):
    """Two processes compile the same kernels into one empty cache at once (each may load what the
    other has just written): both answer right, and a third process loads every kernel and answers
    right."""
    cache = tmp_path / "cache"
    env = _env(NUMBA_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", SMALL_PROGRAM], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=400) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert out.strip() == SMALL_EXPECTED
    assert any(cache.rglob("*.nbi")), "nothing was cached"
    warm = _run(SMALL_PROGRAM + COMPILED, env, tmp_path)
    assert warm.returncode == 0, warm.stderr[-3000:]
    assert warm.stdout.splitlines() == [SMALL_EXPECTED, "compiled 0"]  # every kernel loaded, and right


# ----------------------------------------------------------------------------- warm-up


WORKLOAD = """
import copy, pickle
import numpy as np, culling
from culling.runtime.jit import KERNELS
culling.warm_up()
before = [len(k.signatures) for k in KERNELS]
rng = np.random.default_rng(0)
for dim in (1, 2, 3):
    for shape in ("sphere", "cube"):
        c = rng.uniform(0.0, 1000.0, (3000, dim))
        r = rng.uniform(0.5, 60.0, 3000)
        for s in (culling.ViewDistanceTree(1024.0, dim=dim, shape=shape),
                  culling.DenseViewDistanceGrid(1024.0, dim=dim, shape=shape, min_radius=1.0)):
            h = s.insert_many(c.astype(np.float32), r.tolist())
            s.insert(c[0], 2.0)
            s.query(c[1]); s.query(c[1].tolist(), exact=True); s.query(c[2], exact=True, scale=50.0)
            s.query_spheres(c[3], exact=True); s.trace(c[4]); s.trace(c[4], scale=100.0)
            s.query_many(c[:100]); s.query_many(c[:10], exact=True); s.query_many(c[:300], exact=True, scale=30.0)
            s.overlapping(c[6], 3.0); s.overlapping(c[6].tolist(), 0.0, exact=True)
            s.overlapping_many(c[:100], 2.0); s.overlapping_many(c[:10], r[:10], exact=True, scale=2.0)
            s.overlapping_pairs()
            s.update_many(h, c + 0.5, r); s.update(h[0], c[5], 3.0); s.remove(h[1]); s.remove_many(h[2:50])
            s.check_invariants()
        ref = culling.BruteForceIndex(c, r, shape=shape)  # the reference a program checks them against
        ref.query(c[1], exact=True); ref.query_many(c[:10], exact=True, scale=2.0); ref.query_spheres(c[3], exact=True)
        ref.overlapping(c[6], 3.0, exact=True); ref.overlapping_many(c[:10], r[:10], exact=True); ref.overlapping_pairs()
        far = np.zeros((4, dim)); far[1, 0] = 1.0; far[2:] = 1000.0; far[3, 0] = 999.0
        for s in (culling.ViewDistanceTree(1024.0, dim=dim, shape=shape),
                  culling.DenseViewDistanceGrid(1024.0, dim=dim, shape=shape, min_radius=1.0)):
            s.insert_many(far, np.full(4, 1.0))
            s.overlapping_pairs()  # two clusters far apart: the structure's own walk joins them
from culling.tree.batch import PARALLEL_SETTLE_MIN
big = culling.ViewDistanceTree(1024.0, dim=3)  # enough movers for their searches and their settling to run apart
n = PARALLEL_SETTLE_MIN + 5000
c = rng.uniform(0.0, 1000.0, (n, 3))
hb = big.insert_many(c, np.full(n, 0.5))
big.update_many(hb, 1000.0 - c, np.full(n, 0.5))
big.check_invariants()
big.query_many(rng.uniform(0.0, 1000.0, (20000, 3)), exact=True)  # more points than a chunk: placed back in order
big.remove_many(hb[: n - 100])  # a level unloaded: the tree packs its pool into fresh arrays
try:
    big.update_many(hb[-3:], np.array([[1e300, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]))
except ValueError:  # beyond the largest world: refused, the others' rows put back
    pass
big.check_invariants()
grown = culling.ViewDistanceTree(1024.0, dim=3)
grown.insert((10.0, 10.0, 10.0), 30.0)
grown.remove(grown.insert((100.0, 100.0, 100.0), 5000.0))  # the root grown, then shrunk: its blocks released
grown.check_invariants()

def frozen(a):  # what Ray hands an actor, np.broadcast_to, a read-only memmap
    a = np.array(a)
    a.flags.writeable = False
    return a

c = frozen(rng.uniform(0.0, 1000.0, (500, 3)))
r = frozen(rng.uniform(0.5, 60.0, 500))
for s in (culling.ViewDistanceTree(1024.0, dim=3), culling.DenseViewDistanceGrid(1024.0, dim=3, min_radius=1.0)):
    h = s.insert_many(c, r)
    s.query(c[0], exact=True); s.query_many(c[:50], exact=True); s.overlapping_many(c[:10], r[:10], exact=True)
    s.update_many(frozen(h[:10]), c[10:20], r[:10]); s.remove_many(frozen(h[20:30]))
    for twin in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):  # copies come back writable
        twin.query(c[0], exact=True); twin.query_many(c[:50], exact=True); twin.overlapping_pairs()
        twin.update_many(h[:5], c[:5] + 1.0, r[:5]); twin.insert_many(c[:5], r[:5]); twin.check_invariants()
im = culling.InterestManager(1024.0, dim=3)
eh = im.insert_many(c, r)
im.tick(frozen(np.arange(20)), c[:20]); im.update_many(frozen(eh[:5]), c[5:10]); im.remove_many(frozen(eh[5:8]))
for twin in (pickle.loads(pickle.dumps(im)), copy.deepcopy(im), im):
    twin.tick(np.arange(20), c[:20] + 0.5); twin.tick(frozen(np.arange(20)), c[:20])
after = [len(k.signatures) for k in KERNELS]
new = [k.py_func.__qualname__ for k, a, b in zip(KERNELS, before, after) if a != b]
many = [k.py_func.__qualname__ for k in KERNELS if len(k.signatures) > 1]
print("new:", new, "many:", many)
"""


def test_warm_up_compiles_every_kernel_the_calls_use_once():
    """After ``warm_up``, calls of every kind in every dimension and shape compile nothing more, and no
    kernel has a second signature: not for read-only inputs, nor for pickled and copied structures.  (A fresh process, so earlier tests' compiles do not count; with the
    kernels ``pip install -e`` shipped, if any: a kernel loaded counts as a kernel compiled.)"""
    proc = _run(WORKLOAD, _env(CULLING_SHIPPED_KERNELS="1"), PACKAGE.parent)  # loaded or compiled alike
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "new: [] many: []"


def test_warm_up_reports_progress_and_the_command_draws_a_bar():
    calls: list[tuple[int, int, str]] = []
    seconds = culling.warm_up(lambda done, total, name: calls.append((done, total, name)))
    assert seconds >= 0.0
    assert [c[0] for c in calls] == list(range(1, len(calls) + 1))
    assert {c[1] for c in calls} == {len(calls)} and all(c[2] for c in calls)
    assert any(k.signatures for k in KERNELS)
    # The bar says "compiling" only where something may compile: loading what is cached or shipped, it
    # says so (the second run: the check made to answer "nothing cached", as on a first run).
    for first_run in ("", "M.kernels_cached = lambda groups=None: False; "):
        proc = _run("import sys; import culling.__main__ as M; from culling import kernels_cached; "
                    f"print(kernels_cached()); {first_run}sys.exit(M.main(['warm-up']))",
                    _env(CULLING_SHIPPED_KERNELS="1"), PACKAGE.parent)
        assert proc.returncode == 0, proc.stderr[-3000:]
        cached = proc.stdout.split()[0] == "True" and not first_run
        label = "loading the compiled kernels" if cached else "compiling kernels (first run only)"
        assert proc.stderr.startswith(label + " ...") or proc.stderr.startswith(label + ", or loading"), proc.stderr
        assert f"{label}: [{'#' * 30}] {len(calls)}/{len(calls)}" in proc.stderr and "kernels ready in" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["warm-up", "--groups", "bogus"], "--groups: choose one or more of tree, pairs, grid, interest, cubes, got 'bogus'"),
    (["warm-up", "--groups", ""], "--groups: choose one or more of tree, pairs, grid, interest, cubes, got ''"),
    (["warm-up", "--groups=,"], "--groups: choose one or more of tree, pairs, grid, interest, cubes, got ','"),
    (["warm-up", "--workers", "0"], "--workers must be at least 1, got 0"),
    (["ship-kernels", "/proc/no such folder"],
     "cannot write the kernels into /proc/no such folder: No such file or directory"),
    (["ship-kernels", ""],  # was the package's own folder: an installed package's files rewritten, status 0
     "FOLDER must name a folder, got an empty string (leave it out for the package's own)"),
])
def test_the_commands_refuse_bad_flags_with_their_own_usage(args, message, capsys):
    import culling.__main__ as cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"usage: python -m culling {args[0]} ")
    assert err[-1] == f"python -m culling {args[0]}: error: {message}"


def test_ship_kernels_into_a_file_is_refused_before_compiling(tmp_path, capsys):
    import culling.__main__ as cli

    (tmp_path / "a file").write_text("")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["ship-kernels", str(tmp_path / "a file" / "kernels")])
    assert exit_.value.code == 2
    assert "cannot write the kernels into" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the file itself: it said "File exists"
        cli.main(["ship-kernels", str(tmp_path / "a file")])
    assert capsys.readouterr().err.endswith(f"cannot write the kernels into {tmp_path / 'a file'}: it is a file, "
                                            "not a folder\n")


def test_ctrl_c_in_a_cold_warm_up_is_one_line_and_status_130(tmp_path):
    """It was a traceback through the workers' queue, and the status of a process killed by SIGINT."""
    import signal  # (tests/interrupts.py is not among the tests run against the installed wheel)

    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "culling", "warm-up", "--groups", "tree", "--workers", "1"],
                            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("compiling kernels"), proc.communicate()[1]  # under way
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "python -m culling: error: interrupted" and "Traceback" not in err, err


def test_sigterm_in_a_cold_warm_up_stops_its_workers_and_is_one_line_and_status_143(tmp_path):
    """``docker stop`` sends SIGTERM: it ended the parent alone, its workers went on compiling and their
    folder stayed.  Now it is a Ctrl-C: the workers are stopped, the folder removed, one line, 143."""
    import signal

    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "culling", "warm-up", "--groups", "tree", "--workers", "2"],
                            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("compiling kernels"), proc.communicate()[1]  # under way
    proc.send_signal(signal.SIGTERM)                                     # the parent alone
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, err
    assert err.splitlines()[-1] == "python -m culling: error: terminated" and "Traceback" not in err, err
    left = []                                                            # the session held only its workers
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()          # after the command's name
            if int(fields[3]) == proc.pid and fields[0] != "Z":          # its session, not a zombie
                left.append(stat.parent.name)
    assert left == [], f"workers still running: {left}"
    assert not list(tmp_path.glob("culling-warm-up-*"))


def test_a_warm_up_that_could_cache_nothing_fails_the_build_step(monkeypatch, capsys):
    """``python -m culling warm-up`` when building an image: with no numba cache folder it can write, it
    compiled in memory only and exited 0, so the step passed and the image's first run compiled again."""
    import culling.__main__ as cli

    monkeypatch.setattr(cli, "warm_up", lambda *a, **k: 0.5)
    monkeypatch.setattr(cli, "shipped_loaded", lambda: 0)
    monkeypatch.setattr(cli, "cache_writable", lambda: False)
    assert cli.main(["warm-up", "--groups", "tree"]) == 1
    assert "compiled in memory only: no numba cache folder can be written" in capsys.readouterr().err
    monkeypatch.setattr(cli, "cache_writable", lambda: True)
    assert cli.main(["warm-up", "--groups", "tree"]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "kernels ready in 0.5 s, kept in the numba cache"


def test_warm_up_of_no_groups_warms_nothing_and_bad_workers_are_refused():
    from culling import warm_up

    calls = []
    assert isinstance(warm_up(lambda *step: calls.append(step), groups=[]), float)
    assert calls == []
    for workers in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            warm_up(None, groups=[], workers=workers)


def test_the_command_ends_without_pythons_teardown_but_runs_the_exit_functions_and_flushes():
    """``python -m culling`` ends with ``exit_without_teardown``: the exit status kept, the exit functions run,
    what was printed without a flush written, and the modules' teardown skipped (an object freed only by it
    says nothing), since freeing every compiled kernel's numba and LLVM objects costs about 2 CPU s."""
    script = ("import atexit, sys\n"
              "from culling.__main__ import exit_without_teardown\n"
              "class Noisy:\n"
              "    def __del__(self):\n"
              "        print('torn down', flush=True)\n"
              "kept = Noisy()\n"
              "atexit.register(lambda: print('exit function'))\n"
              "print('unflushed', end='')\n"
              "sys.stderr.write('to stderr')\n"
              "exit_without_teardown(3)\n")
    proc = _run(script, _env(), PACKAGE.parent)
    assert proc.returncode == 3
    assert proc.stdout == "unflushedexit function\n" and proc.stderr == "to stderr"
    proc = _run(script.replace("exit_without_teardown(3)", "sys.exit(3)"), _env(), PACKAGE.parent)
    assert proc.returncode == 3 and "torn down" in proc.stdout  # what the usual exit does, and this skips
    text = (PACKAGE / "__main__.py").read_text()
    assert 'if __name__ == "__main__":\n    exit_without_teardown(_main_interrupted())' in text


#: Two kernels of two files that share no source (``core/members.py``, ``core/floats.py``), each called once;
#: appends to the file ``HITS`` names how many of the two loaded from a cache and how many compiled.
TWO_KERNELS = """
import os, numpy as np
from culling.core import floats, members
members.candidates(np.arange(3), np.ones(3, dtype=np.int64))
floats.exact_sign(np.array([1.0, -0.5]))
stats = [members.candidates.stats, floats.exact_sign.stats]
with open(os.environ["HITS"], "a") as f:
    print(sum(sum(s.cache_hits.values()) for s in stats), sum(sum(s.cache_misses.values()) for s in stats), file=f)
"""


def test_a_native_ship_after_an_edit_compiles_only_the_kernels_the_edit_touched(tmp_path):
    """``pip install -e .`` after an edit of one kernel's source compiled all 88 again (20 to 50 s on 2 cores):
    the ship now starts from the kernels already compiled for this CPU, so only those whose fingerprint
    changed compile, and what it writes loads, every kernel current; the files of a kernel an edit moved to
    another line go."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "culling", ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    hits = tmp_path / "hits"
    env = _env(CULLING_SHIPPED_KERNELS="1", PYTHONPATH=str(site), HITS=str(hits))
    ship = f"from culling.shipped import ship_kernels; print(ship_kernels(program={TWO_KERNELS!r}, native=True))"
    for edit in (False, False, True):
        if edit:
            with open(site / "culling" / "core" / "floats.py", "a") as source:
                source.write("# an edit of one kernel's module\n")
        proc = _run(ship, env, tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run(TWO_KERNELS, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "empty")}, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # both compiled; both loaded from the last ship; one loaded, the edited one compiled; both load as shipped
    assert hits.read_text().split("\n")[:-1] == ["0 2", "2 0", "1 1", "2 0"]
    # an edit above a kernel moves it to another line, where numba names its files: the old ones are not shipped on
    floats = site / "culling" / "core" / "floats.py"
    floats.write_text("# a line above every kernel of the module\n" + floats.read_text())
    proc = _run(ship, env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shipped = site / "culling" / "_compiled"
    assert len(list(shipped.rglob("floats.exact_sign-*.nbi"))) == 1
    assert len(list(shipped.rglob("floats.exact_sign-*.nbc"))) == 1
    assert len(list(shipped.rglob("members.candidates-*.nbi"))) == 1


def test_a_native_ship_into_kernels_current_for_these_sources_compiles_nothing(tmp_path, monkeypatch, capsys):
    """``pip install -e .`` of an unchanged checkout compiled every kernel again (about 40 s on 2 cores): the
    ship now asks first whether the package's own ``_compiled`` holds them all, for this CPU."""
    import culling.__main__ as cli
    import culling.shipped as shipped
    from culling.runtime.jit import NATIVE_MARK, SHIPPED_DIR

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / NATIVE_MARK).write_text(f"compiled for this machine's CPU: {shipped.native_stamp()}\n")
    assert shipped.native_kernels_current(elsewhere) == 0          # not this package's own folder
    if (SHIPPED_DIR / NATIVE_MARK).is_file() and shipped.native_stamp() not in (SHIPPED_DIR / NATIVE_MARK).read_text():
        assert shipped.native_kernels_current() == 0                # compiled for another CPU (or before the stamp)
    monkeypatch.setattr(shipped, "native_kernels_current", lambda folder: 88)
    monkeypatch.setattr(shipped, "ship_kernels", lambda *a, **k: pytest.fail("compiled although current"))
    assert cli.main(["ship-kernels", "--native", str(tmp_path / "out")]) == 0
    assert "88 kernels in" in capsys.readouterr().err
