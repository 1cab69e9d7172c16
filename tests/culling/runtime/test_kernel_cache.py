"""The kernels' disk cache: an edit recompiles only what it can change; a damaged or full cache compiles.

Each test runs small programs in fresh processes on a copy of the package,
with a numba cache of their own, and reads which kernels compiled from
numba's own counters (``_cache_misses``), never from the time it took.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import culling

PACKAGE = Path(culling.__file__).resolve().parent

#: A viewer's frame (build, exact query, moving objects); prints which kernels compiled, which loaded, and
#: which kernels' fingerprints depend on core/members.py.
FRAME = """
import json, warnings
import numpy as np
import culling
from culling.runtime.fingerprint import dependencies
from culling.runtime.jit import KERNELS
tree = culling.ViewDistanceTree(size=64.0, dim=3)
rng = np.random.default_rng(0)
h = tree.insert_many(rng.uniform(0, 60, (50, 3)), rng.uniform(0.5, 8, 50))
tree.query((5.0, 5.0, 5.0), exact=True)
tree.update_many(h, rng.uniform(0, 60, (50, 3)), rng.uniform(0.5, 8, 50))
name = lambda k: k.py_func.__module__ + "." + k.py_func.__qualname__
members = [name(k) for k in KERNELS if any(p.name == "members.py" for p in dependencies(k.py_func))]
print(json.dumps({"compiled": sorted(name(k) for k in KERNELS if sum(k._cache_misses.values())),
                  "loaded": sorted(name(k) for k in KERNELS if sum(k._cache_hits.values())),
                  "members": members, "answer": len(tree.query((5.0, 5.0, 5.0), exact=True))}))
"""

#: A tree built and one exact query (the kernels a viewer's first query compiles, calling one another; the
#: frame's moving objects left out, five CPU seconds less of compiling); prints the answer, sorted.
QUERY = """
import numpy as np
import culling
tree = culling.ViewDistanceTree(size=64.0, dim=3)
rng = np.random.default_rng(0)
c = rng.uniform(0, 60, (50, 3))
tree.insert_many(c, rng.uniform(2.0, 30.0, 50))
print(*sorted(tree.query(c[0], exact=True).tolist()))
"""

#: Single inserts and removes (some 15 kernels, some calling others: half :data:`QUERY`'s compile): a tree
#: that checks its own invariants, then prints its size and how many handles it handed out.
INSERTS = """
import numpy as np
import culling
tree = culling.ViewDistanceTree(size=128.0, dim=3)
c = np.random.default_rng(7).uniform(0.0, 100.0, (60, 3))
h = [tree.insert(x, 1.0 + i % 7) for i, x in enumerate(c)]
for k in h[::3]:
    tree.remove(k)
tree.check_invariants()
print(len(tree), len(set(h)))
"""

#: One small kernel; prints how many of its signatures came from the cache and how many were compiled.
PROBE = """
import warnings
warnings.simplefilter("always")
import numpy as np
from culling.core import members
print(int(members.candidates(np.arange(3), np.ones(3, dtype=np.int64))))
print(sum(members.candidates.stats.cache_hits.values()), sum(members.candidates.stats.cache_misses.values()))
"""


def _site(tmp_path: Path, shipped: bool = False) -> tuple[Path, dict[str, str]]:
    """A copy of the package (no caches; ``shipped``: with the kernels this checkout or wheel ships, where it
    ships any) and an environment that imports it."""
    site = tmp_path / "site"
    skipped = ("__pycache__",) if shipped else ("__pycache__", "_compiled")
    shutil.copytree(PACKAGE, site / "culling", ignore=shutil.ignore_patterns(*skipped))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON", "CULLING_"))}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    return site, env


def _run(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _frame(env: dict[str, str], cwd: Path) -> dict[str, object]:
    return dict(json.loads(_run(FRAME, env, cwd).stdout.strip().splitlines()[-1]))


def _query_answer() -> str:
    """:data:`QUERY`'s answer, from this process's kernels; it has answers to get wrong."""
    import numpy as np

    tree = culling.ViewDistanceTree(size=64.0, dim=3)
    rng = np.random.default_rng(0)
    c = rng.uniform(0, 60, (50, 3))
    tree.insert_many(c, rng.uniform(2.0, 30.0, 50))
    answer = sorted(tree.query(c[0], exact=True).tolist())
    assert len(answer) >= 2
    return " ".join(map(str, answer))


def _edit(path: Path) -> None:
    assert path.is_file(), f"{path} is not a module of the package: the edit would test nothing"
    with open(path, "a") as source:
        source.write("\n# an edit\n")


def test_an_edit_recompiles_only_the_kernels_whose_code_it_can_change(tmp_path):
    """The copy starts from the kernels the package ships, as an editable install's checkout does (or, where
    it ships none, from a cold compile): each kernel's stamp is checked alike wherever it is loaded from,
    and what an edit makes stale compiles into the cache."""
    site, env = _site(tmp_path, shipped=True)
    first = _frame(env, tmp_path)
    assert first["compiled"] or first["loaded"]

    _edit(site / "culling" / "uses" / "tracker.py")  # pure Python: no kernel holds its code
    after_tracker = _frame(env, tmp_path)
    assert after_tracker["compiled"] == [] and after_tracker["loaded"]

    _edit(site / "culling" / "runtime" / "jit.py")  # the cache's and the compile's handling, not its options
    after_jit = _frame(env, tmp_path)
    assert after_jit["compiled"] == [] and after_jit["loaded"] == after_tracker["loaded"]

    _edit(site / "culling" / "pairs" / "bands.py")  # the broad phase: the tree's query and batches load
    after_bands = _frame(env, tmp_path)
    assert after_bands["compiled"] == [] and after_bands["loaded"] == after_tracker["loaded"]

    _edit(site / "culling" / "core" / "members.py")  # the members' kernels, and the walks that call them
    after_members = _frame(env, tmp_path)
    compiled = set(after_members["compiled"])  # type: ignore[arg-type]
    assert compiled and compiled <= set(after_members["members"])  # type: ignore[arg-type]
    assert "culling.tree.walk.query" in compiled and "culling.tree.batch.place" not in compiled
    assert first["answer"] == after_members["answer"]


def test_every_kernel_depends_on_the_compile_options_and_none_on_the_jit_module():
    """The options every kernel compiles with are in every fingerprint; the module that applies them is in none."""
    from culling.runtime.fingerprint import dependencies
    from culling.runtime.jit import KERNELS

    for compiled in KERNELS:
        names = {path.relative_to(PACKAGE).as_posix() for path in dependencies(compiled.py_func)}
        assert "runtime/compile_options.py" in names and "runtime/jit.py" not in names, compiled.py_func


def test_a_damaged_cache_entry_compiles_again_with_one_warning_naming_the_cache(tmp_path):
    site, env = _site(tmp_path)
    first = _run(PROBE, env, tmp_path).stdout.split("\n")
    assert first[1] == "0 1"  # compiled and cached
    cache = tmp_path / "cache"
    entries = sorted(cache.rglob("*.nbi")) + sorted(cache.rglob("*.nbc"))
    assert entries
    for path in entries:  # garbage in every index, a truncated data file behind it
        path.write_bytes(b"\x80garbage" if path.suffix == ".nbi" else path.read_bytes()[:7])
    damaged = _run(PROBE, env, tmp_path)
    assert damaged.stdout.split("\n")[:2] == [first[0], "0 1"]  # the same answer, compiled again
    warnings = [line for line in damaged.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1 and "cannot be read" in warnings[0] and str(cache) in warnings[0], damaged.stderr
    assert "saved again" in warnings[0] and "NUMBA_CACHE_DIR" not in warnings[0]   # the folder is writable
    healed = _run(PROBE, env, tmp_path)  # the save replaced the damaged entry
    assert healed.stdout.split("\n")[1] == "1 0" and "RuntimeWarning" not in healed.stderr


def test_a_truncated_data_file_under_a_sound_index_compiles_again(tmp_path):
    site, env = _site(tmp_path)
    first = _run(PROBE, env, tmp_path).stdout.split("\n")
    for path in (tmp_path / "cache").rglob("*.nbc"):
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    damaged = _run(PROBE, env, tmp_path)
    assert damaged.stdout.split("\n")[:2] == [first[0], "0 1"]
    assert damaged.stderr.count("cannot be read") == 1, damaged.stderr


def test_a_full_disk_under_the_cache_keeps_the_kernels_in_memory_with_one_warning(tmp_path):
    """Every write into the cache fails with ENOSPC (numba's writes patched, as a full disk answers)."""
    site, env = _site(tmp_path)
    full_disk = """
import errno
from numba.core import caching
def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")
caching.IndexDataCacheFile._save_index = no_space
caching.IndexDataCacheFile._save_data = no_space
"""
    proc = _run(full_disk + PROBE + INSERTS, env, tmp_path)
    lines = proc.stdout.strip().splitlines()
    assert lines[1] == "0 1" and lines[2] == "40 60"  # compiled, kept in memory, answering right
    warnings = [line for line in proc.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1 and "cannot be written" in warnings[0] and "No space left" in warnings[0], proc.stderr
    assert not any((tmp_path / "cache").rglob("*.nbi"))


#: :data:`PROBE`'s kernel, then the length of its type annotation and whether it is the note a cached entry keeps.
ANNOTATED = PROBE + """
from culling.runtime.jit import TYPES_NOT_KEPT
annotation = str(members.candidates.overloads[members.candidates.signatures[0]].type_annotation)
print(len(annotation), annotation == TYPES_NOT_KEPT)
"""


def test_a_cache_entry_keeps_no_type_annotation_and_a_loaded_kernel_says_how_to_see_one(tmp_path):
    """numba would write the kernel's annotated source (every IR statement with its types) into the entry; the
    kernel compiled in the process keeps it, the entry on disk does not, and the kernel loaded from it says so."""
    site, env = _site(tmp_path)
    compiled = _run(ANNOTATED, env, tmp_path).stdout.split("\n")
    assert compiled[1] == "0 1"
    length, noted = compiled[2].split()
    assert noted == "False" and int(length) > 500  # the annotated source, in the process that compiled it
    data = b"".join(path.read_bytes() for path in (tmp_path / "cache").rglob("*.nbc"))
    assert data and b"candidates" in data and b"def candidates(" not in data  # no annotated source on disk
    loaded = _run(ANNOTATED, env, tmp_path).stdout.split("\n")
    assert loaded[1] == "1 0" and loaded[2].split()[1] == "True"
