"""Python's garbage collector is paused while a kernel compiles, and only then (culling.runtime.jit).

numba's compile builds large graphs of objects, and every full pass of the collector walks all the
process holds: pausing it during compiles took a quarter off a cold compile of every kernel
(docs/PERFORMANCE.md).  These tests pin what a program sees of that: the collector as it left it.
"""

from __future__ import annotations

import gc
import os
import threading

import numba
import pytest
from numba.extending import overload

from culling.runtime import jit


@pytest.fixture(autouse=True)
def collector_on():
    """Each test starts and ends with the collector on, as a program runs."""
    was = gc.isenabled()
    gc.enable()
    yield
    assert jit._collector_pauses == 0
    if not was:
        gc.disable()


def test_a_compile_runs_with_the_collector_paused_and_resumes_it():
    seen = []

    def probe():
        pass

    @overload(probe)
    def _probe_typed():  # runs while numba types the kernel below: inside its compile
        seen.append(gc.isenabled())
        return lambda: None

    def kernel_body():
        probe()
        return 1

    compiled = jit._compiles_whole(numba.njit(kernel_body))
    assert compiled() == 1
    assert seen == [False]
    assert gc.isenabled()


def test_nested_and_failing_compiles_resume_the_collector_once_the_outermost_ends():
    inner_seen = []

    def inner():
        inner_seen.append(gc.isenabled())

    def outer():
        jit._without_collector(inner)()
        assert not gc.isenabled()  # still paused: the outer compile goes on
        raise RuntimeError("a compile that fails")

    with pytest.raises(RuntimeError, match="a compile that fails"):
        jit._without_collector(outer)()
    assert inner_seen == [False]
    assert gc.isenabled()


def test_a_program_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    assert jit._without_collector(gc.isenabled)() is False
    assert not gc.isenabled()
    gc.enable()


def test_compiles_on_two_threads_resume_the_collector_when_the_last_ends():
    entered, leave_first, first_left = threading.Event(), threading.Event(), threading.Event()

    def first_compile():
        entered.set()
        leave_first.wait(60)

    thread = threading.Thread(target=jit._without_collector(first_compile))
    thread.start()
    assert entered.wait(60)

    def second_compile():
        leave_first.set()
        thread.join(60)
        first_left.set()
        return gc.isenabled()   # the first ended, this one has not

    assert jit._without_collector(second_compile)() is False
    assert first_left.is_set()
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_while_another_thread_compiles_has_its_collector_back():
    entered, release = threading.Event(), threading.Event()

    def compiling():
        entered.set()
        release.wait(60)

    thread = threading.Thread(target=jit._without_collector(compiling))
    thread.start()
    try:
        assert entered.wait(60)
        assert not gc.isenabled()
        pid = os.fork()
        if pid == 0:  # the child: only this thread, which compiles nothing
            ok = gc.isenabled() and jit._collector_pauses == 0 and jit._without_collector(gc.isenabled)() is False
            os._exit(0 if ok and gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        thread.join(60)
    assert gc.isenabled()
