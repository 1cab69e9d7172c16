"""What the compiled kernels cost at start-up: a cold and a warm first query.

Each measurement is a fresh Python process (the checkout on its path) that
imports ``culling``, builds a tree and a dense grid, and runs the first query,
``query_many``, ``update_many`` and ``remove_many``: every kernel a program
meets in its first frame.  ``NUMBA_CACHE_DIR`` points at a new empty folder
for the cold start (nothing compiled on disk: numba compiles every kernel);
the warm start runs again with that folder, now filled by the cold run, as a
second launch of a program would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import culling
t2 = time.perf_counter()
rng = np.random.default_rng(0)
c = rng.uniform(0.0, 1000.0, (2000, 3))
r = rng.uniform(1.0, 60.0, 2000)
tree = culling.ViewDistanceTree(size=1024.0, dim=3)
h = tree.insert_many(c, r)
t3 = time.perf_counter()
first = tree.query(c[0], exact=True)
t4 = time.perf_counter()
tree.query(c[1])
tree.query_many(c[:64], exact=True)
tree.query_many(c[:64])
tree.update_many(h, c + 0.5, r)
tree.remove_many(h[:10])
grid = culling.DenseViewDistanceGrid(size=1024.0, dim=3, min_radius=1.0)
g = grid.insert_many(c, r)
grid.query(c[0], exact=True)
grid.query_many(c[:64], exact=True)
grid.update_many(g, c + 0.5, r)
t5 = time.perf_counter()
try:
    import numba
    version = numba.__version__
except ImportError:
    version = None
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "build": t3 - t2, "first_query": t4 - t3,
                  "rest": t5 - t4, "total": t5 - t1, "numba": version, "answer": len(first)}))
"""

PARTS = ("import", "build", "first_query", "rest", "total")


def measure(cache_dir: Path | None, timeout: float = 300.0) -> dict:
    """One fresh process with ``NUMBA_CACHE_DIR=cache_dir``: seconds per step (see ``PROBE``).

    ``cache_dir`` None keeps the environment's cache (numba's default: next
    to the sources), which this benchmark process has already filled.
    Raises ``RuntimeError`` with the child's error output if it fails.
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"JIT start-up probe failed:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def cold_and_warm(warm_runs: int = 3, cold: bool = True) -> tuple[dict | None, list[dict]]:
    """A cold start in a new empty cache folder, then ``warm_runs`` warm starts reusing it.

    With ``cold`` False only the warm starts run, on the environment's own cache.
    """
    if not cold:
        measure(None)           # fills the cache if this checkout's is empty, so the runs below are warm
        return None, [measure(None) for _ in range(warm_runs)]
    with tempfile.TemporaryDirectory(prefix="culling-numba-cache-") as tmp:
        first = measure(Path(tmp))
        warm = [measure(Path(tmp)) for _ in range(warm_runs)]
    return first, warm
