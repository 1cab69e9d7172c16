"""Threads: the library's own pool, and one structure shared by reader and writer threads.

docs/CONTRACT.md: any number of threads may query one structure at once; a
mutation while other calls run is serialised by the structure, never a wrong
answer, a -1 handle, a corrupted structure or a crash.  Readers and writers
hammer a tree and a grid for about a second each; objects no writer touches
must be answered exactly all along, and after the run every object's answer
and the invariants are checked against brute force.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numba.np.ufunc.parallel as numba_parallel
import numpy as np
import pytest

import culling
from culling.runtime import threads as pool

STRUCTURES = {
    "tree": lambda: culling.ViewDistanceTree(size=256.0, dim=3),
    "grid": lambda: culling.DenseViewDistanceGrid(size=256.0, dim=3, min_radius=0.5),
}

#: Rounds each writer makes (readers query until the writers are done): a count, so a busy machine checks as much.
WRITER_ROUNDS = 40


def brute(centres: np.ndarray, radii: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Indices of the spheres containing ``point`` (no point of these tests lies near a surface)."""
    return np.flatnonzero(np.sqrt(((centres - point) ** 2).sum(axis=1)) <= radii)


def split(handles: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    return np.split(handles, np.cumsum(counts)[:-1])


# ----------------------------------------------------------------------------- the pool


def test_run_chunks_covers_every_item_once_in_order():
    seen = np.zeros(1000, dtype=np.int64)

    def mark(lo: int, hi: int) -> tuple[int, int]:
        seen[lo:hi] += 1
        return lo, hi

    parts = pool.run_chunks(mark, 1000, chunks=7)
    assert (seen == 1).all()
    assert [p[0] for p in parts] == sorted(p[0] for p in parts)
    assert parts[0][0] == 0 and parts[-1][1] == 1000
    assert pool.run_chunks(mark, 0) == []


def test_run_chunks_raises_a_chunks_error_after_all_chunks_stopped():
    finished = []

    def fail_one(lo: int, hi: int) -> None:
        if lo == 0:
            raise KeyError("chunk 0")
        time.sleep(0.01)
        finished.append(lo)

    with pytest.raises(KeyError, match="chunk 0"):
        pool.run_chunks(fail_one, 64, chunks=8)
    count = len(finished)
    time.sleep(0.05)  # a helper still running would finish a chunk meanwhile (only a broken pool fails here)
    assert len(finished) == count <= 7  # a helper that had not started is cancelled, not waited for
    assert len(set(finished)) == count


def test_thread_count_is_configurable():
    default = pool.thread_count()
    try:
        culling.set_thread_count(3)
        assert culling.thread_count() == 3
        culling.set_thread_count(1)
        tree = STRUCTURES["tree"]()
        rng = np.random.default_rng(1)
        centres = rng.uniform(0.0, 256.0, (500, 3))
        tree.insert_many(centres, rng.uniform(1.0, 20.0, 500))
        handles, counts = tree.query_many(centres[:200], exact=True)
        culling.set_thread_count(None)
        again, counts_again = tree.query_many(centres[:200], exact=True)
        assert (counts == counts_again).all() and (handles == again).all()
    finally:
        culling.set_thread_count(None)
    assert pool.thread_count() == default
    for bad in (0, -1, 1.5, True, "2", pool.MAX_THREADS + 1, 2**70, np.uint64(2**64 - 1)):
        with pytest.raises(ValueError, match="positive integer of at most 4,096"):
            culling.set_thread_count(bad)
        assert pool.thread_count() == default  # refused where it is given: the count is as it was
    culling.set_thread_count(np.int16(pool.MAX_THREADS))  # the bound itself is taken
    assert pool.thread_count() == pool.MAX_THREADS
    culling.set_thread_count(None)


def test_the_default_count_is_the_cores_this_process_may_run_on(monkeypatch):
    """Pinned to one core (``taskset -c 0``, a container's cpuset), a batch call runs on one thread, not on
    as many as the machine has cores, all taking turns on that one."""
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this system")
    monkeypatch.delenv(pool.ENV_VAR, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    try:
        culling.set_thread_count(None)
        assert culling.thread_count() == pool.usable_cores() == 1
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 5, 7})
        culling.set_thread_count(None)
        assert culling.thread_count() == 3
        monkeypatch.delattr(os, "sched_getaffinity")  # macOS, Windows: the core count
        culling.set_thread_count(None)
        assert culling.thread_count() == 64
    finally:
        monkeypatch.undo()
        culling.set_thread_count(None)


@pytest.mark.parametrize("value, answer", [("3", "3"), (" 2 ", "2"), ("", "default"),
                                           ("many", "ValueError: CULLING_THREADS must be a positive integer of at most 4,096, got 'many'"),
                                           ("0", "ValueError: CULLING_THREADS must be a positive integer of at most 4,096, got '0'"),
                                           ("4097", "ValueError: CULLING_THREADS must be a positive integer of at most 4,096, got '4097'")])
def test_culling_threads_is_read_on_import_and_a_bad_value_refused_there(value, answer):
    """A ``CULLING_THREADS`` the pool cannot use stops ``import culling`` (where a program starts), not its
    first batch call (a game's first frame, a server's first tick)."""
    script = ("import os, culling\n"
              "n = culling.thread_count()\n"
              "print(n if os.environ.get('CULLING_THREADS', '').strip() else 'default')")
    env = {k: v for k, v in os.environ.items() if k != "CULLING_THREADS"}
    proc = subprocess.run([sys.executable, "-c", script], env={**env, "CULLING_THREADS": value},
                          capture_output=True, text=True, timeout=300)
    got = proc.stdout.strip() if proc.returncode == 0 else proc.stderr.strip().splitlines()[-1]
    assert got == answer, proc.stderr


@pytest.mark.parametrize("kind", sorted(STRUCTURES))
def test_query_many_answers_alike_in_one_chunk_and_in_chunks_on_threads(kind):
    """One thread answers a batch in one chunk; three threads cut it into chunks of points (each
    answered node-major), whose answers are joined in point order."""
    structure = STRUCTURES[kind]()
    rng = np.random.default_rng(5)
    centres = rng.uniform(0.0, 256.0, (3000, 3))
    radii = rng.uniform(1.0, 30.0, 3000)
    structure.insert_many(centres, radii)
    points = np.concatenate([rng.uniform(0.0, 256.0, (150, 3)), centres[:150]])
    want = [brute(centres, radii, p) for p in points]
    try:
        culling.set_thread_count(1)
        one = split(*structure.query_many(points, exact=True))
        culling.set_thread_count(3)
        chunked = split(*structure.query_many(points, exact=True))
    finally:
        culling.set_thread_count(None)
    for i, expected in enumerate(want):
        assert sorted(one[i].tolist()) == expected.tolist()
        assert one[i].tolist() == chunked[i].tolist()


def test_no_threading_runtime_is_loaded_by_query_many():
    tree = STRUCTURES["tree"]()
    rng = np.random.default_rng(2)
    centres = rng.uniform(0.0, 256.0, (2000, 3))
    tree.insert_many(centres, rng.uniform(1.0, 20.0, 2000))
    tree.query_many(centres[:500], exact=True)
    grid = STRUCTURES["grid"]()
    grid.insert_many(centres, rng.uniform(1.0, 20.0, 2000))
    grid.query_many(centres[:500], exact=True)
    assert not numba_parallel._is_initialized, "numba's threading layer was started"
    with open("/proc/self/maps") as maps:
        libraries = maps.read()
    for runtime in ("libgomp", "libiomp", "libomp", "libtbb", "workqueue"):
        assert runtime not in libraries, runtime


# ----------------------------------------------------------------------------- readers and writers


@pytest.mark.parametrize("kind", sorted(STRUCTURES))
def test_many_threads_query_one_structure_at_once(kind):
    s = STRUCTURES[kind]()
    rng = np.random.default_rng(3)
    centres = rng.uniform(0.0, 250.0, (3000, 3))
    radii = rng.uniform(1.0, 25.0, 3000)
    s.insert_many(centres, radii)
    points = rng.uniform(0.0, 250.0, (300, 3))
    expected_many = s.query_many(points, exact=True)
    expected = [np.sort(s.query(p, exact=True)) for p in points[:50]]
    expected_pairs = sorted(zip(*(a.tolist() for a in s.overlapping_pairs())))
    errors: list[str] = []

    def reader(seed: int) -> None:
        for _ in range(6):
            handles, counts = s.query_many(points, exact=True)
            if not ((handles == expected_many[0]).all() and (counts == expected_many[1]).all()):
                errors.append(f"query_many differs in reader {seed}")
            if sorted(zip(*(a.tolist() for a in s.overlapping_pairs()))) != expected_pairs:  # one PlanCache, shared
                errors.append(f"overlapping_pairs differs in reader {seed}")
            for p, want in zip(points[:50], expected):
                if not np.array_equal(np.sort(s.query(p, exact=True)), want):
                    errors.append(f"query differs in reader {seed}")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]


class Hammer:
    """Static objects nobody touches; each writer owns its own moving objects and knows where they are."""

    def __init__(self, kind: str, seed: int = 4) -> None:
        self.s = STRUCTURES[kind]()
        self.largest = 200.0 if kind == "tree" else 100.0  # the tree's root grows for 200; the grid's world is fixed
        rng = np.random.default_rng(seed)
        self.static_centres = rng.uniform(2.0, 250.0, (2000, 3))
        self.static_radii = rng.uniform(1.0, 25.0, 2000)
        self.static = self.s.insert_many(self.static_centres, self.static_radii)
        self.points = rng.uniform(2.0, 250.0, (256, 3))
        # No query point within 1e-6 of a static surface: the brute force needs no exact arithmetic.
        self.expected = [brute(self.static_centres, self.static_radii, p) for p in self.points]
        self.static_set = set(self.static.tolist())
        # the static objects' own pairs: every overlapping_pairs under the writers holds exactly these among them
        import culling
        first, second = culling.BruteForceIndex(self.static_centres, self.static_radii, "sphere",
                                                handles=self.static, dim=3).overlapping_pairs()
        self.static_pairs = set(zip(first.tolist(), second.tolist()))
        self.owned: list[dict[int, tuple[np.ndarray, float]]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def check_answer(self, i: int, handles: np.ndarray) -> None:
        if handles.size and handles.min() < 0:
            self.errors.append(f"negative handle {handles.min()}")
        if np.unique(handles).size != handles.size:
            self.errors.append("a handle answered twice")
        mine = np.sort(handles[np.isin(handles, self.static)])
        want = np.sort(self.static[self.expected[i]])
        if not np.array_equal(mine, want):
            self.errors.append(f"point {i}: static answer {mine.size} handles, expected {want.size}")

    def reader(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        while not self.stop.is_set() and not self.errors:
            which = rng.random()
            i = int(rng.integers(0, len(self.points)))
            if which < 0.4:
                at = int(rng.integers(0, len(self.points) - 100))
                handles, counts = self.s.query_many(self.points[at:at + 100], exact=True)
                for k, part in enumerate(split(handles, counts)):
                    self.check_answer(at + k, part)
            elif which < 0.7:
                self.check_answer(i, self.s.query(self.points[i], exact=True))
                h, c, r = self.s.query_spheres(self.points[i], exact=True)
                self.check_answer(i, h)
            elif which < 0.9:  # the probes (a radius of 0: the point query's answer), the detailed query, one object
                self.check_answer(i, self.s.overlapping(self.points[i], 0.0, exact=True))
                handles, counts = self.s.overlapping_many(self.points[i:i + 1], [0.0], exact=True)
                self.check_answer(i, handles)
                self.check_answer(i, self.s.query_detailed(self.points[i], trace=True).handles)
                h = int(self.static[int(rng.integers(0, len(self.static)))])
                if self.s.visible_from(h, self.points[i]) != (h in self.static[self.expected[i]]):
                    self.errors.append(f"visible_from({h}, point {i})")
            else:  # the broad phase, its plan kept between calls (PlanCache) while the writers move objects
                first, second = self.s.overlapping_pairs()
                static = np.isin(first, self.static) & np.isin(second, self.static)
                got = set(zip(first[static].tolist(), second[static].tolist()))
                if got != self.static_pairs:
                    self.errors.append(f"pairs among the static objects: {len(got)}, expected {len(self.static_pairs)}")

    def batch_writer(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        mine: dict[int, tuple[np.ndarray, float]] = {}
        self.owned.append(mine)
        try:
            for _ in range(WRITER_ROUNDS):
                n = int(rng.integers(1, 200))
                centres = rng.uniform(2.0, 250.0, (n, 3))
                radii = rng.uniform(0.5, 30.0, n)
                handles = self.s.insert_many(centres, radii)
                for h, c, r in zip(handles.tolist(), centres, radii.tolist()):
                    if h in self.static_set or h in mine:
                        self.errors.append(f"handle {h} handed out twice")
                    mine[h] = (c, r)
                live = np.array(sorted(mine), dtype=np.int64)
                moving = rng.choice(live, min(live.size, 150), replace=False)
                moved = np.clip(np.array([mine[h][0] for h in moving.tolist()]) + rng.normal(0, 3, (moving.size, 3)),
                                2.0, 250.0)
                grown = rng.uniform(0.5, 30.0, moving.size)
                self.s.update_many(moving, moved, grown)
                for h, c, r in zip(moving.tolist(), moved, grown.tolist()):
                    mine[h] = (c, r)
                gone = rng.choice(live, live.size // 3, replace=False)
                self.s.remove_many(gone)
                for h in gone.tolist():
                    del mine[h]
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(f"batch writer: {exc!r}")

    def single_writer(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        mine: dict[int, tuple[np.ndarray, float]] = {}
        self.owned.append(mine)
        try:
            for _ in range(10 * WRITER_ROUNDS):
                c = rng.uniform(2.0, 250.0, 3)
                r = float(rng.uniform(0.5, 30.0))
                h = self.s.insert(c, r)
                if h in self.static_set or h in mine:
                    self.errors.append(f"handle {h} handed out twice")
                mine[h] = (c, r)
                if len(mine) > 20:
                    victim = int(rng.choice(sorted(mine)))
                    if rng.random() < 0.5:
                        self.s.remove(victim)
                        del mine[victim]
                    else:
                        c = rng.uniform(2.0, 250.0, 3)
                        r = float(rng.uniform(0.5, self.largest))
                        self.s.update(victim, c, r)
                        mine[victim] = (c, r)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(f"single writer: {exc!r}")


@pytest.mark.parametrize("kind", sorted(STRUCTURES))
def test_readers_and_writers_hammer_one_structure(kind):
    hammer = Hammer(kind)
    work = ([threading.Thread(target=hammer.reader, args=(10 + i,)) for i in range(3)]
            + [threading.Thread(target=hammer.batch_writer, args=(20 + i,)) for i in range(2)]
            + [threading.Thread(target=hammer.single_writer, args=(30,))])
    for t in work:
        t.start()
    for t in work[3:]:  # the writers: a fixed number of rounds each, however fast the machine
        t.join()
    hammer.stop.set()
    for t in work[:3]:
        t.join(60)
    assert not any(t.is_alive() for t in work), "a thread hung"
    assert not hammer.errors, hammer.errors[:5]
    s = hammer.s
    s.check_invariants()
    everything = {h: (c, r) for h, c, r in zip(hammer.static.tolist(), hammer.static_centres,
                                                hammer.static_radii.tolist())}
    for mine in hammer.owned:
        assert everything.keys().isdisjoint(mine)
        everything.update(mine)
    assert len(s) == len(everything)
    assert np.array_equal(np.sort(s.handles()), np.sort(np.array(list(everything))))
    handles = np.array(list(everything), dtype=np.int64)
    centres = np.array([everything[h][0] for h in handles.tolist()])
    radii = np.array([everything[h][1] for h in handles.tolist()])
    assert np.array_equal(s.centres_of(handles), centres)
    got, counts = s.query_many(hammer.points, exact=False)
    for i, part in enumerate(split(got, counts)):
        inside = handles[brute(centres, radii, hammer.points[i])]
        assert set(inside.tolist()) <= set(part.tolist())


def test_copies_and_pickles_get_their_own_lock():
    import copy
    import pickle

    for kind, make in STRUCTURES.items():
        s = make()
        rng = np.random.default_rng(5)
        centres = rng.uniform(0.0, 250.0, (300, 3))
        s.insert_many(centres, rng.uniform(1.0, 20.0, 300))
        for twin in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), copy.copy(s)):
            assert twin._rw is not s._rw, kind
            assert np.array_equal(np.sort(twin.query(centres[0], exact=True)), np.sort(s.query(centres[0], exact=True)))
            twin.check_invariants()
        twin = copy.deepcopy(s)
        twin.remove_many(twin.handles()[:100])
        assert len(twin) == 200 and len(s) == 300
        s.check_invariants()


# ----------------------------------------------------------------------------- the lock itself


def _until(condition) -> None:
    """Wait for another thread to reach a state (no time limit decides anything; pytest's own does)."""
    while not condition():
        time.sleep(0.0005)


def test_lock_lets_readers_share_and_a_writer_wait_for_them():
    """Readers hold the lock together; a writer waits until the last one leaves, and readers that
    arrive while it waits wait behind it (a stream of readers cannot starve a writer)."""
    from culling.runtime.locks import ReadWriteLock

    lock = ReadWriteLock()
    events: list[str] = []
    first = lock.acquire_read()
    second = lock.acquire_read()  # two readers at once

    def writer() -> None:
        lock.acquire_write()
        events.append("write")
        lock.release_write()

    def late_reader() -> None:
        token = lock.acquire_read()
        events.append("late read")
        lock.release_read(token)

    w = threading.Thread(target=writer)
    w.start()
    _until(lambda: lock._waiting == 1)  # the writer waits for the two readers
    r = threading.Thread(target=late_reader)
    r.start()
    _until(lambda: lock._queued == 1)  # the late reader has queued behind the writer
    assert events == []
    lock.release_read(first)
    assert events == [] and lock._waiting == 1  # one reader still in: the writer still waits
    lock.release_read(second)
    w.join()
    r.join()
    assert events == ["write", "late read"]
    assert (lock.readers, lock._waiting, lock._writing, lock._closed) == (0, 0, False, False)


def test_lock_lets_a_queued_reader_in_before_the_writers_next_mutation():
    """A thread that mutates back to back closed the door again before the reader its release woke
    could go in, so a query on another thread waited for as long as the mutations went on (30 s and
    6,587 ``update_many`` calls in a probe, until the writer stopped): the reader queued at a release
    goes in before the next writer, this same thread's next call included."""
    from culling.runtime.locks import ReadWriteLock

    lock = ReadWriteLock()
    events: list[str] = []
    lock.acquire_write()

    def reader() -> None:
        with lock.reading():
            events.append("read")

    r = threading.Thread(target=reader)
    r.start()
    _until(lambda: lock._queued == 1)
    lock.release_write()
    lock.acquire_write()  # at once, as a loop of update_many calls does
    events.append("write")
    lock.release_write()
    r.join()
    assert events == ["read", "write"]
    assert (lock.readers, lock._queued, lock._admitted, lock._writing, lock._closed) == (0, 0, 0, False, False)


def test_lock_lets_one_writer_in_at_a_time():
    """Writers exclude each other and readers: a shared counter bumped non-atomically stays exact."""
    from culling.runtime.locks import ReadWriteLock

    lock = ReadWriteLock()
    box = {"n": 0, "overlap": 0}

    def bump() -> None:
        for _ in range(300):
            with lock.writing():
                n = box["n"]
                time.sleep(0)  # give another thread the chance to interleave
                box["n"] = n + 1

    def read() -> None:
        for _ in range(300):
            with lock.reading():
                n = box["n"]
                time.sleep(0)
                box["overlap"] += box["n"] != n  # a writer ran while this reader held the lock

    threads = [threading.Thread(target=bump) for _ in range(3)] + [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert box == {"n": 900, "overlap": 0}


def test_lock_lets_readers_in_when_a_waiting_writer_gives_up():
    """A writer interrupted while it waits (here: an exception from its wait) no longer holds readers back."""
    from culling.runtime.locks import ReadWriteLock

    lock = ReadWriteLock()
    tokens: list[object] = []
    finish = threading.Event()

    def hold() -> None:  # a reader on another thread, alive till the end (a thread's id may be reused)
        tokens.append(lock.acquire_read())
        finish.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    _until(lambda: bool(tokens))
    first = tokens[0]
    entered = threading.Event()

    def late_reader() -> None:
        token = lock.acquire_read()
        entered.set()
        lock.release_read(token)

    class GiveUp(Exception):
        pass

    class Interrupted(threading.Condition):
        """The writer's first wait: a reader arrives behind it, then the wait is interrupted."""

        def wait_for(self, predicate, timeout=None):  # type: ignore[no-untyped-def]
            if predicate == lock._free and not entered.is_set():  # the writer's wait, not the reader's
                threading.Thread(target=late_reader).start()
                while not lock._queued:  # the reader waits behind the writer (wait() lets go of the mutex)
                    super().wait(0.001)
                assert not entered.is_set()
                raise GiveUp
            return super().wait_for(predicate, timeout)

    lock._changed = Interrupted(lock._mutex)
    with pytest.raises(GiveUp):
        lock.acquire_write()
    assert entered.wait(60)  # the reader went in once the writer gave up
    lock.release_read(first)
    finish.set()
    holder.join()
    assert (lock.readers, lock._waiting, lock._writing, lock._closed) == (0, 0, False, False)


def test_the_set_of_locks_reads_whole_while_other_threads_make_structures():
    """The fork's hook reads every lock; a thread making a structure meanwhile made the read raise
    "Set changed size during iteration" (47 of 2,000 reads in a probe, switching threads every
    microsecond), and the fork went on without waiting for the mutations running."""
    from culling.runtime import locks
    from culling.runtime.locks import ReadWriteLock

    held = [ReadWriteLock() for _ in range(1000)]  # a long read
    stop = threading.Event()

    def make() -> None:
        made = []
        while not stop.is_set():
            made.append(ReadWriteLock())
            if len(made) > 200:
                made.clear()

    maker = threading.Thread(target=make)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    maker.start()
    try:
        for _ in range(500):
            assert len(locks._all_locks()) >= len(held)
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        maker.join()
