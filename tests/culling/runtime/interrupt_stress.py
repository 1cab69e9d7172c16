"""Ctrl-C, again and again, into a tree's queries and mutations: run by ``test_interrupts.py`` in a process of its own.

For each of CALLS calls the main thread makes to a tree's queries and
mutations, a thread sends one SIGINT to it at a random point: at once (it
lands at the call's start) or 0 to 2 ms later (inside the call, or after it
on a fast machine).  The run is a count of calls, not a time window, so a
slow or busy machine makes the same checks.  Every exception that comes out must be
the ``KeyboardInterrupt`` (never numba's ``SystemError``), and after each one
the tree must hold either the state before the interrupted call or the state
after it (a mutation is whole or not at all), pass its invariant checker and
answer queries as brute force does.  Prints one line of counts; exits 1 on
the first failure, with what failed.

Usage: ``python interrupt_stress.py CALLS SEED KIND [fresh]`` (KIND ``tree``,
``grid`` or ``collision``: a ``CollisionCandidates``, whose own records must
also agree with its tree's; ``fresh``: the first signals land while the
queries' kernels load or compile).
"""

from __future__ import annotations

import random
import signal
import sys
import threading
import time
from collections import Counter

import numpy as np

from culling import CollisionCandidates, DenseViewDistanceGrid, ViewDistanceTree, warm_up

SIZE = 100.0


Stored = ViewDistanceTree | DenseViewDistanceGrid | CollisionCandidates


def state(tree: Stored) -> dict[int, tuple[float, ...]]:
    """Every object: handle -> (*centre, radius), as Python numbers (one ``tolist``, not a loop over NumPy
    scalars: the storm's time goes to its calls, not to this check)."""
    handles = tree.handles()
    radii = tree.bounding_radius_of(handles) if isinstance(tree, CollisionCandidates) else tree.radii_of(handles)
    rows = np.column_stack([tree.centres_of(handles), radii]).tolist()
    return dict(zip(handles.tolist(), map(tuple, rows), strict=True))


def agrees(tree: Stored) -> bool:
    """A wrapper's own records (``CollisionCandidates``: its handles, bounding radii) agree with its tree's."""
    if not isinstance(tree, CollisionCandidates):
        return True
    return state(tree) == state(tree.tree)


def brute(objects: dict[int, tuple[float, ...]], p: np.ndarray) -> list[int]:
    """The handles whose sphere holds ``p``: the float test ``|c - p|^2 <= r^2``, all objects at once."""
    if not objects:
        return []
    handles = np.fromiter(objects, dtype=np.int64, count=len(objects))
    rows = np.array(list(objects.values()))
    inside = np.sum((rows[:, :3] - p) ** 2, axis=1) <= rows[:, 3] * rows[:, 3]
    return sorted(handles[inside].tolist())


def main() -> int:
    calls, seed, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    fresh = len(sys.argv) > 4 and sys.argv[4] == "fresh"
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    armed = [False]
    counts: Counter[str] = Counter()

    def on_sigint(signum: int, frame: object) -> None:
        if armed[0]:
            raise KeyboardInterrupt
        counts["outside"] += 1

    signal.signal(signal.SIGINT, on_sigint)
    main_id = threading.main_thread().ident
    stop = threading.Event()
    go = threading.Event()
    sent = threading.Event()
    delays = random.Random(seed + 1)

    def send() -> None:
        """One SIGINT per call: at its start (a third of them) or up to 2 ms into it."""
        while True:
            go.wait()
            go.clear()
            if stop.is_set():
                return
            if delays.random() > 1 / 3:
                time.sleep(delays.uniform(0.0, 0.002))
            signal.pthread_kill(main_id, signal.SIGINT)
            sent.set()

    tree: Stored = {"tree": lambda: ViewDistanceTree(SIZE, dim=3),
                    "grid": lambda: DenseViewDistanceGrid(SIZE, dim=3, min_radius=0.5),
                    "collision": lambda: CollisionCandidates(0.5, SIZE, dim=3)}[kind]()
    index = tree.tree if isinstance(tree, CollisionCandidates) else tree
    tree.insert_many(rng.uniform(0, SIZE, (3000, 3)), rng.uniform(0.5, 8, 3000))
    if not fresh:  # else the queries' kernels load or compile under fire
        warm_up()  # the storm's seconds go to calls, not to loading kernels
        index.query(np.zeros(3))
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    for _ in range(calls):
        before = state(tree)
        op = pick.choice(["query", "query_many", "pairs", "insert", "update", "remove", "insert_many", "update_many",
                          "remove_many"])
        live = tree.handles()
        n = pick.randint(1, 400)
        p = rng.uniform(0, SIZE, 3)
        after: dict[int, tuple[float, ...]] | None = None
        sent.clear()
        go.set()
        try:
            armed[0] = True
            if op == "query":
                index.query(p, exact=True)
            elif op == "query_many":
                index.query_many(rng.uniform(0, SIZE, (n, 3)))
            elif op == "pairs":
                tree.pairs() if isinstance(tree, CollisionCandidates) else tree.overlapping_pairs()
            elif op == "insert":
                n = 1
                tree.insert(p, pick.uniform(0.5, 8))
            elif op == "update" and live.size:
                h = int(live[pick.randrange(live.size)])
                r = pick.uniform(0.5, 8)
                after = dict(before)
                after[h] = (*p, r)
                tree.update(h, p, r)
            elif op == "remove" and live.size:
                h = int(live[pick.randrange(live.size)])
                after = {k: v for k, v in before.items() if k != h}
                tree.remove(h)
            elif op == "insert_many":
                centres, radii = rng.uniform(0, SIZE, (n, 3)), rng.uniform(0.5, 8, n)
                tree.insert_many(centres, radii)
            elif op == "update_many" and live.size:
                moving = rng.choice(live, min(n, live.size), replace=False)
                centres = np.clip(tree.centres_of(moving) + rng.normal(0, 3, (moving.size, 3)), 0, SIZE * 0.999)
                radii = rng.uniform(0.5, 8, moving.size)
                after = dict(before)
                after.update({int(h): (*c, r) for h, c, r in zip(moving, centres, radii, strict=True)})
                tree.update_many(moving, centres, radii)
            elif op == "remove_many" and live.size:
                gone = rng.choice(live, min(n, live.size), replace=False)
                removed = set(gone.tolist())
                after = {h: v for h, v in before.items() if h not in removed}
                tree.remove_many(gone)
            armed[0] = False
            counts["whole"] += 1
        except KeyboardInterrupt:
            armed[0] = False
            counts[f"interrupted:{op}"] += 1
        except BaseException as exc:  # noqa: BLE001 - the failure this script looks for
            armed[0] = False
            stop.set()
            print(f"FAIL: {op} raised {type(exc).__name__}: {exc} (cause {exc.__cause__!r})", flush=True)
            return 1
        while not sent.wait(0.05):  # this call's signal has gone (a Ctrl-C landing here is not armed)
            pass
        now = state(tree)
        if op in ("insert", "insert_many"):
            grown = {h: v for h, v in now.items() if h not in before}
            ok = now.items() >= before.items() and len(grown) in (0, n)
        else:
            ok = now == before or (after is not None and now == after)
        if not agrees(tree):
            stop.set()
            print(f"FAIL: {op} left the CollisionCandidates disagreeing with its tree")
            return 1
        if not ok:
            stop.set()
            print(f"FAIL: {op} left the tree half-changed ({len(before)} objects before, {len(now)} after)")
            return 1
        try:
            armed[0] = False
            tree.check_invariants()
            got = sorted(index.query(p, exact=True).tolist())
        except BaseException as exc:  # noqa: BLE001
            stop.set()
            print(f"FAIL: after {op}: {type(exc).__name__}: {exc}", flush=True)
            return 1
        if got != brute(now, p):
            stop.set()
            print(f"FAIL: after {op} the tree answers differently from brute force at {p.tolist()}")
            return 1
    stop.set()
    go.set()
    sender.join()
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
