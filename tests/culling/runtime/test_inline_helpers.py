"""An inline kernel's numba dispatcher is made only when something needs one (culling.runtime.jit.InlineHelper).

A warm start loads its kernels and compiles nothing, so ``import culling`` and a warm first frame make
none of the helpers' dispatchers; a compile (numba types the callee it inlined), a call from Python, or
anything else a dispatcher has makes it once and answers as the dispatcher does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numba
import numpy as np
import pytest

from culling.core import floats
from culling.runtime import jit

pytestmark = pytest.mark.skipif(jit.JIT_DISABLED, reason="NUMBA_DISABLE_JIT=1: helpers are plain functions")

ROOT = Path(__file__).resolve().parents[3]

#: Prints how many of the package's inline helpers there are and how many have a dispatcher, after ``import culling``
#: and after a first frame of a tree and a dense grid.
UNMADE = """
import sys, numpy as np, culling
from culling.runtime.jit import InlineHelper
def helpers():
    return [v for m in list(sys.modules.values()) if (m.__name__ or "").startswith("culling")
            for v in vars(m).values() if isinstance(v, InlineHelper)]
print(len(set(map(id, helpers()))), sum(h._made is not None for h in helpers()))
rng = np.random.default_rng(0)
c = rng.uniform(0.0, 100.0, (300, 3))
for s in (culling.ViewDistanceTree(128.0, dim=3), culling.DenseViewDistanceGrid(128.0, dim=3, min_radius=1.0)):
    s.insert_many(c, rng.uniform(1.0, 9.0, 300))
    s.query(c[0], exact=True)
    s.query_many(c[:20], exact=True)
print(len(set(map(id, helpers()))), sum(h._made is not None for h in helpers()))
"""


def test_import_and_a_warm_first_frame_make_no_helper_dispatcher(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):  # the second run is warm: its kernels load (shipped, or cached by the first run)
        out = subprocess.run([sys.executable, "-c", UNMADE], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    (count, made), (count_after, made_after) = (map(int, line.split()) for line in out.stdout.splitlines())
    assert count >= 50 and count_after == count  # the package's helpers, all of them found
    assert made == 0 and made_after == 0


def test_a_helper_called_from_python_makes_its_dispatcher_once_and_answers_as_its_function():
    helper = jit.InlineHelper(floats.two_sum.py_func)
    assert helper._made is None
    assert helper.targetoptions["inline"] == "always" and helper.py_func is floats.two_sum.py_func
    assert helper.__name__ == "two_sum" and helper.__doc__ == floats.two_sum.py_func.__doc__
    assert helper(0.1, 0.2) == floats.two_sum.py_func(0.1, 0.2)
    made = helper._made
    assert isinstance(made, numba.core.registry.CPUDispatcher)
    assert helper.signatures == made.signatures and len(made.signatures) == 1  # the dispatcher's own names
    assert helper(0.5, 0.25) == (0.75, 0.0) and helper._made is made


def test_threads_asking_at_once_get_one_dispatcher():
    helper = jit.InlineHelper(floats.sum_is_exact.py_func)
    barrier = threading.Barrier(8)
    seen = []

    def ask() -> None:
        barrier.wait()
        seen.append(helper.dispatcher())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(d) for d in seen}) == 1


def test_a_kernel_of_ones_own_inlines_a_helper_and_its_compile_makes_the_dispatcher():
    helper = jit.InlineHelper(floats.two_product.py_func)

    @numba.njit
    def error_of(a: float, b: float) -> float:
        return helper(a, b)[1]

    a, b = 0.1, 0.3
    assert error_of(a, b) == floats.two_product.py_func(a, b)[1]
    assert helper._made is not None  # numba types the name its inlined call left behind
    assert not helper._made.signatures  # inlined: never compiled on its own


def test_a_helper_passed_where_numba_types_it_as_a_value_gets_its_dispatcher():
    helper = jit.InlineHelper(floats.two_sum.py_func)

    @numba.njit
    def first(f, a: float, b: float) -> float:  # noqa: ANN001 - a function value
        return f(a, b)[0]

    assert first(helper, 1.0, 2.0) == 3.0
    assert helper._made is not None


def test_missing_names_are_the_dispatchers_errors():
    helper = jit.InlineHelper(floats.two_sum.py_func)
    with pytest.raises(AttributeError):
        helper.no_such_attribute  # noqa: B018
    assert np.isfinite(helper(1.0, 2.0)[0])
