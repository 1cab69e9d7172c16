"""ShardedInterest against one InterestManager on the same world, tick for tick; a killed actor; bad input.

Few and small: each ``ShardedInterest`` starts Ray actors (about a second).
"""

from __future__ import annotations

import io
import os
import signal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from culling import InterestManager

#: Every test here starts Ray actors: in CI a skip (Ray not installed) is a failure (tests/conftest.py).
pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster for the module (``ray.init(num_cpus=2)``: starting one costs seconds)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        # The actors import server/ and culling/ from the checkout, as the tests do.
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    if started:
        ray.shutdown()

SIZE = 256.0
FIELDS = ("viewer_ids", "entered_offsets", "entered", "left_offsets", "left")


def same(a, b, what=""):
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f"{what}: {f} differs"


def twins(shards, hysteresis=0.0, margin=0.0):
    from server import ShardedInterest

    sh = ShardedInterest(SIZE, shards=shards, hysteresis=hysteresis, probe_margin=margin)
    return InterestManager(SIZE, hysteresis=hysteresis), sh


def populated(im, sh, rng, n, radii):
    """The same ``n`` random entities (radii uniform in ``radii``) into both services: their handles."""
    c, r = rng.uniform(0.0, SIZE, (n, 3)), rng.uniform(*radii, n)
    h = im.insert_many(c, r)
    sh.insert_many(c, r)
    return h


def first_tick(im, sh, rng, viewers):
    """``viewers`` random viewers' first tick on both services, checked the same: ``(ids, positions)``."""
    ids, pos = np.arange(viewers), rng.uniform(0.0, SIZE, (viewers, 3))
    same(sh.tick(ids, pos), im.tick(ids, pos))
    return ids, pos


def kill(ray, actor):
    """``ray.kill`` and wait until the actor is gone: the kill is asynchronous, and a call that reaches the
    actor before it lands is answered (rightly) by the old actor, which would leave the restart unseen.

    Waits by asking, not by the clock: each round trip either answers (not dead yet) or raises.
    """
    from ray.exceptions import RayActorError

    ray.kill(actor)
    for _ in range(100_000):
        try:
            ray.get(actor.held.remote())
        except RayActorError:
            return
    raise AssertionError("the killed actor still answers after 100,000 calls")


def check_holdings(sh):
    """No entity lost or duplicated: each shard holds exactly the entities the regions give it, each once."""
    live = sh._tree.handles()
    where = sh.regions.touched(sh.centres_of(live), sh._reach(sh.radii_of(live)))
    assert where.any(axis=1).all()
    for k in range(sh.shards):
        held = sh.held_by(k)
        assert np.array_equal(held, np.unique(held))
        assert np.array_equal(held, live[where[:, k]]), f"shard {k}"


def test_the_constructor_takes_shards_and_margins_by_keyword_and_origin_as_interest_manager_does(ray_cluster):
    """``ShardedInterest(1024.0, None, 3, 1)`` read 1 as the shard count where ``InterestManager`` reads it as
    the hysteresis; and a 3-D origin of zeros with ``dim=2`` passed, where ``InterestManager`` refuses it."""
    from server import ShardedInterest

    with pytest.raises(TypeError):
        ShardedInterest(SIZE, None, 3, 1)
    with pytest.raises(ValueError, match="origin"):
        InterestManager(SIZE, (0.0, 0.0, 0.0), 2)
    with pytest.raises(ValueError, match="origin"):
        ShardedInterest(SIZE, (0.0, 0.0, 0.0), 2, shards=1)
    sh = ShardedInterest(SIZE, dim=2, shards=1)
    try:
        assert sh.origin.tolist() == [0.0, 0.0]
    finally:
        sh.close()


@pytest.mark.parametrize("shards, hysteresis, margin", [(3, 0.0, 0.0), (2, 0.25, 12.0)])
def test_shards_answer_as_one_interest_manager_tick_for_tick(ray_cluster, shards, hysteresis, margin):
    rng = np.random.default_rng(shards)
    im, sh = twins(shards, hysteresis, margin)
    try:
        region_width = SIZE / 2
        centres = rng.uniform(0.0, SIZE, (600, 3))
        centres[:50, 0] = SIZE / 2                      # on the border between regions
        radii = rng.choice([0.0, 5.0, 20.0, region_width], 600)
        h = im.insert_many(centres, radii)
        assert np.array_equal(sh.insert_many(centres, radii), h)
        pool = np.arange(40) * 7 - 11
        for tick in range(8):
            ids = pool[rng.random(pool.size) < 0.8]         # viewers come and go
            rng.shuffle(ids)
            pos = rng.uniform(-10.0, SIZE + 10.0, (ids.size, 3))
            pos[: ids.size // 4, 1] = SIZE / 2              # on region borders
            reach = rng.uniform(0.0, margin, ids.size) if margin else None
            same(sh.tick(ids, pos, radii=reach), im.tick(ids, pos, radii=reach), f"tick {tick}")
            for v in ids[:5].tolist():
                assert np.array_equal(sh.interest(v), im.interest(v))
            live = np.array([x for x in h.tolist() if x in im])
            moved = live[rng.random(live.size) < 0.3]
            jump = rng.normal(0.0, 40.0, (moved.size, 3))   # far enough to cross borders
            new = np.clip(im.centres_of(moved) + jump, -20.0, SIZE + 20.0)
            if tick % 3 == 1:                               # resized too: a sphere grown past a border
                radii = rng.choice([0.0, 5.0, 20.0, region_width], moved.size)
                im.update_many(moved, new, radii)
                sh.update_many(moved, new, radii)
                assert np.array_equal(sh.radii_of(moved), radii)
            else:
                im.update_many(moved, new)
                sh.update_many(moved, new)
            gone = live[:: 17][:5] if tick % 2 else live[:0]
            im.remove_many(gone)
            sh.remove_many(gone)
            if tick == 4:                                   # handles handed out again
                c, r = rng.uniform(0.0, SIZE, (8, 3)), np.full(8, 30.0)
                assert np.array_equal(im.insert_many(c, r), sh.insert_many(c, r))
        check_holdings(sh)
        assert sh.ghost_fraction() > 0.0
    finally:
        sh.close()


def test_a_killed_actor_is_rebuilt_and_the_next_tick_is_identical(ray_cluster):
    rng = np.random.default_rng(9)
    im, sh = twins(2)
    try:
        h = populated(im, sh, rng, 400, (0.0, 40.0))
        ids, pos = first_tick(im, sh, rng, 60)
        moved = h[:120]
        new = rng.uniform(0.0, SIZE, (120, 3))
        im.update_many(moved, new)
        sh.update_many(moved, new)                  # sent; the kill may land before it is applied
        im.update_many(h[300:320], im.centres_of(h[300:320]), np.full(20, 55.0))
        sh.update_many(h[300:320], sh.centres_of(h[300:320]), np.full(20, 55.0))   # resized in place
        kill(ray_cluster, sh.actors[1])
        im.remove_many(h[200:210])
        sh.remove_many(h[200:210])
        pos = pos + 3.0
        same(sh.tick(ids, pos), im.tick(ids, pos), "after the kill")
        assert sh.restarts == 1
        kill(ray_cluster, sh.actors[0])             # killed between ticks, nothing pending
        same(sh.tick(ids, pos - 1.0), im.tick(ids, pos - 1.0), "after the second kill")
        assert sh.restarts == 2
        check_holdings(sh)
    finally:
        sh.close()


def test_held_by_a_killed_actor_rebuilds_it_as_a_tick_does(ray_cluster):
    """``held_by`` asked the dead actor and raised Ray's ``ActorDiedError`` (nothing pending to notice it)."""
    rng = np.random.default_rng(10)
    im, sh = twins(2)
    try:
        populated(im, sh, rng, 200, (0.0, 40.0))
        first_tick(im, sh, rng, 20)
        before = sh.held_by(1)
        kill(ray_cluster, sh.actors[1])
        assert sh.held_by(1).tolist() == before.tolist()
        assert sh.restarts == 1
        check_holdings(sh)
    finally:
        sh.close()


def test_a_radius_beyond_the_ghosts_and_bad_input_are_refused_and_change_nothing(ray_cluster):
    im, sh = twins(2, margin=5.0)
    try:
        c = np.array([[10.0, 10.0, 0.0], [200.0, 200.0, 0.0]])
        im.insert_many(c, [30.0, 30.0])
        sh.insert_many(c, [30.0, 30.0])
        ids, pos = [1, 2], [[12.0, 10.0, 0.0], [190.0, 200.0, 0.0]]
        same(sh.tick(ids, pos, radii=5.0), im.tick(ids, pos, radii=5.0))
        with pytest.raises(ValueError, match="beyond the probe_margin"):
            sh.tick(ids, pos, radii=5.5)              # InterestManager answers it; the ghosts would not cover it
        for call, error in [(lambda s: s.tick([1, 1], pos), ValueError),
                            (lambda s: s.tick([1.5, 2], pos), TypeError),
                            (lambda s: s.tick(ids, [[0.0, np.nan, 0.0], [1.0, 1.0, 1.0]]), ValueError),
                            (lambda s: s.tick(ids, pos[:1]), ValueError),
                            (lambda s: s.remove_many([0, 7]), KeyError),
                            (lambda s: s.update_many([0], [[1.0, 1.0]]), ValueError)]:
            for service in (sh, im):                  # the same error from both
                with pytest.raises(error):
                    call(service)
        assert len(sh) == len(im) == 2
        same(sh.tick(ids, pos), im.tick(ids, pos), "after the refusals")
    finally:
        sh.close()


def test_a_ctrl_c_inside_a_mutation_waits_for_it_and_the_shards_agree(ray_cluster, monkeypatch):
    """A SIGINT that lands between the coordinator's tree and the sends (simulated where a real one was
    seen: while the regions are worked out) is raised when ``update_many`` has finished: the next tick
    is InterestManager's, with the same update.  Before, the tree had moved and the shards had not,
    and a viewer on top of a moved entity was told it left."""

    rng = np.random.default_rng(4)
    im, sh = twins(2)
    try:
        h = populated(im, sh, rng, 300, (5.0, 40.0))
        ids, pos = first_tick(im, sh, rng, 40)
        touched = sh.regions.touched

        def interrupted(*args):
            signal.raise_signal(signal.SIGINT)  # Python's handler: KeyboardInterrupt at the next bytecode
            return touched(*args)

        monkeypatch.setattr(sh.regions, "touched", interrupted)
        moved, new = h[:100], rng.uniform(0.0, SIZE, (100, 3))
        new[0] = pos[0]                              # an entity moved onto viewer 0
        with pytest.raises(KeyboardInterrupt):
            sh.update_many(moved, new)
        monkeypatch.setattr(sh.regions, "touched", touched)
        im.update_many(moved, new)
        same(sh.tick(ids, pos), im.tick(ids, pos), "after the interrupted update")
        check_holdings(sh)
    finally:
        sh.close()


def test_a_shard_whose_changes_failed_is_rebuilt_from_the_coordinator(ray_cluster):
    """A change a shard could not apply (here a removal of an entity it never held: its ``KeyError``
    comes back as a ``RayTaskError``) has the shard rebuilt at the next tick, not raised at every tick."""
    rng = np.random.default_rng(5)
    im, sh = twins(2)
    try:
        populated(im, sh, rng, 200, (5.0, 30.0))
        empty_c = np.empty((0, 3))
        sh._send(0, sh.actors[0].apply.remote, (np.empty(0, dtype=np.int64), empty_c, np.empty(0)),
                 (np.empty(0, dtype=np.int64), empty_c), np.array([10**9]))
        ids, pos = np.arange(30), rng.uniform(0.0, SIZE, (30, 3))
        for _ in range(2):
            same(sh.tick(ids, pos), im.tick(ids, pos), "after the failed change")
        assert sh.restarts == 1
        check_holdings(sh)
    finally:
        sh.close()


def test_a_closed_service_refuses_ticks_and_mutations_and_stays_readable(ray_cluster):
    im, sh = twins(1)
    c = np.array([[10.0, 10.0, 0.0]])
    h = sh.insert_many(c, [30.0])
    sh.tick([1], [[12.0, 10.0, 0.0]])
    sh.close()
    assert sh.closed
    for call in (lambda: sh.tick([1], [[12.0, 10.0, 0.0]]), lambda: sh.insert_many(c, [1.0]),
                 lambda: sh.update_many(h, c), lambda: sh.remove_many(h), lambda: sh.held_by(0)):
        with pytest.raises(RuntimeError, match="closed"):
            call()
    assert sh.restarts == 0 and len(sh) == 1 and sh.interest(1).tolist() == h.tolist()
    assert sh.tree is sh._tree and np.array_equal(sh.tree.centres_of(h), c)


def test_viewer_ids_beyond_int64_are_the_same_error_as_interest_managers(ray_cluster):
    im, sh = twins(1)
    try:
        for service in (sh, im):
            for ids in ([2**70], np.array([2**63], dtype=np.uint64)):
                with pytest.raises(ValueError, match="fit in int64"):
                    service.tick(ids, [[1.0, 1.0, 1.0]])
            with pytest.raises(ValueError, match=r"positions\[1\]|finite"):
                service.tick([1, 2], [[1.0, 1.0, 1.0], [np.inf, 1.0, 1.0]])
        for call in (lambda s: s.tick([1], [[2**70, 0.0, 0.0]]), lambda s: s.tick([1, 2], [[0.0] * 3, [np.nan] * 3]),
                     lambda s: s.tick([1, 2], [[0.0] * 3] * 2, radii=[0.0, -1.0]),
                     lambda s: s.tick([1], [[0.0] * 3] * 2), lambda s: s.tick([1], [["a", 0.0, 0.0]])):
            errors = []
            for service in (sh, im):  # the same error in the same words: InterestManager.tick's own checks
                with pytest.raises((ValueError, TypeError)) as caught:
                    call(service)
                errors.append((type(caught.value), str(caught.value)))
            assert errors[0] == errors[1]
    finally:
        sh.close()


def test_a_tick_of_no_viewers_drops_the_last_ticks_as_interest_managers_does(ray_cluster):
    im, sh = twins(2, hysteresis=0.1, margin=2.0)
    try:
        for service in (im, sh):
            service.insert_many([[10.0, 10.0, 0.0]], [30.0])
            first = service.tick([1, 2], [[12.0, 10.0, 0.0], [200.0, 200.0, 0.0]])
            assert first.entered.tolist() == [0]
        for positions, radii in ((np.empty((0, 3)), None), ([], None), (np.zeros((0, 3)), np.empty(0))):
            empty = [service.tick(np.empty(0, dtype=np.int64), positions, radii) for service in (im, sh)]
            same(*empty, "no viewers")
            assert empty[0].viewer_ids.size == 0 and im.viewers.size == sh.viewers.size == 0   # viewers dropped
        same(im.tick([1], [[12.0, 10.0, 0.0]]), sh.tick([1], [[12.0, 10.0, 0.0]]), "back")  # a new viewer again
    finally:
        sh.close()


def test_two_threads_share_a_service_one_call_at_a_time(ray_cluster):
    """One thread moves entities while another ticks: each call runs whole under the service's lock (the
    list of a shard's sent changes was read by one while the other appended to it: every tick failed)."""
    import threading

    im, sh = twins(2)
    rng = np.random.default_rng(4)
    try:
        h = sh.insert_many(rng.uniform(0.0, SIZE, (300, 3)), rng.uniform(1.0, 20.0, 300))
        errors: list[BaseException] = []
        moved = threading.Event()

        def mover() -> None:
            try:
                for _ in range(40):
                    sh.update_many(h[:150], rng.uniform(0.0, SIZE, (150, 3)))
                moved.set()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                moved.set()

        thread = threading.Thread(target=mover)
        thread.start()
        ticks = 0
        while not moved.is_set() or ticks < 5:
            sh.tick([1, 2], [[20.0, 20.0, 20.0], [200.0, 100.0, 50.0]])
            ticks += 1
        thread.join()
        assert not errors, errors
        im.insert_many(sh.centres_of(h), sh.radii_of(h))
        im.tick([1, 2], [[20.0, 20.0, 20.0], [200.0, 100.0, 50.0]])
        points = [[30.0, 30.0, 30.0], [150.0, 100.0, 50.0]]
        same(im.tick([1, 2], points), sh.tick([1, 2], points), "after the threads")
        check_holdings(sh)
    finally:
        sh.close()
    assert "closed" in repr(sh)


def test_a_probe_margin_of_the_wrong_type_is_a_type_error_and_a_bad_value_a_value_error(ray_cluster):
    from server import ShardedInterest

    for bad in ("1", None, True):
        with pytest.raises(TypeError, match="probe_margin must be a real number"):
            ShardedInterest(SIZE, shards=1, probe_margin=bad)
    for bad in (-1.0, float("nan"), float("inf"), 10**400, Fraction(-1, 3)):
        with pytest.raises(ValueError, match="probe_margin must be a finite number >= 0") as error:
            ShardedInterest(SIZE, shards=1, probe_margin=bad)
        assert len(str(error.value)) < 100  # 10**400: "a number beyond float64", not its 401 digits
    for bad in (None, 2.0, "2", True):
        with pytest.raises(TypeError, match="shards must be an integer"):
            ShardedInterest(SIZE, shards=bad)
    sh = ShardedInterest(SIZE, shards=2, probe_margin=Fraction(5, 2))  # any real number, as hysteresis takes
    try:
        assert sh.probe_margin == 2.5
        for bad in (-1, 2, 5):
            with pytest.raises(ValueError, match="the shard must be from 0 to 1"):
                sh.held_by(bad)
        with pytest.raises(TypeError, match="the shard must be an integer"):
            sh.held_by(1.0)
    finally:
        sh.close()


def test_after_ray_shutdown_a_call_says_so_and_starts_no_new_ray():
    """``ray.shutdown()`` without ``close()``: a tick started a new local Ray, where the actors do not
    exist, and failed with Ray's own errors.  Now one ``RuntimeError``; run apart, so that this
    module's cluster stays up."""
    import subprocess
    import sys

    program = (
        "import numpy as np, ray, pytest\n"
        "from server import ShardedInterest\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "sh = ShardedInterest(64.0, shards=1)\n"
        "sh.insert_many([[1.0, 1.0, 1.0]], [5.0])\n"
        "ray.shutdown()\n"
        "with pytest.raises(RuntimeError, match='Ray was shut down'):\n"
        "    sh.tick([1], [[1.0, 1.0, 1.0]])\n"
        "sh.close()  # as the error says: and close() starts no Ray either (ray.kill did)\n"
        "print('no new ray' if not ray.is_initialized() else 'ray started again')\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)  # a new session, the old service\n"
        "again = ShardedInterest(64.0, shards=1)\n"
        "again.insert_many([[1.0, 1.0, 1.0]], [5.0])\n"
        "old = ShardedInterest(64.0, shards=1)\n"
        "old.insert_many([[1.0, 1.0, 1.0]], [5.0])\n"
        "ray.shutdown()\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "for call in (lambda: old.update_many([0], [[2.0, 1.0, 1.0]]), lambda: old.tick([1], [[1.0, 1.0, 1.0]])):\n"
        "    with pytest.raises(RuntimeError, match='Ray was shut down'):\n"
        "        call()  # not Ray's bare Exception from a cluster that is not the actors'\n"
        "assert old.centres_of([0]).tolist() == [[1.0, 1.0, 1.0]]  # refused before the coordinator's tree moved it\n"
        "old.close()\n"
        "ray.shutdown()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "no new ray", proc.stderr[-2000:]


def test_a_script_that_puts_the_checkout_on_sys_path_gets_working_shards(tmp_path):
    """Ray's workers read PYTHONPATH, not the driver's sys.path: the actors could not import ``server``, and
    the first tick failed with Ray's ActorDiedError (later: the constructor said so, after some twenty lines
    of the workers' tracebacks).  Now the actors are given the checkout's folder, and the ticks are
    InterestManager's; where the workers still cannot import it, the constructor says so."""
    import subprocess
    import sys

    script = tmp_path / "my_server.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import numpy as np, pytest, ray\n"
        "import culling\n"
        "from server import ShardedInterest, sharded\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "given = sharded._actor_options\n"
        "sharded._actor_options = lambda: {}  # as before: the workers without the checkout\n"
        "with pytest.raises(RuntimeError, match='cannot import this package.*PYTHONPATH'):\n"
        "    ShardedInterest(64.0, dim=2, shards=1)\n"
        "sharded._actor_options = given\n"
        "service, alone = ShardedInterest(64.0, dim=2, shards=2), culling.InterestManager(64.0, dim=2)\n"
        "rng = np.random.default_rng(3)\n"
        "centres, radii = rng.uniform(0, 64, (300, 2)), rng.uniform(0, 9, 300)\n"
        "assert service.insert_many(centres, radii).tolist() == alone.insert_many(centres, radii).tolist()\n"
        "viewers = rng.uniform(0, 64, (20, 2))\n"
        "a, b = service.tick(np.arange(20), viewers), alone.tick(np.arange(20), viewers)\n"
        "assert a.entered.tolist() == b.entered.tolist() and a.entered_offsets.tolist() == b.entered_offsets.tolist()\n"
        "service.close()\n"
        "ray.shutdown()\n"
        "print('told, then served')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "told, then served", proc.stderr[-2000:]


def test_ctrl_c_ignored_by_the_program_is_not_reported_held():
    """``python -m server.demo ... &`` from a script, or under ``nohup``: SIGINT is ignored, and the demo
    went on only if the signal came after Ray had loaded."""

    from server.interrupts import ctrl_c_held

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert ctrl_c_held(lambda: signal.raise_signal(signal.SIGINT)) == (None, False)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert ctrl_c_held(lambda: signal.raise_signal(signal.SIGINT)) == (None, True)


def test_the_demo_interrupted_while_ray_loads_says_one_line(monkeypatch):
    """A Ctrl-C while ``import ray`` runs (the demo's first second; simulated by an import that raises
    it): one line and status 130, not the import's traceback."""
    import sys

    from server.demo import main

    class Interrupting:
        def find_spec(self, name, path=None, target=None):
            if name == "ray":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    out, err = io.StringIO(), io.StringIO()
    assert main(["--ticks", "1"], out=out, err=err) == 130
    assert err.getvalue() == "python -m server.demo: error: interrupted\n"


def test_the_demo_interrupted_while_the_library_loads_says_one_line(monkeypatch):
    """A Ctrl-C inside numba's C extensions' import came out as their ImportError ("numba._devicearray failed
    to import"): a traceback, status 1.  The library's import is held now: a SIGINT during it is one line and
    status 130, and the ticks never start."""

    import server.demo as demo

    imported = []

    def load() -> None:
        signal.raise_signal(signal.SIGINT)  # held: the import goes on to its end
        imported.append(True)

    monkeypatch.setattr(demo, "_load_library", load)
    started = []
    monkeypatch.setattr(demo, "run", lambda *a: started.append(a))
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--ticks", "1"], out=out, err=err) == 130
    assert imported and not started
    assert err.getvalue() == "python -m server.demo: error: interrupted\n"


def test_the_demo_interrupted_on_a_terminal_ends_the_bar_line_first(ray_cluster, monkeypatch):
    import server.demo as demo

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def interrupted(args, out, err):
        err.write(f"\r\x1b[K{demo.bar(4, 400)}")       # the bar, redrawn in place, when Ctrl-C came
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "run", interrupted)
    out, err = io.StringIO(), Terminal()
    assert demo.main(["--ticks", "400"], out=out, err=err) == 130
    assert err.getvalue().endswith(f"{demo.bar(4, 400)}\npython -m server.demo: error: interrupted\n")


def test_the_demo_whose_shard_actors_cannot_start_says_one_line(ray_cluster, monkeypatch):
    """Joined to a cluster whose authentication differs (an earlier ``ray start``), the actors never run:
    the constructor's RuntimeError is one line and status 1, not a traceback."""
    import server.demo as demo
    import server.sharded as sharded

    def cannot(self):  # as _started fails: its actors killed first
        for actor in self._actors:
            ray_cluster.kill(actor)
        raise RuntimeError("the shard actors did not start (The actor never ran -\n it was cancelled)")

    monkeypatch.setattr(sharded.ShardedInterest, "_started", cannot)
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--players", "40", "--entities", "400", "--ticks", "1", "--shards", "1"], out=out, err=err) == 1
    assert err.getvalue().splitlines()[-1] == ("python -m server.demo: error: the shard actors did not start "
                                               "(The actor never ran - it was cancelled)")


def test_the_demo_on_a_cold_cache_shows_the_compile_before_its_first_tick(ray_cluster, monkeypatch):
    """An empty numba cache: tick 0 took 9 s in silence; now the compile is a bar on stderr, first."""
    import culling
    import server.demo as demo

    calls = []
    monkeypatch.setattr(culling, "kernels_cached", lambda groups=None: False)
    monkeypatch.setattr(culling, "warm_up", lambda progress=None, groups=None, workers=None:
                        calls.append(groups) or progress(1, 1, "interest: tick") or 0.0)
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--players", "40", "--entities", "400", "--ticks", "1", "--shards", "1", "--world", "512",
                      "--quiet"], out=out, err=err) == 0
    assert calls == [demo.KERNELS]
    assert err.getvalue().startswith(f"{culling.COMPILING}: [{'#' * 30}] 1/1")


def test_the_demo_redraws_its_bar_in_place_on_a_terminal_and_clears_it_for_each_tick_line(ray_cluster):
    from server.demo import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out, err = Terminal(), Terminal()
    assert main(["--players", "40", "--entities", "400", "--ticks", "2", "--shards", "2", "--world", "512"],
                out=out, err=err) == 0
    bars = [f"[{'#' * (15 * t)}{'.' * (30 - 15 * t)}] {t}/2" for t in range(3)]
    # each tick: the bar's line cleared (its line then holds the tick's figures on stdout), the bar drawn again
    assert err.getvalue() == "".join(f"\r\x1b[K\r\x1b[K{b}" for b in bars) + "\n"
    assert [line.split(":")[0] for line in out.getvalue().splitlines() if line.startswith("tick ")] == \
        ["tick    0", "tick    1", "tick    2"]


def test_the_demo_with_its_figures_piped_ends_every_line_of_its_bar_on_the_terminal(ray_cluster):
    """``| tee log``: stdout a pipe, stderr the terminal; a bar redrawn in place there had each tick's line,
    coming through the pipe, run into it."""
    from server.demo import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out, err = io.StringIO(), Terminal()
    assert main(["--players", "40", "--entities", "400", "--ticks", "2", "--shards", "2", "--world", "512"],
                out=out, err=err) == 0
    assert err.getvalue().splitlines() == [f"[{'#' * (15 * t)}{'.' * (30 - 15 * t)}] {t}/2" for t in range(3)]
    assert "\x1b" not in err.getvalue()


def test_the_demo_interrupted_while_ray_shuts_down_at_the_end_says_so(monkeypatch):
    """A Ctrl-C after the summary, while Ray's processes stop: the shutdown finishes, then one line and 130
    (it exited 0 in silence)."""
    import sys
    import types

    import server.demo as demo
    import server.sharded  # noqa: F401  (with the real Ray, before it is faked)

    stopped = []
    fake = types.SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: None,
                                 shutdown=lambda: (signal.raise_signal(signal.SIGINT), stopped.append(True)))
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(demo, "run", lambda *a: None)
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--ticks", "1"], out=out, err=err) == 130
    assert stopped and err.getvalue() == "python -m server.demo: error: interrupted\n"


def test_the_demo_keeps_sigterm_while_ray_init_puts_its_own_in(monkeypatch):
    """``ray.init`` installs a SIGTERM handler of its own at its start (``sys.exit(15)``: status 15, Ray's
    processes half made and left running); the demo keeps its own there, so a SIGTERM during the start
    waits for it, as a Ctrl-C does, then stops Ray: one line, 143."""
    import sys
    import types

    import server.demo as demo
    import server.sharded  # noqa: F401  (with the real Ray, before it is faked)

    stopped = []

    def set_sigterm_handler(handler):
        signal.signal(signal.SIGTERM, handler)

    def init(**kw):
        fake._private.utils.set_sigterm_handler(lambda number, frame: sys.exit(number))
        signal.raise_signal(signal.SIGTERM)

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: stopped.append(True),
                                 _private=types.SimpleNamespace(utils=types.SimpleNamespace(
                                     set_sigterm_handler=set_sigterm_handler)))
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(demo, "run", lambda *a: pytest.fail("ran after the SIGTERM"))
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--ticks", "1"], out=out, err=err) == 143
    assert stopped and err.getvalue() == "python -m server.demo: error: terminated\n"
    assert fake._private.utils.set_sigterm_handler is set_sigterm_handler   # Ray's own put back


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_the_demo_terminated_while_ray_starts_stops_it_and_says_so(monkeypatch, sigint):
    """A SIGTERM while Ray starts waits until Ray is up, as a Ctrl-C does, then stops it: one line, 143;
    also in a job that ignores SIGINT (``&`` from a script), where the held Ctrl-C would be dropped."""
    import sys
    import types

    import server.demo as demo
    import server.sharded  # noqa: F401  (with the real Ray, before it is faked)

    stopped = []
    fake = types.SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: signal.raise_signal(signal.SIGTERM),
                                 shutdown=lambda: stopped.append(True))
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(demo, "run", lambda *a: pytest.fail("ran after the SIGTERM"))
    before = signal.getsignal(signal.SIGTERM)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint == "ignored" else None
    try:
        out, err = io.StringIO(), io.StringIO()
        assert demo.main(["--ticks", "1"], out=out, err=err) == 143
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    assert stopped and err.getvalue() == "python -m server.demo: error: terminated\n"
    assert signal.getsignal(signal.SIGTERM) == before  # the program's own handler back


def test_the_demo_terminated_with_its_process_group_while_ray_starts_says_so(monkeypatch):
    """A stop sent to the whole process group (``timeout``, a service manager) reaches Ray's own
    processes too, and ``ray.init`` fails for it ("Failed to connect to GCS"): that was a traceback and
    status 1; it is the termination, one line and 143, with Ray stopped.  A start that fails without
    a SIGTERM is still Ray's error."""
    import sys
    import types

    import server.demo as demo
    import server.sharded  # noqa: F401  (with the real Ray, before it is faked)

    def init(**kw):
        signal.raise_signal(signal.SIGTERM)
        raise ConnectionError("Failed to connect to GCS")

    stopped = []
    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: stopped.append(True))
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(demo, "run", lambda *a: pytest.fail("ran after the SIGTERM"))
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--ticks", "1"], out=out, err=err) == 143
    assert stopped and err.getvalue() == "python -m server.demo: error: terminated\n"
    fake.init = lambda **kw: (_ for _ in ()).throw(ConnectionError("Failed to connect to GCS"))
    with pytest.raises(ConnectionError):
        demo.main(["--ticks", "1"], out=io.StringIO(), err=io.StringIO())


def test_the_demo_runs_tiny_and_matches_interest_manager(ray_cluster):
    from server.demo import main

    out, err = io.StringIO(), io.StringIO()
    assert main(["--players", "40", "--entities", "400", "--ticks", "3", "--shards", "2", "--world", "512",
                 "--check"], out=out, err=err) == 0
    text = out.getvalue()
    assert "tick    3:" in text and "every tick identical to InterestManager" in text
    assert err.getvalue().splitlines() == [f"[{'#' * (10 * t)}{'.' * (30 - 10 * t)}] {t}/3" for t in range(4)]  # a log: a line each


def test_the_demo_without_ray_says_how_to_install_it_in_one_line(monkeypatch):
    import sys

    from server.demo import main

    monkeypatch.setitem(sys.modules, "ray", None)  # as where the server extra is not installed: import fails
    out, err = io.StringIO(), io.StringIO()
    assert main(["--ticks", "1"], out=out, err=err) == 1
    assert err.getvalue() == 'python -m server.demo: error: the sharded server needs Ray: pip install -e ".[server]"\n'
    assert out.getvalue() == ""


def test_the_demo_interrupted_says_one_line_and_exits_130():
    """Ctrl-C mid-run (SIGINT, as a terminal sends it): one line, no traceback, Ray shut down (a Ctrl-C while
    Ray starts is held until its processes run, so that the shutdown stops them all)."""
    import subprocess
    import sys

    from interrupts import interrupt_once, sigint_as_a_terminal_gives_it

    pytest.importorskip("ray")
    proc = subprocess.Popen([sys.executable, "-m", "server.demo", "--players", "100", "--entities", "1000",
                             "--ticks", "100000", "--shards", "1", "--world", "512"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_a_terminal_gives_it)
    def ticking() -> bool:  # a line of stdout a call (the set-up line, then one a tick)
        return proc.stdout.readline().startswith("tick    2:")

    err = interrupt_once(proc, ticking)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "python -m server.demo: error: interrupted" and "Traceback" not in err, err
    assert "authentication" not in err, err  # asked for by name: Ray's warning of a mode left unset stays out


def test_the_demo_terminated_says_one_line_stops_ray_and_exits_143():
    """SIGTERM mid-run (``kill``, ``timeout``, a service manager's stop) takes Ctrl-C's way out: one line,
    Ray's processes stopped, status 143.  Ray's own handler printed a C++ stack dump and skipped the
    shutdown."""
    import subprocess
    import sys

    from interrupts import interrupt_once

    pytest.importorskip("ray")
    proc = subprocess.Popen([sys.executable, "-m", "server.demo", "--players", "100", "--entities", "1000",
                             "--ticks", "100000", "--shards", "1", "--world", "512"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "RAY_ADDRESS": "local"})
    def ticking() -> bool:
        return proc.stdout.readline().startswith("tick    2:")

    err = interrupt_once(proc, ticking, signal_number=signal.SIGTERM)
    assert proc.returncode == 143, err
    assert err.splitlines()[-1] == "python -m server.demo: error: terminated", err
    assert "SIGTERM received" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("flags, message", [
    (["--world", "0"], "--world must be from 1 to 1e+09 (the entities' radii are 10 to 150 world units), got 0"),
    (["--world", "nan"], "--world must be from 1 to 1e+09 (the entities' radii are 10 to 150 world units), "
                         "got nan"),
    (["--world", "1e-300"], "--world must be from 1 to 1e+09 (the entities' radii are 10 to 150 world units), "
                            "got 1e-300"),
    (["--world", "1e308"], "--world must be from 1 to 1e+09 (the entities' radii are 10 to 150 world units), "
                           "got 1e+308"),
    (["--hysteresis", "-1"], "--hysteresis must be from 0 to 1, got -1"),
    (["--hysteresis", "1e308"], "--hysteresis must be from 0 to 1, got 1e+308"),
    (["--hysteresis", "nan"], "--hysteresis must be from 0 to 1, got nan"),
    (["--shards", "65"], "--shards must be from 1 to 64, got 65"),
    (["--shards", "0"], "--shards must be from 1 to 64, got 0"),
    (["--players", "-5"], "--players must be from 0 to 100,000,000, got -5"),
    (["--entities", str(10**22)], f"--entities must be from 0 to 100,000,000, got {10**22}"),
    (["--seed", "-1"], "--seed must be 0 or more, got -1"),
    (["--ticks", "0"], "--ticks must be at least 1, got 0"),
])
def test_the_demo_refuses_bad_values_in_one_line_before_ray_starts(flags, message, capsys):
    from server.demo import main

    with pytest.raises(SystemExit) as exit_:
        main(flags)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"python -m server.demo: error: {message}"


@pytest.mark.parametrize("flags, message", [
    (["--players", str(10**22), "--shards", "1"], f"--players must be from 1 to 100,000,000, got {10**22}"),
    (["--world", "1e-300", "--players", "50", "--entities", "500"],
     "--world must be from 1 to 1e+09 (the entities' radii are 10 to 150 world units), got 1e-300"),
    (["--entities", "0"], "--entities must be from 1 to 100,000,000, got 0"),
])
def test_the_scale_model_refuses_what_the_demo_refuses_in_one_line(flags, message, capsys):
    """``server.scale`` took ``--world 1e-300`` (a traceback from the tree) and any count (NumPy's)."""
    from server.scale import main

    with pytest.raises(SystemExit) as exit_:
        main(flags)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"python -m server.scale: error: {message}"


def test_the_shards_calls_are_not_kept_as_ray_task_events():
    """Two calls a shard a tick, each recorded by Ray's control store (the GCS, up to 100,000 tasks): its
    memory grew from 58 to 159 MB in 90 s of ``python -m server.demo --players 1000 --entities 10000`` (420
    MB in 14 minutes); with the events off it stayed at 46-48 MB."""
    from server import sharded

    assert sharded._actor_options()["enable_task_events"] is False
