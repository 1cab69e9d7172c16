"""The benchmarks: one function per workload, each adding tables, targets and
plot series to the run's :class:`~benchmarks.report.Results`."""

from __future__ import annotations

import numpy as np

from benchmarks.peers import (
    BruteForce,
    CullingMethod,
    KDTreePeer,
    NaiveBruteForce,
    RTreePeer,
    rebuilt_kdtree,
    rtree_boxes,
)
from benchmarks.report import Results, Table, Target, fmt_count, fmt_ratio, fmt_size, fmt_speed, fmt_time
from benchmarks.suite import (
    Config,
    Structures,
    built,
    candidates_of,
    single_ops,
    timed_loop,
    tree_method,
    verify,
    verify_query_many,
    visited_nodes,
)
from benchmarks.timing import (
    clock,
    no_gc,
    process_clock,
    time_call,
    time_each,
    time_interleaved,
    time_points,
    traced_memory,
)
from benchmarks.workloads import MIN_VIEW, Workload, clusters, colocated, forest, moving, moving_steps, sprawl

MED = np.median


def _vs(other: float, tree: float, what: str) -> str:
    """'12x faster than X' or '1.5x slower than X' for the tree against ``what``."""
    return f"{fmt_speed(other / tree)} than {what}"


def _rtree_sample(rt: RTreePeer, wl: Workload, k: int, new: np.ndarray | None, seed: int = 12) -> float:
    """Seconds per rtree delete (``new`` None) or delete + insert, on ``k`` objects."""
    rng = np.random.default_rng(seed)
    pick = rng.choice(wl.n, min(k, wl.n), replace=False)
    lo, hi = rtree_boxes(wl.centres[pick], wl.radii[pick])
    old = [tuple(a) + tuple(b) for a, b in zip(lo, hi)]
    if new is None:
        return time_each(rt.idx.delete, [(int(i), box) for i, box in zip(pick, old)])
    lo2, hi2 = rtree_boxes(new[pick], wl.radii[pick])
    moved = [tuple(a) + tuple(b) for a, b in zip(lo2, hi2)]
    return time_each(rt.move, [(int(i), o, m) for i, o, m in zip(pick, old, moved)])


# --------------------------------------------------------------------- forest


def run_forest(cfg: Config, structs: Structures, res: Results) -> None:
    """Exact query against the peers at N = 10k, 100k, 1M; build, memory, single ops."""
    q = Table(
        "forest",
        "Forest: exact point query against the peers",
        "Objects spread over the 4096 x 4096 ground plane (root 4096, 3-D), view distances "
        "20-2,500 in classes (60% at 20-30, 0.3% at 2,000-2,500); queries at eye height along a "
        f"camera path of {cfg.path_points} points.  Density, and so output, grows with N.  "
        "The peers: NumPy's scan (one array per axis, buffers reused; and the one-line expression); "
        "scipy's cKDTree, one per octave of view distances, each asked with `query_ball_point` at its "
        "octave's largest (one tree asked at the largest of all returns most of the world); rtree over the "
        "spheres' boxes; each followed by the exact filter.  "
        "`gather floor` is `centres[result]`, the answer's centres gathered from the caller's array: a yardstick "
        "of the output's size, not a bound (the tree reads its own pool, laid out in space, and can run below "
        "it).  Each method's queries run back to back, so its own data stays in the caches between them; a game "
        "frame's other work evicts them (at 1M, 64 MB written between queries: the tree's query 3.5-5x slower, "
        "its lead over brute force about 20x instead of 60-110x, by hand, December 6).",
        ["N", "method", "build", "query (median)", "time / tree exact", "returned (median)", "tree candidates"],
        plots=["query_vs_n.png", "query_vs_output.png"],
    )
    ops = Table(
        "forest_ops",
        "Forest: tree structure, single operations and memory",
        "Levels and nodes a query visits (from `trace`), a single `update()` that stays in its "
        "node, a single `remove()`, and memory per object (nodes included), next to rtree's delete and "
        "delete + insert of one box.  Memory three ways: built by one `insert_many` (tracemalloc's count, or "
        f"`nbytes()` where larger); after {MOVED_FRAMES} frames of `update_many` moving every object (the "
        f"moving section's steps) and built by `insert_many` batches of {STREAM_BATCH:,} (a world streamed "
        "in), both `nbytes()` (the arrays the structure holds, which tracemalloc counts too).",
        ["N", "levels", "nodes", "update()", "remove()", "rtree delete", "rtree move", "memory / object",
         "after moves", "streamed in"],
    )
    s = res.series.setdefault("forest", {"n": [], "methods": {}, "tree_points": [], "gather_points": []})
    last: dict = {}
    for n in cfg.forest_sizes:
        wl = forest(n, cfg.path_points)
        tree = tree_method(structs, wl)
        t_build = built(tree, wl, cfg.build_repeats)
        cand = candidates_of(tree)
        peers = [BruteForce(), KDTreePeer(), RTreePeer(), NaiveBruteForce()]
        peer_build = {p.name: built(p, wl, cfg.build_repeats) for p in peers}
        expected, ties = verify(wl, [tree, cand] + peers)
        n_cand = np.array([len(cand.query(p)) for p in wl.path])
        verify_query_many(tree, wl, expected)
        if ties:
            res.notes.append(f"forest {fmt_size(n)}: {ties} surface ties between methods (not disagreements).")
        out = np.array([len(e) for e in expected])
        times = {tree.name: time_points(tree.query, wl.path, cfg.repeats)}
        times[cand.name] = time_points(cand.query, wl.path, cfg.repeats)
        for p in peers:
            times[p.name] = time_points(p.query, wl.path, cfg.peer_repeats)
        gather = time_points(lambda i: wl.centres[expected[int(i)]], np.arange(len(wl.path)), cfg.repeats)
        with process_clock():  # on the library's threads too: every thread's CPU, as the single queries' is CPU
            batch = time_call(lambda: tree.structure.query_many(wl.path, exact=True), cfg.repeats) / len(wl.path)
        levels, nodes = visited_nodes(tree, wl)
        mem = _memory(tree, wl)
        moved, streamed = _memory_in_use(tree, wl)
        rt = peers[2]
        cands = fmt_count(MED(n_cand))
        rt_move = _rtree_sample(rt, wl, cfg.rtree_ops, wl.centres + 1e-3)
        rt_del = _rtree_sample(rt, wl, cfg.rtree_ops, None, seed=13)
        t_upd, t_rem = single_ops(tree, wl, cfg.single_ops)

        t_tree = MED(times[tree.name])
        builds = {tree.name: fmt_time(t_build), cand.name: "", **{k: fmt_time(v) for k, v in peer_build.items()}}
        for name, t in times.items():
            q.rows.append([fmt_size(n), name, builds[name], fmt_time(MED(t)), fmt_ratio(MED(t) / t_tree),
                           fmt_count(MED(out)), cands if name.startswith("tree") else ""])
        q.rows.append([fmt_size(n), "tree query_many, per point", "", fmt_time(batch), fmt_ratio(batch / t_tree),
                       fmt_count(MED(out)), cands])
        q.rows.append([fmt_size(n), "gather floor", "", fmt_time(MED(gather)), fmt_ratio(MED(gather) / t_tree),
                       fmt_count(MED(out)), ""])
        ops.rows.append([fmt_size(n), f"{MED(levels):.0f}", f"{MED(nodes):.0f}", fmt_time(t_upd), fmt_time(t_rem),
                         fmt_time(rt_del), fmt_time(rt_move), f"{mem / n:.0f} B", f"{moved / n:.0f} B",
                         f"{streamed / n:.0f} B"])
        q.sentences.append(
            f"N={fmt_size(n)}: the tree answers an exact query in {fmt_time(t_tree)} for a median of "
            f"{fmt_count(MED(out))} visible objects: {_vs(MED(times['numpy brute force']), t_tree, 'brute force')}, "
            f"{_vs(MED(times['scipy cKDTree']), t_tree, 'cKDTree')} and {_vs(MED(times['rtree']), t_tree, 'rtree')}; it costs "
            f"{fmt_ratio(t_tree / MED(gather))} the time of merely gathering its output's centres, and tests "
            f"{MED(n_cand / np.maximum(out, 1)):.1f} candidates per visible object."
        )
        s["n"].append(n)
        for name, t in times.items():
            s["methods"].setdefault(name, []).append(float(MED(t)))
        s["tree_points"].append((n, out.tolist(), times[tree.name].tolist()))
        s["gather_points"].append((n, out.tolist(), gather.tolist()))
        last = dict(n=n, times=times, t_tree=t_tree, gather=MED(gather), build=t_build, rt_build=peer_build["rtree"],
                    upd=t_upd, rem=t_rem, mem=mem / n, moved=moved / n, streamed=streamed / n, rt_del=rt_del)
        s.setdefault("single", []).append((n, t_upd, t_rem))
    single = s["single"]
    (n0, u0, r0), (n1, u1, r1) = single[0], single[-1]
    ops.sentences.append(
        f"A single in-node update() costs {fmt_time(u0)} at N={fmt_size(n0)} and {fmt_time(u1)} at N={fmt_size(n1)} "
        f"(x{u1 / u0:.2f}), a single remove() {fmt_time(r0)} and {fmt_time(r1)} (x{r1 / r0:.2f}); "
        f"rtree needs {fmt_time(last['rt_del'])} per delete at N={fmt_size(n1)}."
    )
    ops.sentences.append(f"At N={fmt_size(last['n'])} the tree holds {last['mem']:.0f} bytes per object, nodes included, as "
                         f"built; {last['moved']:.0f} after moves (its pool grown by a quarter when a moved object "
                         f"first needs a larger block) and {last['streamed']:.0f} when streamed in (a full pool "
                         f"compacted where released blocks hold a quarter of the rows in use).")
    ceiling = MED(last["times"]["numpy brute force"]) / last["gather"]
    brute = MED(last["times"]["numpy brute force"])
    q.sentences.append(
        f"At N={fmt_size(last['n'])} a 60x lead over brute force means answering in {fmt_time(brute / 60)}, while "
        f"merely gathering the answer's centres takes {fmt_time(last['gather'])}: brute force costs only "
        f"{fmt_ratio(ceiling)} the gather floor on this workload."
    )
    res.tables += [q, ops]
    _forest_targets(cfg, res, last)


#: Frames of moves, and the batch of a streamed build, behind the forest's "after moves" and
#: "streamed in" memory.
MOVED_FRAMES = 3
STREAM_BATCH = 10_000


def _memory_in_use(method: CullingMethod, wl: Workload) -> tuple[int, int]:
    """Bytes a structure of ``method`` holds (``nbytes()``) after :data:`MOVED_FRAMES` frames of moves,
    and when built by batches of :data:`STREAM_BATCH`: what a game holds, not only a fresh build."""
    moving = method.factory()
    handles = moving.insert_many(wl.centres, wl.radii)
    for centres in moving_steps(wl, MOVED_FRAMES):
        moving.update_many(handles, centres)
    moved = moving.nbytes()
    del moving
    streamed = method.factory()
    for start in range(0, wl.n, STREAM_BATCH):
        streamed.insert_many(wl.centres[start:start + STREAM_BATCH], wl.radii[start:start + STREAM_BATCH])
    return moved, streamed.nbytes()


def _memory(method: CullingMethod, wl: Workload) -> int:
    """Bytes a freshly built structure of ``method`` holds: tracemalloc's count, or the structure's
    ``nbytes()`` where that is larger (the dense grid maps its per-cell arrays outside NumPy's
    allocator, ``culling.core.growth.untouched_zeros``, where tracemalloc does not see them)."""

    def build():
        s = method.factory()
        s.insert_many(wl.centres, wl.radii)
        return s

    structure, size = traced_memory(build)
    own = structure.nbytes() if hasattr(structure, "nbytes") else 0
    del structure
    return max(size, own)


def _forest_targets(cfg: Config, res: Results, last: dict) -> None:
    n, times, t = fmt_size(last["n"]), last["times"], last["t_tree"]
    size = f" at {n}" + ("" if last["n"] >= 1_000_000 else " (preset size; the target is at 1M)")
    brute = MED(times["numpy brute force"]) / t
    ceiling = MED(times["numpy brute force"]) / last["gather"]
    res.targets.append(Target(f"exact query vs brute force{size}", f"tree {fmt_time(t)}, brute {fmt_time(MED(times['numpy brute force']))} "
                              f"(brute is {fmt_ratio(ceiling)} the gather floor)",
                              fmt_ratio(brute), ">= 60x (issue 41)", brute >= 60))
    for peer in ("scipy cKDTree", "rtree"):
        r = MED(times[peer]) / t
        res.targets.append(Target(f"exact query vs {peer}{size}", f"tree {fmt_time(t)}, {peer} {fmt_time(MED(times[peer]))}",
                                  fmt_ratio(r), ">= 10x", r >= 10))
    g = t / last["gather"]
    res.targets.append(Target(f"output-bound: query / gather{size}", f"tree {fmt_time(t)}, centres[result] {fmt_time(last['gather'])}",
                              fmt_ratio(g), "<= 10x (aim 5x)", g <= 10, g <= 5))
    b = last["build"]
    res.targets.append(Target(f"insert_many build{size}", f"tree {fmt_time(b)}, rtree bulk load {fmt_time(last['rt_build'])}",
                              f"{fmt_time(b)}, {fmt_speed(last['rt_build'] / b)} than rtree",
                              "<= 150 ms and faster than rtree", b <= 0.150 and b < last["rt_build"]))
    single = res.series["forest"]["single"]
    for k, label in ((1, "update() in node"), (2, "remove()")):
        vals = [row[k] for row in single]
        growth = vals[-1] / vals[0]
        res.targets.append(Target(
            f"single {label}{size}, O(1)",
            f"{fmt_time(vals[-1])} at {n}, {fmt_time(vals[0])} at {fmt_size(single[0][0])}",
            f"{fmt_time(vals[-1])}; x{growth:.2f} over {fmt_size(single[0][0])}->{n}",
            "<= 10 us (aim 5 us), flat in N (<= 2x)", vals[-1] <= 10e-6 and growth <= 2.0, vals[-1] <= 5e-6))
    worst = max(last["mem"], last["moved"], last["streamed"])
    res.targets.append(Target(f"memory per object{size}", "nodes included: built / after moves / streamed in",
                              f"{last['mem']:.0f} / {last['moved']:.0f} / {last['streamed']:.0f} B",
                              "<= 100 B (issue 41: stays)", worst <= 100))


# ------------------------------------------------------------------- clusters


def _same_visits(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return False
        kx = np.lexsort(x.reshape(len(x), -1).T)
        ky = np.lexsort(y.reshape(len(y), -1).T)
        if not np.array_equal(x[kx], y[ky]):
            return False
    return True


def run_clusters(cfg: Config, structs: Structures, res: Results) -> None:
    """Remote clusters must not change the query near the path."""
    nf, nc = cfg.clusters
    wl = clusters(nf, nc, cfg.path_points)
    base = Workload(wl.name + "/forest", wl.centres[:nf], wl.radii[:nf], wl.path)
    a, b = tree_method(structs, base, "tree, forest only"), tree_method(structs, wl, "tree, forest + clusters")
    a.build(base.centres, base.radii)
    t_build_b = built(b, wl)
    ba, bb = BruteForce(), BruteForce()
    ba.build(base.centres, base.radii)
    bb.build(wl.centres, wl.radii)
    ea, _ = verify(base, [a, ba])
    eb, _ = verify(wl, [b, bb])
    if any(not np.array_equal(x, y) for x, y in zip(ea, eb)):
        raise RuntimeError("clusters workload: a clustered object is visible from the path")
    differ = sum(not _same_visits(a.visited(p), b.visited(p)) for p in wl.path)
    ta, tb = time_interleaved([a.query, b.query], wl.path, cfg.remote_repeats)
    qa, qb = time_points(ba.query, wl.path, cfg.peer_repeats), time_points(bb.query, wl.path, cfg.peer_repeats)
    change = MED(tb) / MED(ta) - 1.0
    paired = MED(tb / ta) - 1.0
    _, nodes = visited_nodes(a, base)
    t = Table(
        "clusters",
        "Remote clusters: many objects far away change nothing near the camera",
        f"The forest at {fmt_size(nf)} alone, then with {fmt_size(nc)} small objects (view distance 20-30) added in 16 "
        "dense clusters at least 1,500 units from the path along y, far beyond twice their view "
        "distance.  Tree queries of the two worlds are timed interleaved, point by point.",
        ["world", "objects", "tree query", "brute force", "nodes visited (median)"],
        [[f"forest {fmt_size(nf)}", fmt_count(nf), fmt_time(MED(ta)), fmt_time(MED(qa)), f"{MED(nodes):.0f}"],
         [f"forest {fmt_size(nf)} + clusters {fmt_size(nc)}", fmt_count(nf + nc), fmt_time(MED(tb)), fmt_time(MED(qb)),
          f"{MED(nodes):.0f}" if differ == 0 else "differs"]],
        plots=["remote_clusters.png"],
    )
    t.sentences.append(
        f"Adding {fmt_size(nc)} remote objects changes the tree's median query time by {100 * change:+.1f}% "
        f"(median per-point change {100 * paired:+.1f}%) while brute force slows down "
        f"{fmt_ratio(MED(qb) / MED(qa))}; the visited nodes differ at {differ} of {len(wl.path)} points."
    )
    t.sentences.append(f"Building the {fmt_count(nf + nc)}-object tree took {fmt_time(t_build_b)}.")
    res.tables.append(t)
    res.series["clusters"] = {"without": ta.tolist(), "with": tb.tolist(), "brute_without": qa.tolist(),
                              "brute_with": qb.tolist(), "labels": [f"forest {fmt_size(nf)}", f"+ {fmt_size(nc)} clustered"]}
    size = "" if nf >= 100_000 else " (preset size; the target is at 100k + 1M)"
    res.targets.append(Target(f"remote clusters ({fmt_size(nf)} + {fmt_size(nc)}){size}", f"{fmt_time(MED(ta))} -> {fmt_time(MED(tb))}; "
                              f"visits differ at {differ}/{len(wl.path)} points", f"{100 * change:+.1f}%",
                              "< 5% change, identical visited nodes", abs(change) < 0.05 and differ == 0))


# ------------------------------------------------------------------ colocated


def _warm_colocated(structs: Structures) -> None:
    """Every call the colocated section times, once on a few objects, untimed: each is timed once per
    size (a removal cannot be repeated), so the first size would otherwise pay for loading its kernels
    (``remove_many`` of 10k read 3.96 ms, of 100k 2.11 ms)."""
    wl = colocated(64)
    m = tree_method(structs, wl)
    s = m.factory()
    hs = [s.insert(wl.centres[i], float(wl.radii[i])) for i in range(len(wl.radii))]
    for p in wl.path[:2]:
        s.query(p, exact=True)
    for h in hs:
        s.remove(h)
    s.remove_many(s.insert_many(wl.centres, wl.radii))


def run_colocated(cfg: Config, structs: Structures, res: Results) -> None:
    """100k objects at one centre: insert, query and remove stay linear."""
    t = Table(
        "colocated",
        "Colocated: objects at exactly the same centre",
        "All objects share one centre and view distance (the case that degrades BVHs into chains). "
        "Inserted one by one and with `insert_many`, queried from inside (every object visible) and "
        "outside (none), then removed one by one in random order.",
        ["N", "insert() all", "insert_many", "query inside", "query outside", "remove() all", "remove_many"],
    )
    per: dict[str, list[float]] = {"insert()": [], "insert_many": [], "query inside": [], "remove()": [], "remove_many": []}
    rng = np.random.default_rng(21)
    _warm_colocated(structs)
    for n in cfg.colocated_sizes:
        wl = colocated(n)
        m = tree_method(structs, wl)
        s = m.structure = m.factory()
        args = [(wl.centres[i], float(wl.radii[i])) for i in range(n)]
        with no_gc():
            t_ins, hs = timed_loop(s.insert, args)
        m.handles = np.asarray(hs, dtype=np.int64)
        m.index_of = np.full(int(m.handles.max()) + 1, -1, dtype=np.int64)
        m.index_of[m.handles] = np.arange(n)
        verify(wl, [m])
        times = time_points(m.query, wl.path, cfg.repeats)
        inside, outside = MED(times[0::2]), MED(times[1::2])
        order = rng.permutation(m.handles)
        with no_gc():
            t_rem, _ = timed_loop(s.remove, [(int(h),) for h in order])
        if len(s) != 0:
            raise RuntimeError(f"colocated: {len(s)} objects left after removing all")
        t_many = built(m, wl, cfg.build_repeats)
        t_rmany = time_call(lambda: m.structure.remove_many(m.handles), 1, warmup=0)
        t.rows.append([fmt_size(n), fmt_time(t_ins), fmt_time(t_many), fmt_time(inside), fmt_time(outside),
                       fmt_time(t_rem), fmt_time(t_rmany)])
        for key, v in zip(per, (t_ins, t_many, inside, t_rem, t_rmany)):
            per[key].append(v / n)
    sizes = cfg.colocated_sizes
    growth = {k: v[-1] / v[0] for k, v in per.items()}
    t.sentences.append(
        f"From {fmt_size(sizes[0])} to {fmt_size(sizes[-1])} objects the cost per object changes by "
        + ", ".join(f"x{g:.2f} for {k}" for k, g in growth.items())
        + f" (a quadratic blow-up would show x{sizes[-1] / sizes[0]:.0f})."
    )
    t_rem_all = per["remove()"][-1] * sizes[-1]
    t.sentences.append(f"Removing all {fmt_size(sizes[-1])} co-located objects one by one takes {fmt_time(t_rem_all)}.")
    res.tables.append(t)
    size = "" if sizes[-1] >= 100_000 else " (preset size; the target is at 100k)"
    res.targets.append(Target(f"colocated {fmt_size(sizes[-1])}: linear, remove all < 1 s{size}",
                              f"remove all {fmt_time(t_rem_all)}; worst growth: {max(growth, key=growth.get)}",
                              f"x{max(growth.values()):.2f} per object over {sizes[-1] // sizes[0]}x N",
                              "linear (<= 2x per object) and < 1 s",
                              t_rem_all < 1.0 and max(growth.values()) <= 2.0))


# --------------------------------------------------------------------- moving


def run_moving(cfg: Config, structs: Structures, res: Results) -> None:
    """Every object moves by about 1% of its view distance every frame."""
    n = cfg.moving_n
    wl = moving(n, cfg.path_points)
    frames = moving_steps(wl, cfg.frames + 2)
    tree = tree_method(structs, wl)
    tree.build(wl.centres, wl.radii)
    frame_t = []
    with process_clock(), no_gc():  # update_many settles on the library's threads: their CPU counts too
        for c in frames:
            t0 = clock()
            tree.structure.update_many(tree.handles, c, wl.radii)
            frame_t.append(clock() - t0)
    t_tree = MED(frame_t[2:]) / n
    final = Workload(wl.name + "/final", frames[-1], wl.radii, wl.path)
    verify(final, [tree])
    brute = BruteForce()
    brute.build(wl.centres, wl.radii)
    t_brute = time_call(lambda: brute.update(frames[-1]), 5) / n
    t_kd = time_call(lambda: rebuilt_kdtree(frames[-1]), 3) / n
    rt = RTreePeer()
    rt.build(wl.centres, wl.radii)
    t_rt_move = _rtree_sample(rt, wl, cfg.rtree_ops, frames[0])
    t_rt_bulk = time_call(lambda: RTreePeer().build(frames[-1], wl.radii), 1, warmup=0) / n
    t_upd, t_rem = single_ops(tree, final, cfg.single_ops)
    rows = [("tree update_many", t_tree), ("numpy brute force (store the arrays)", t_brute),
            ("scipy cKDTree rebuild", t_kd), ("rtree delete + insert", t_rt_move), ("rtree bulk rebuild", t_rt_bulk)]
    t = Table(
        "moving",
        f"Moving: {fmt_size(n)} objects move every frame",
        f"A forest of {fmt_size(n)} objects; every frame each moves along the ground by 1% of its view "
        f"distance in a random direction ({cfg.frames} frames after 2 warm-up frames).  Cost per "
        "object per frame; brute force only stores the arrays, the others rebuild or update an index.",
        ["method", "per object per frame", f"per frame of {fmt_size(n)}"],
        [[name, fmt_time(v), fmt_time(v * n)] for name, v in rows],
        plots=["update_cost.png"],
    )
    t.sentences.append(
        f"`update_many` moves the {fmt_size(n)} objects in {fmt_time(t_tree * n)} per frame, {t_tree * 1e9:.0f} ns per "
        f"object: {_vs(t_kd, t_tree, 'rebuilding a cKDTree')} and {_vs(t_rt_move, t_tree, 'moving boxes in rtree')}."
    )
    t.sentences.append(f"A single in-node `update()` takes {fmt_time(t_upd)} and a single `remove()` {fmt_time(t_rem)} at {fmt_size(n)}.")
    res.tables.append(t)
    res.series["moving"] = {"rows": [(name, v) for name, v in rows], "single": [("update()", t_upd), ("remove()", t_rem)],
                            "forest_single": res.series.get("forest", {}).get("single", [])}
    size = "" if n >= 100_000 else " (preset size; the target is at 100k)"
    res.targets.append(Target(f"update_many, {fmt_size(n)} moving{size}", f"{fmt_time(t_tree * n)} per frame",
                              f"{t_tree * 1e9:.1f} ns/object", "<= 100 ns per object per frame (aim 60 ns)",
                              t_tree <= 100e-9, t_tree <= 60e-9))


# -------------------------------------------------------------------- scaling


def run_scaling(cfg: Config, structs: Structures, res: Results) -> None:
    """Constant density near the camera: query time must not follow N."""
    sizes = list(cfg.sprawl_sizes)
    wls = [sprawl(sizes, n, cfg.path_points) for n in sizes]
    trees = [tree_method(structs, wl) for wl in wls]
    for m, wl in zip(trees, wls):
        m.build(wl.centres, wl.radii)
    rows, peer_t = [], {}
    outs = []
    for m, wl in zip(trees, wls):
        peers = [BruteForce(), KDTreePeer(), RTreePeer()]
        for p in peers:
            p.build(wl.centres, wl.radii)
        expected, _ = verify(wl, [m] + peers)
        outs.append(np.array([len(e) for e in expected]))
        for p in peers:
            peer_t.setdefault(p.name, []).append(float(MED(time_points(p.query, wl.path, cfg.peer_repeats))))
    if any(not np.array_equal(outs[0], o) for o in outs):
        raise RuntimeError("scaling workload: the output near the camera differs between sizes")
    times = time_interleaved([m.query for m in trees], wls[0].path, cfg.repeats)
    tt = [float(MED(x)) for x in times]
    for i, (n, m, wl) in enumerate(zip(sizes, trees, wls)):
        levels, nodes = visited_nodes(m, wl)
        extent = np.ptp(wl.centres[:, 0])
        rows.append([fmt_size(n), f"{extent:,.0f}", f"{MED(levels):.0f}", f"{MED(nodes):.0f}", fmt_count(MED(outs[i])),
                     fmt_time(tt[i]), *(fmt_time(peer_t[k][i]) for k in peer_t)])
    spread = max(tt) / min(tt)
    t = Table(
        "scaling",
        "Scaling: query time against N at constant density near the camera",
        "The forest's classes at constant density over a world that grows with N (nested discs: "
        "every size keeps the same objects near the camera and adds a ring farther out than the "
        "largest view distance), root sized for the largest world.  The output is identical at "
        "every N, so only N changes.  Tree queries of all sizes are timed interleaved.",
        ["N", "world width", "levels", "nodes", "returned", "tree", *peer_t.keys()],
        rows,
        plots=["query_vs_n.png"],
    )
    t.sentences.append(
        f"From {fmt_size(sizes[0])} to {fmt_size(sizes[-1])} objects the tree's query time stays within a factor "
        f"{spread:.2f} ({', '.join(fmt_time(x) for x in tt)}) while brute force grows "
        f"{fmt_ratio(peer_t['numpy brute force'][-1] / peer_t['numpy brute force'][0])}."
    )
    res.tables.append(t)
    res.series["scaling"] = {"n": sizes, "tree": tt, **peer_t}
    size = "" if sizes[-1] >= 1_000_000 else " (preset sizes; the target is over 10k..1M)"
    res.targets.append(Target(f"scaling {fmt_size(sizes[0])}..{fmt_size(sizes[-1])}, constant density{size}", ", ".join(fmt_time(x) for x in tt),
                              f"max/min {spread:.2f}", "flat within 10% (<= 1.10)", spread <= 1.10))


# ---------------------------------------------------------------------- dense


def run_dense(cfg: Config, structs: Structures, res: Results) -> None:
    """The dense-array grid against the tree, on a dense and a sparse world."""
    t = Table(
        "dense",
        "Dense grid against the tree: dense and sparse worlds",
        "`DenseViewDistanceGrid` (fixed world of 8192 from the origin, `min_radius` 20, the smallest "
        "view distance) against the tree on the forest at a dense and a sparse N.  Memory: the larger of "
        "tracemalloc's count and the structure's own `nbytes()` (the grid maps its per-cell arrays outside "
        "NumPy's allocator, where tracemalloc does not see them; `nbytes()` counts them whole, pages touched "
        "or not); `update_many` is one frame of the moving workload.",
        ["world", "N", "structure", "build", "query", "update_many / object", "update()", "remove()", "memory / object"],
        plots=["dense_vs_tree.png"],
    )
    if structs.dense is None:
        t.sentences.append("Skipped: `culling.DenseViewDistanceGrid` is not importable in this checkout.")
        t.plots = []
        res.tables.append(t)
        return
    series = []
    for world, n in cfg.dense_worlds:
        wl = forest(n, cfg.path_points)
        tree = tree_method(structs, wl)
        grid = CullingMethod("dense grid", lambda: structs.dense(size=8192.0, origin=(0.0, 0.0, 0.0), dim=3,
                                                                  min_radius=MIN_VIEW))
        frames = moving_steps(wl, 3, seed=31)
        stats = {}
        for m in (tree, grid):
            b = built(m, wl, cfg.build_repeats)
            stats[m.name] = {"build": b, "mem": _memory(m, wl) / n}
        verify(wl, [tree, grid])
        qt, qg = time_interleaved([tree.query, grid.query], wl.path, cfg.repeats)
        stats[tree.name]["query"], stats[grid.name]["query"] = MED(qt), MED(qg)
        for m in (tree, grid):
            with process_clock():  # on the library's threads: their CPU counts too
                per = [time_call(lambda c=c: m.structure.update_many(m.handles, c, wl.radii), 1, warmup=0)
                       for c in frames]
            stats[m.name]["update_many"] = MED(per) / n
            final = Workload(wl.name, frames[-1], wl.radii, wl.path)
            stats[m.name]["update"], stats[m.name]["remove"] = single_ops(m, final, cfg.single_ops)
        for name, st in stats.items():
            t.rows.append([world, fmt_size(n), name, fmt_time(st["build"]), fmt_time(st["query"]),
                           fmt_time(st["update_many"]), fmt_time(st["update"]), fmt_time(st["remove"]),
                           f"{st['mem']:,.0f} B"])
        g, tr = stats[grid.name], stats[tree.name]
        t.sentences.append(
            f"{world} world ({fmt_size(n)}): the grid queries in {fmt_ratio(g['query'] / tr['query'])} the tree's time, "
            f"updates in {fmt_ratio(g['update_many'] / tr['update_many'])}, and needs "
            f"{fmt_ratio(g['mem'] / tr['mem'])} its memory per object ({g['mem']:,.0f} B against {tr['mem']:,.0f} B)."
        )
        series.append((world, n, stats))
    t.sentences.append(_dense_verdict(series))
    res.tables.append(t)
    res.series["dense"] = series


#: Figures within this factor of each other are even in :func:`_dense_verdict` (a shared machine's noise).
TIE = 1.05


def _dense_verdict(series: list) -> str:
    """One sentence on when each structure wins, from the measured figures."""
    labels = (("build", "build"), ("query", "query"), ("update_many", "update_many"), ("update", "update()"),
              ("remove", "remove()"), ("mem", "memory"))
    parts = []
    for world, n, stats in series:
        g, tr = stats["dense grid"], stats["tree (exact)"]
        grid = [label for k, label in labels if g[k] < tr[k] / TIE]
        tree = [label for k, label in labels if tr[k] < g[k] / TIE]
        even = [label for k, label in labels if label not in grid + tree]
        parts.append(f"on the {world} world ({fmt_size(n)}) the grid is ahead on {', '.join(grid) or 'nothing'} "
                     f"and the tree on {', '.join(tree) or 'nothing'}"
                     + (f"; the two are even (within {TIE - 1:.0%}) on {', '.join(even)}" if even else ""))
    return ("When each wins: " + "; ".join(parts) + ".  The grid pays for every cell of its fixed world up front, "
            "so it can only pay off in a bounded world densely filled with small objects; the tree's memory "
            "follows the objects, so it suits sparse or unbounded worlds.")
