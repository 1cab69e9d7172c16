"""The many-query benchmarks: interest management, collision broad phase, JIT start.

Unlike the single-query sections these time wall-clock seconds
(``time.perf_counter``) whatever ``--clock`` says: the tree's ``query_many``
and cKDTree's ``workers=-1`` run on every core, and the benchmark thread's
CPU time would miss the other threads' work.  Methods are timed interleaved
(rotating order), each figure the median of the repeats.
"""

from __future__ import annotations

import os

import numpy as np

from benchmarks.batchpeers import BruteForceBatch, KDTreeClasses, KDTreeInverted, RTreeBatch, TreeBatch, check_batch
from benchmarks.broadphase import (
    MIXED_LARGEST,
    KDTreeProbesClasses,
    KDTreeProbesInverted,
    KDTreeProbesSparse,
    TreePairs,
    TreeProbes,
    brute_pairs,
    brute_partners,
    brute_probes,
    check_pairs,
    heavy_frames,
    mixed_frames,
    pair_keys,
    peers_of,
    probe_keys,
)
from benchmarks.jitstart import GROUPS, NUMBA_FIXED, checkout_shipped_cold, cold_and_warm, compile_cost, shipped_cold
from benchmarks.peers import TIE_TOLERANCE, AgreementError
from benchmarks.report import Results, Table, Target, fmt_count, fmt_ratio, fmt_size, fmt_speed, fmt_time
from benchmarks.suite import Config, Structures
from benchmarks.timing import clock, no_gc, time_call, wall_clock
from benchmarks.workloads import (
    HEAVY_REACH,
    SPARSE_RADII,
    SWARM_SPACING,
    Crowd,
    interest,
    interest_heavy,
    mmo,
    sparse_points,
    swarm_frames,
)

MED = np.median
PEERS = (BruteForceBatch.name, KDTreeInverted.name, KDTreeClasses.name, RTreeBatch.name)
#: Seconds: a peer whose checked call in the "points find little" case took longer is timed by that call
#: alone (rtree there takes tens of times the tree's time; its repeats were most of the section).
SLOW_CALL = 1.0


# ------------------------------------------------------------------ interest


#: Seconds of repeated ticks the interest cases' NumPy scan may take: below it the scan is timed
#: ``repeats`` times among the others (its median), above it once (its first tick, cold).
BRUTE_REPEAT_BUDGET = 3.0


def _interest_case(wl: Crowd, structs: Structures, repeats: int) -> dict:
    """Build every method, check each against brute force, time ``repeats`` ticks each, interleaved (the
    NumPy scan once only where its repeats would take more than :data:`BRUTE_REPEAT_BUDGET`): medians."""
    tree = TreeBatch(lambda: structs.tree(size=wl.world, origin=(0.0, 0.0, 0.0), dim=3))
    methods = [tree, BruteForceBatch(), KDTreeInverted(), KDTreeClasses(), RTreeBatch()]
    build = {m.name: time_call(lambda m=m: m.build(wl.centres, wl.radii), 1, warmup=0) for m in methods}
    brute = methods[1]
    with no_gc():
        t0 = clock()
        expected = brute.query_many(wl.viewers)
        t_brute = clock() - t0
    ties = 0
    for m in (tree, *methods[2:]):
        ties += check_batch(f"{m.name} on {wl.name}", expected, m.indices(m.query_many(wl.viewers)),
                            wl.centres, wl.radii, wl.viewers)
    ticks: dict[str, list[float]] = {m.name: [] for m in methods}
    timed = [tree, *methods[2:]]
    if t_brute * repeats < BRUTE_REPEAT_BUDGET:  # a scan cheap enough to repeat: timed warm, as the others
        timed.insert(1, brute)
    else:  # the large cases' scan takes seconds a tick: its first (cold) tick is its figure
        ticks[brute.name].append(t_brute)
    with no_gc():
        for rep in range(repeats):
            for k in range(len(timed)):
                m = timed[(k + rep) % len(timed)]
                t0 = clock()
                m.query_many(wl.viewers)
                ticks[m.name].append(clock() - t0)
    counts = expected[1]
    return {"build": build, "tick": {k: float(MED(v)) for k, v in ticks.items()}, "pairs": int(counts.sum()),
            "per_viewer": float(MED(counts)), "ties": ties}


def run_interest(cfg: Config, structs: Structures, res: Results) -> None:
    """Interest management: every viewer's entities each tick, one ``query_many``."""
    n_mobs, n_players = cfg.interest_small
    cases = [(f"{fmt_size(n_players)} players x {fmt_size(n_mobs)} mobs", mmo(n_mobs, n_players))]
    cases += [(f"{fmt_size(cfg.interest_viewers)} viewers x {fmt_size(n)} entities", interest(n, cfg.interest_viewers))
              for n in cfg.interest_sizes]
    largest = max(cfg.interest_sizes)
    heavy_label = f"{fmt_size(cfg.interest_viewers)} viewers x {fmt_size(largest)} entities, radii x{HEAVY_REACH:g}"
    cases.append((heavy_label, interest_heavy(largest, cfg.interest_viewers)))
    threads = os.cpu_count()
    t = Table(
        "interest",
        "Interest management: many viewers per tick",
        "Which entities does each player hear about?  A viewer sees an entity when it stands inside the "
        "entity's own radius (60% 10-25, 30% 25-60, 10% 60-150 units).  The small case is the one networking "
        f"libraries measure ({n_players} players among {fmt_count(n_mobs)} mobs on a 1000 x 1000 map); the "
        f"large ones put {fmt_count(cfg.interest_viewers)} viewers on the 4096 x 4096 world, half in 16 "
        "towns (where 10% of the entities crowd too) and half anywhere; the heavier variant doubles every "
        f"radius (about four times the entities per viewer).  One tick answers every viewer: "
        "`tree.query_many(viewers, exact=True)`, against one NumPy scan per viewer, a cKDTree over the "
        "viewers (rebuilt each tick) that each entity queries with its own radius on all cores "
        "(`workers=-1`), one cKDTree over the entities per octave of radii (built once, as the tree is) that "
        "every viewer queries at the octave's largest radius on all cores, then the exact filter, and one "
        "rtree `intersection_v` over the entities' boxes plus the exact filter.  "
        f"Wall-clock time on {threads} cores, medians of {cfg.interest_repeats} ticks (the NumPy scan's where "
        f"its repeats take under {BRUTE_REPEAT_BUDGET:g} s, else its one tick); every pair checked against "
        "brute force.",
        ["case", "method", "build", "tick (median)", "time / tree", "pairs", "per viewer (median)"],
        plots=["interest.png"],
    )
    series = []
    last = heavy = None
    with wall_clock():
        for label, wl in cases:
            r = _interest_case(wl, structs, cfg.interest_repeats)
            tree_t = r["tick"]["tree query_many"]
            for name, tick in r["tick"].items():
                build = r["build"][name] if name != KDTreeInverted.name else 0.0
                t.rows.append([label, name, fmt_time(build) if build else "(in the tick)", fmt_time(tick),
                               fmt_ratio(tick / tree_t), fmt_count(r["pairs"]), fmt_count(r["per_viewer"])])
            best = min(PEERS, key=lambda k: r["tick"][k])
            ratio = r["tick"][best] / tree_t
            t.sentences.append(
                f"{label}: the tree answers the tick in {fmt_time(tree_t)} ({fmt_count(r['pairs'])} pairs, "
                f"{fmt_time(tree_t / max(r['pairs'], 1))} per pair), {fmt_speed(ratio)} than the best peer "
                f"({best}, {fmt_time(r['tick'][best])})."
                + (f"  {r['ties']} surface ties (not disagreements)." if r["ties"] else "")
            )
            if label == heavy_label:  # not in the plot's line against N (the same N again)
                heavy = (label, wl, r, best, ratio)
            else:
                series.append({"label": label, "n": wl.n, "m": len(wl.viewers), **r})
                last = (label, wl, r, best, ratio)
    res.tables.append(t)
    res.series["interest"] = series
    if last is None:
        return
    label, wl, r, best, ratio = last
    tree_t = r["tick"]["tree query_many"]
    at_target = wl.n >= 1_000_000 and len(wl.viewers) >= 2000
    size = "" if at_target else " (preset size; the target is 2,000 x 1M)"
    res.targets.append(Target(
        f"query_many, {label}{size}",
        f"tree {fmt_time(tree_t)} per tick, best peer {best} {fmt_time(r['tick'][best])}",
        fmt_ratio(ratio), ">= 30x the best peer (aim: tick <= 25 ms)", ratio >= 30, tree_t <= 25e-3))
    if heavy is not None:
        label, wl, r, best, ratio = heavy
        tree_t = r["tick"]["tree query_many"]
        res.targets.append(Target(
            f"query_many, {label}{size}",
            f"tree {fmt_time(tree_t)} per tick ({fmt_count(r['per_viewer'])} entities per viewer, median), "
            f"best peer {best} {fmt_time(r['tick'][best])}", fmt_ratio(ratio), ">= 50x the best peer", ratio >= 50))
    _sparse_many(cfg, structs, res)


def _sparse_many(cfg: Config, structs: Structures, res: Results) -> None:
    """``query_many`` where points find little: the walks are the cost, not the answers."""
    n, m = cfg.sparse_many
    if not n:
        return
    wl = sparse_points(n, m)
    t = Table(
        "sparse-many",
        "query_many where points find little",
        f"{fmt_size(n)} spheres (radius {SPARSE_RADII[0]:g}-{SPARSE_RADII[1]:g}, uniform) and {fmt_size(m)} points, all "
        "uniform in a 4096-cube: a point lies in few spheres (at 200k x 1M in 0.0034 on average), so a batch costs its walks, not "
        "its answers.  `tree.query_many(points, exact=True)` (with so few spheres a point, answered from the "
        "spheres' side: each sphere asks a uniform grid over the points, `culling.tree.inverted`; the answers "
        "written back in the caller's order) "
        "against a cKDTree built over the points in the call that each sphere queries with its own radius "
        "on all cores (`query_ball_point(centres, radii, workers=-1)`, the pairs then grouped by point), and "
        "rtree `intersection_v` over the spheres' boxes plus the exact filter.  Median of "
        f"{cfg.interest_repeats} calls, methods interleaved, wall clock (a peer whose checked call took over "
        f"{SLOW_CALL:g} s: that call alone, the peer tens of times the tree); the tree's answers checked against "
        "NumPy brute force on a sample of points and against the cKDTree's on every point.",
        ["case", "method", "build", "per call (median)", "per point", "time / tree", "answers"],
    )
    tree = TreeBatch(lambda: structs.tree(size=wl.world, origin=(0.0, 0.0, 0.0), dim=3))
    methods = [tree, KDTreeInverted(), RTreeBatch()]
    build = {meth.name: time_call(lambda meth=meth: meth.build(wl.centres, wl.radii), 1, warmup=0)
             for meth in methods}
    sample = np.random.default_rng(15).choice(m, min(m, 500), replace=False)
    brute = BruteForceBatch()
    brute.build(wl.centres, wl.radii)
    expected = brute.query_many(wl.viewers[sample])
    handles, counts = tree.indices(tree.query_many(wl.viewers))
    starts = np.concatenate([[0], np.cumsum(counts)])
    mine = (np.concatenate([handles[starts[i]:starts[i + 1]] for i in sample]), counts[sample])
    check_batch(f"{tree.name} on {wl.name} (sample)", expected, mine, wl.centres, wl.radii, wl.viewers[sample])
    with wall_clock(), no_gc():  # the checked calls are timed too: a slow peer's is its one timed call
        t0 = clock()
        everything = methods[1].query_many(wl.viewers)
        checked = {methods[1].name: clock() - t0}
        for meth in (tree, methods[2]):
            t0 = clock()
            answer = meth.query_many(wl.viewers)
            checked[meth.name] = clock() - t0
            check_batch(f"{meth.name} on {wl.name}", everything, meth.indices(answer), wl.centres, wl.radii,
                        wl.viewers)
    slow = {name for name, t in checked.items() if t > SLOW_CALL and name != tree.name}
    times: dict[str, list[float]] = {name: [checked[name]] if name in slow else [] for name in checked}
    with wall_clock(), no_gc():
        for rep in range(cfg.interest_repeats):
            for k in range(len(methods)):
                meth = methods[(k + rep) % len(methods)]
                if meth.name in slow:
                    continue
                t0 = clock()
                meth.query_many(wl.viewers)
                times[meth.name].append(clock() - t0)
    med = {name: float(MED(v)) for name, v in times.items()}
    label = f"{fmt_size(m)} points x {fmt_size(n)} spheres"
    answers = int(everything[1].sum())
    for name, v in med.items():
        t.rows.append([label, name, fmt_time(build[name]) if name != KDTreeInverted.name else "(in the call)",
                       fmt_time(v), fmt_time(v / m), fmt_ratio(v / med[tree.name]), fmt_count(answers)])
    peer = KDTreeInverted.name
    ratio = med[peer] / med[tree.name]
    per_point = med[tree.name] / m
    t.sentences.append(f"{label}: {fmt_count(answers)} answers; the tree takes {fmt_time(med[tree.name])} "
                       f"({fmt_time(per_point)} per point), {fmt_speed(ratio)} than the inverted cKDTree "
                       f"({fmt_time(med[peer])}).")
    res.tables.append(t)
    at_target = m >= 1_000_000 and n >= 200_000
    size = "" if at_target else " (preset size; the target is 1M x 200k)"
    res.targets.append(Target(
        f"query_many where points find little, {label}{size}",
        f"tree {fmt_time(med[tree.name])} ({fmt_count(answers)} answers), {peer} {fmt_time(med[peer])}",
        f"{fmt_time(per_point)} per point, {fmt_ratio(ratio)}", "<= 1 us per point and >= 3x the inverted cKDTree",
        per_point <= 1e-6 and ratio >= 3))


# ----------------------------------------------------------------- collision


#: The collision table times each size over about this many creature-frames (at least
#: ``cfg.collision_frames`` frames, at most :data:`COLLISION_MAX_FRAMES`): a 10k swarm's frame
#: takes about a millisecond, and the median of six such frames moved by a third between runs
#: on this shared machine; sixty take a second.
COLLISION_CREATURE_FRAMES = 600_000
COLLISION_MAX_FRAMES = 100


def _n_frames(cfg: Config, n: int) -> int:
    """Frames timed for a swarm of ``n`` creatures (:data:`COLLISION_CREATURE_FRAMES`)."""
    return max(cfg.collision_frames, min(COLLISION_MAX_FRAMES, COLLISION_CREATURE_FRAMES // n))


def _frames(methods: list, radii: np.ndarray, frames: list[np.ndarray], size: float) -> tuple[dict, dict]:
    """Set every method up on the first frame, then run the others, methods interleaved (rotating order).

    Returns each method's frame times (wall clock) and its last frame's pair keys.
    """
    n = len(radii)
    for m in methods:
        m.setup(radii, frames[0], size)
    times: dict[str, list[float]] = {m.name: [] for m in methods}
    keys: dict[str, np.ndarray] = {}
    with no_gc():
        for f, c in enumerate(frames[1:]):
            outs = {}
            for k in range(len(methods)):
                m = methods[(k + f) % len(methods)]
                t0 = clock()
                outs[m.name] = m.frame(c)
                times[m.name].append(clock() - t0)
            keys = {m.name: pair_keys(*outs[m.name], n) for m in methods}  # in the methods' order: the tree's first
    return times, keys


def _check_frames(cfg: Config, keys: dict, final: np.ndarray, radii: np.ndarray, what: str) -> str:
    """Every method's last frame against brute force (all pairs, or a sample, and each method against the
    first, the tree, so that a disagreement names the method that differs); says how."""
    n = len(radii)
    if n <= cfg.collision_full_check:
        expected = pair_keys(*brute_pairs(final, radii), n)
        for name, got in keys.items():
            check_pairs(f"{name} {what}", expected, got, final, radii)
        return "all pairs"
    # about 2e8 distances at most: 1,000 creatures at 100k, 200 at 1M
    sample = np.random.default_rng(n).choice(n, min(cfg.collision_sample, max(20, 200_000_000 // n)), replace=False)
    expected = brute_partners(sample, final, radii)
    first = next(iter(keys.values()))  # the tree's
    for name, got in keys.items():
        i, j = got // n, got % n
        mine = got[np.isin(i, sample) | np.isin(j, sample)]
        check_pairs(f"{name} {what} (sample)", expected, mine, final, radii)
        check_pairs(f"{name} {what} (against the others)", first, got, final, radii)
    return f"{fmt_count(len(sample))} sampled creatures; methods agree on all pairs"


#: Frames of the 100k swarm the collision section times part by part (the frame-parts tool's own way).
FRAME_PARTS_FRAMES = 10


def frame_parts_sentence(n: int = 100_000, frames: int = FRAME_PARTS_FRAMES) -> str:
    """Where the ``n`` swarm's frame goes, measured now (:func:`benchmarks.frameparts.parts`, the frames
    interleaved with the peers as in the table): the collision table's last line."""
    from benchmarks.frameparts import parts

    frame, part = parts(n, frames)
    ms = {label.strip(): seconds * 1e3 for label, seconds in part.items()}

    def at(label: str) -> str:
        return f"{ms.get(label, 0.0):.2f}"

    whole = frame[TreePairs.name] * 1e3
    homes = "movers' homes"  # a part's label, as frameparts names it
    return (f"Where the {fmt_size(n)} frame goes (`python -m benchmarks.frameparts --n {n} --frames {frames}`, this run; "
            f"medians of {frames} frames interleaved with the peers): {whole:.1f} ms a frame, of which "
            f"`update_many` {at('update_many')} ms (settling the stayers {at('settle')}, the movers' homes "
            f"{at(homes)}, grouping them {at('group movers')}) and `overlapping_pairs` "
            f"{at('overlapping_pairs')} ms (the bucket grid {at('bucket grid')} ms, its copy "
            f"{at('copy (cpu)')} ms of CPU; the runs noted within bands {at('within bands: runs noted (cpu)')} ms "
            f"of CPU summed over the library's threads; their pairs written {at('their pairs written')} ms).  "
            f"Issue 41 asks for 40 ns a creature ({n * 40e-6:.2g} ms a frame): {whole / (n * 40e-6):.1f}x less than this.")


def _world(n: int, reach: float = 0.0) -> float:
    """The tree's root edge for a swarm of ``n`` whose spheres reach ``reach`` beyond the cube (the
    heavy tail's and mixed radii's twice their largest radius): a power of two holding it."""
    return float(2 ** np.ceil(np.log2(SWARM_SPACING * n ** (1 / 3) + reach + 1.0)))


def run_collision(cfg: Config, structs: Structures, res: Results) -> None:
    """Broad phase: all touching pairs of N moving creatures every frame; a heavy tail; many sphere probes."""
    def tree_of(size: float, origin: tuple[float, ...]) -> object:
        return structs.tree(size=size, origin=origin, dim=3)

    t = Table(
        "collision",
        "Collision broad phase: every touching pair, every frame",
        "N creatures with bounding spheres (radius 0.5-2.5) fly in a cube sized for constant density "
        f"(one creature per {SWARM_SPACING:g}^3), each moving up to a quarter of its radius per frame.  Each "
        "frame every method brings its index up to date and returns every touching pair "
        "(`|c_i - c_j| <= b_i + b_j`) once: the tree with `update_many` and `overlapping_pairs` (the tree "
        "joined with itself, exact); scipy's cKDTree rebuilt and `query_pairs` with twice the largest "
        "radius (scipy's fast build for a tree made every frame: `balanced_tree=False, compact_nodes=False`), "
        "then the exact filter; a uniform hash grid in NumPy (cell = twice the largest radius, 13 "
        "forward neighbours), then the exact filter.  Median of "
        f"{' / '.join(str(_n_frames(cfg, n)) for n in cfg.collision_sizes)} frames at N = "
        f"{' / '.join(fmt_size(n) for n in cfg.collision_sizes)} (at least {cfg.collision_frames}, and about "
        f"{COLLISION_CREATURE_FRAMES:,} creature-frames for the small swarms; the first frame a warm-up), wall-clock "
        "time, methods interleaved.",
        ["N", "method", "per frame (median)", "per creature", "time / tree", "pairs", "checked against brute force"],
        plots=["collision.png"],
    )
    series: dict = {"n": [], "methods": {}}
    med_by_n: dict[int, dict[str, float]] = {}
    with wall_clock():
        for n in cfg.collision_sizes:
            radii, frames = swarm_frames(n, _n_frames(cfg, n) + 2)
            methods = [TreePairs(tree_of), *peers_of("swarm")]
            times, keys = _frames(methods, radii, frames, _world(n))
            how = _check_frames(cfg, keys, frames[-1], radii, f"at N={n}")
            med = {name: float(MED(v[1:])) for name, v in times.items()}   # the first frame warms up
            med_by_n[n] = med
            tree_name = methods[0].name
            for name, v in med.items():
                t.rows.append([fmt_size(n), name, fmt_time(v), fmt_time(v / n), fmt_ratio(v / med[tree_name]),
                               fmt_count(len(keys[name])), how])
            best = min((k for k in med if k != tree_name), key=lambda k: med[k])
            t.sentences.append(
                f"N={fmt_size(n)}: {fmt_count(len(keys[tree_name]))} touching pairs; the tree takes "
                f"{fmt_time(med[tree_name])} per frame, {fmt_speed(med[best] / med[tree_name])} than the best "
                f"other method ({best}, {fmt_time(med[best])})."
            )
            series["n"].append(n)
            for name, v in med.items():
                series["methods"].setdefault(name, []).append(v)
    if 100_000 in cfg.collision_sizes:
        t.sentences.append(frame_parts_sentence())
    res.tables.append(t)
    res.series["collision"] = series
    tree_name = TreePairs.name
    for n, med in med_by_n.items():
        best = min((k for k in med if k != tree_name), key=lambda k: med[k])
        ratio = med[best] / med[tree_name]
        if n == 100_000:
            res.targets.append(Target(
                "collision 100k moving: update_many + overlapping_pairs vs best peer",
                f"tree {fmt_time(med[tree_name])} per frame, best peer {best} {fmt_time(med[best])}",
                fmt_ratio(ratio), ">= 3x faster (aim <= 4 ms a frame)", ratio >= 3, med[tree_name] <= 4e-3))
        if n == 10_000:
            res.targets.append(Target(
                "collision 10k moving: update_many + overlapping_pairs",
                f"tree {fmt_time(med[tree_name])} per frame, best peer {best} {fmt_time(med[best])}",
                fmt_time(med[tree_name]), "<= 1.5 ms a frame (aim 0.6 ms)", med[tree_name] <= 1.5e-3,
                med[tree_name] <= 0.6e-3))
    _heavy_tail(cfg, tree_of, res)
    _mixed(cfg, tree_of, res)
    _probes(cfg, tree_of, res)


def _heavy_tail(cfg: Config, tree_of: object, res: Results) -> None:
    """The swarm with 1% of the radii 20-50: the tree against cKDTree split by radius class."""
    n = cfg.collision_heavy
    if not n:
        return
    t = Table(
        "collision-heavy",
        "Collision broad phase with a heavy tail of radii",
        f"{fmt_size(n)} creatures as above, but 1% of them with a radius of 20-50 (each moving up to a quarter "
        "of its radius per frame).  One `query_pairs` at twice the largest radius would return about every "
        "pair, so the peer splits by radius class, each class with the reach it needs: a cKDTree of the "
        "small (radius <= 10) and one of the large, rebuilt every frame; `query_pairs` among the small at "
        "twice the largest small radius, `sparse_distance_matrix` of the large tree against the small tree "
        "at the largest large plus the largest small radius, `query_pairs` among the large at twice the "
        "largest large radius (each pair found once, nothing deduplicated), then the exact filter.  The "
        f"tree does as before: `update_many` + `overlapping_pairs`.  Median of {cfg.collision_frames} frames, "
        "wall clock.",
        ["N", "method", "per frame (median)", "time / tree", "pairs", "checked against brute force"],
    )
    with wall_clock():
        radii, frames = heavy_frames(n, cfg.collision_frames + 2)
        methods = [TreePairs(tree_of), *peers_of("heavy")]
        size = _world(n, 2.0 * float(radii.max()))
        times, keys = _frames(methods, radii, frames, size)
        how = _check_frames(cfg, keys, frames[-1], radii, f"heavy tail at N={n}")
    med = {name: float(MED(v[1:])) for name, v in times.items()}
    tree_name = methods[0].name
    for name, v in med.items():
        t.rows.append([fmt_size(n), name, fmt_time(v), fmt_ratio(v / med[tree_name]), fmt_count(len(keys[name])), how])
    peer = methods[1].name
    ratio = med[peer] / med[tree_name]
    t.sentences.append(f"N={fmt_size(n)} with a heavy tail: {fmt_count(len(keys[tree_name]))} touching pairs; the tree "
                       f"takes {fmt_time(med[tree_name])} per frame, {fmt_speed(ratio)} than the class-split cKDTree "
                       f"({fmt_time(med[peer])}).")
    res.tables.append(t)
    size = "" if n >= 100_000 else " (preset size; the target is at 100k)"
    res.targets.append(Target(
        f"collision heavy tail {fmt_size(n)} (1% radius 20-50) vs class-split cKDTree{size}",
        f"tree {fmt_time(med[tree_name])} per frame, {peer} {fmt_time(med[peer])}",
        fmt_ratio(ratio), ">= 10x faster (aim 20x)", ratio >= 10, ratio >= 20))


#: The ratios of largest to smallest radius of the mixed-radii rows (:func:`_mixed`).
MIXED_RATIOS = (10.0, 100.0)


def _mixed(cfg: Config, tree_of: object, res: Results) -> None:
    """The swarm with radii spread log-uniformly over 10:1 and 100:1: the tree against cKDTree
    ``query_pairs`` and the NumPy cell list, both sized by the largest radius, and the cKDTree split by
    radius class."""
    n = cfg.collision_heavy
    if not n:
        return
    t = Table(
        "collision-mixed",
        "Collision broad phase with mixed radii",
        f"{fmt_size(n)} creatures in the swarm's cube (one per {SWARM_SPACING:g}^3), radii log-uniform from "
        f"{MIXED_LARGEST:g} / ratio to {MIXED_LARGEST:g} (as many creatures in every octave of radii), each "
        "moving up to a quarter of its radius per frame.  The peers size their reach by the largest radius, "
        "as a cell list must (HOOMD-blue documents that cell lists break down beyond 2:1): cKDTree rebuilt "
        "and `query_pairs` at twice the largest radius, and the NumPy cell list (hash grid) with cells of "
        "twice the largest radius and 13 forward neighbours; and the careful way round it, cKDTree split at "
        f"half the largest radius ({MIXED_LARGEST / 2:g}) as the heavy tail's peer, each followed by the exact "
        "filter.  The tree: "
        f"`update_many` + `overlapping_pairs`.  Median of {cfg.collision_frames} frames, wall clock, methods "
        "interleaved.",
        ["radii", "method", "per frame (median)", "per creature", "time / tree", "pairs", "checked against brute force"],
    )
    with wall_clock():
        for ratio in MIXED_RATIOS:
            radii, frames = mixed_frames(n, cfg.collision_frames + 2, ratio)
            methods = [TreePairs(tree_of), *peers_of(f"mixed{ratio:g}")]
            size = _world(n, 2.0 * float(radii.max()))
            times, keys = _frames(methods, radii, frames, size)
            how = _check_frames(cfg, keys, frames[-1], radii, f"mixed radii {ratio:g}:1 at N={n}")
            med = {name: float(MED(v[1:])) for name, v in times.items()}
            tree_name = methods[0].name
            label = f"{fmt_size(n)}, {ratio:g}:1"
            for name, v in med.items():
                t.rows.append([label, name, fmt_time(v), fmt_time(v / n), fmt_ratio(v / med[tree_name]),
                               fmt_count(len(keys[name])), how])
            best = min((k for k in med if k != tree_name), key=lambda k: med[k])
            ratio_best = med[best] / med[tree_name]
            t.sentences.append(
                f"N={fmt_size(n)}, radii {ratio:g}:1: {fmt_count(len(keys[tree_name]))} touching pairs; the tree takes "
                f"{fmt_time(med[tree_name])} per frame, {fmt_speed(ratio_best)} than the best peer "
                f"({best}, {fmt_time(med[best])}).")
    res.tables.append(t)


def _probes(cfg: Config, tree_of: object, res: Results) -> None:
    """Many sphere probes with their own radii (5-50) over many entities with their own radii (10-150)."""
    m, n = cfg.collision_probes
    if not m:
        return
    wl = interest(n, m)
    rho = np.random.default_rng(12).uniform(5.0, 50.0, m)
    probes = wl.viewers
    t = Table(
        "collision-probes",
        "Sphere probes with their own radii",
        f"{fmt_count(m)} probe spheres (radius 5-50, the interest section's players) over {fmt_size(n)} entities "
        "(radius 10-150, the interest section's world): every (probe, entity) pair with `|c_e - p| <= r_e + "
        "rho_p`.  The tree answers with one `overlapping_many(probes, radii, exact=True)`; the SciPy peers "
        "are a cKDTree of the probes queried by every entity with its radius plus the largest probe radius "
        "(`query_ball_point`, all cores), one cKDTree of the entities per octave of radii (built once, not "
        "timed) queried by every probe at its radius plus the octave's largest (all cores), and "
        "`sparse_distance_matrix` between a tree of the probes and a tree of the entities (built once, not "
        "timed), each followed by the exact filter.  Median of "
        f"{cfg.interest_repeats} repeats, wall clock.",
        ["probes x entities", "method", "per batch (median)", "time / tree", "hits", "checked against brute force"],
    )
    methods = [TreeProbes(tree_of), KDTreeProbesInverted(), KDTreeProbesClasses(), KDTreeProbesSparse()]
    with wall_clock():
        for meth in methods:
            meth.build(wl.centres, wl.radii, wl.world)
        times: dict[str, list[float]] = {meth.name: [] for meth in methods}
        keys: dict[str, np.ndarray] = {}
        with no_gc():
            for r in range(cfg.interest_repeats + 1):
                for k in range(len(methods)):
                    meth = methods[(k + r) % len(methods)]
                    t0 = clock()
                    p, e = meth.probe(probes, rho)
                    times[meth.name].append(clock() - t0)
                    keys[meth.name] = probe_keys(p, e, n)
    sample = np.random.default_rng(13).choice(m, min(m, 40), replace=False)
    expected = brute_probes(sample, probes, rho, wl.centres, wl.radii)
    first = next(iter(keys.values()))
    for name, got in keys.items():
        mine = got[np.isin(got // n, sample)]
        _check_probe_keys(f"{name} (sample)", expected, mine, probes, rho, wl.centres, wl.radii)
        _check_probe_keys(f"{name} (against the others)", first, got, probes, rho, wl.centres, wl.radii)
    med = {name: float(MED(v[1:])) for name, v in times.items()}
    tree_name = methods[0].name
    how = f"{fmt_count(len(sample))} sampled probes; methods agree on all hits"
    for name, v in med.items():
        t.rows.append([f"{fmt_count(m)} x {fmt_size(n)}", name, fmt_time(v), fmt_ratio(v / med[tree_name]),
                       fmt_count(len(keys[name])), how])
    best = min((k for k in med if k != tree_name), key=lambda k: med[k])
    ratio = med[best] / med[tree_name]
    t.sentences.append(f"{fmt_count(m)} probes over {fmt_size(n)} entities: {fmt_count(len(keys[tree_name]))} hits; the tree "
                       f"takes {fmt_time(med[tree_name])}, {fmt_speed(ratio)} than the best SciPy peer ({best}, "
                       f"{fmt_time(med[best])}).")
    res.tables.append(t)
    size = "" if (m, n) >= (2000, 1_000_000) else " (preset size; the target is 2,000 x 1M)"
    res.targets.append(Target(
        f"{fmt_count(m)} sphere probes with own radii over {fmt_size(n)} entities vs the best SciPy peer{size}",
        f"tree {fmt_time(med[tree_name])}, {best} {fmt_time(med[best])}",
        fmt_ratio(ratio), ">= 3x faster", ratio >= 3))


def _check_probe_keys(what: str, expected: np.ndarray, got: np.ndarray, probes: np.ndarray, rho: np.ndarray,
                      centres: np.ndarray, radii: np.ndarray) -> None:
    """Compare sorted (probe, entity) keys; differences within rounding of touching are ties, not failures."""
    n = len(radii)
    if len(got) and (np.diff(got) == 0).any():
        raise AgreementError(f"{what}: a hit was reported twice")
    diff = np.concatenate([np.setdiff1d(expected, got, assume_unique=True),
                           np.setdiff1d(got, expected, assume_unique=True)])
    if not diff.size:
        return
    p, e = diff // n, diff % n
    d = centres[e] - probes[p]
    reach2 = (radii[e] + rho[p]) ** 2
    ties = np.abs((d * d).sum(axis=1) - reach2) <= TIE_TOLERANCE * np.maximum(reach2, 1.0)
    if not ties.all():
        raise AgreementError(f"{what} disagrees with brute force on {int((~ties).sum())} hits")


# ----------------------------------------------------------------------- jit

#: Column titles of the JIT table, one per step of :data:`benchmarks.jitstart.GROUPS`.
GROUP_TITLES = ("import numba", "import culling", "numba set-up", "build 20k", "first exact query", "query_many 2,000", "update_many",
                "remove_many", "grid build", "grid query")


def run_jit(cfg: Config, structs: Structures, res: Results) -> None:
    """Cold and warm start of the compiled kernels, in fresh processes."""
    t = Table(
        "jit",
        "JIT start-up: cold and warm",
        "A fresh Python process runs a program's whole first frame: imports numba and `culling`, lets numba "
        "set itself up as far as loading the library's cached kernels needs (its runtime; a compile first sets "
        "up the rest, its typing and lowering registries, inside its own step; timed apart from the library's "
        "kernels), builds a tree of "
        "20,000 objects, runs the first exact query, `query_many` of 2,000 points, `update_many` and "
        "`remove_many`, then builds a dense grid and queries it; each step first calls its own group of "
        "kernels, so cold it is that group's compile or load.  Cold: `NUMBA_CACHE_DIR` is a new empty folder: "
        "with nothing shipped every kernel compiles"
        + (", with the kernels shipped they load" if cfg.jit_cold else " (the full preset only); the rows here "
           "load the kernels shipped") + ".  Warm: "
        + ("the same folder again, as a program's second launch finds it" if cfg.jit_cold
           else "the environment's own numba cache, as a program's later launches find it")
        + f" ({_median_of(cfg.jit_warm_runs, 'launch') if cfg.jit_warm_runs > 0 else 'not run in this preset'}).  "
        "Wall-clock seconds, interpreter start-up and `import numpy` excluded.",
        ["start", *GROUP_TITLES, "total"],
    )
    if cfg.jit_warm_runs <= 0:
        t.sentences.append("Skipped in this preset: the start-up runs fresh processes, cold and warm (the cold ones "
                           "compile every kernel); the quick and full presets run it.")
        res.tables.append(t)
        return
    keys = (*GROUPS, "total")
    cold, warm_runs = cold_and_warm(cfg.jit_warm_runs, cfg.jit_cold)
    warm = {k: float(MED([w[k] for w in warm_runs])) for k in keys}
    numba = warm_runs[0].get("numba") or "not installed"
    shipped = shipped_cold() if cold is not None else None
    editable = checkout_shipped_cold()
    if cold is not None:
        t.rows.append(["cold (empty cache, nothing shipped: every kernel compiles)", *(fmt_time(cold[k]) for k in keys)])
    if shipped is not None:
        t.rows.append(["cold, installed wheel (kernels shipped, empty cache)", *(fmt_time(shipped[k]) for k in keys)])
    if editable is not None:
        t.rows.append(["cold, checkout after `pip install -e .` (kernels shipped, empty cache)",
                       *(fmt_time(editable[k]) for k in keys)])
    t.rows.append(["warm (cache present)", *(fmt_time(warm[k]) for k in keys)])
    first = ("import_numba", "import", "numba_setup", "build", "first_query")  # what a program waits for first
    warm_first = sum(warm[k] for k in first)
    warm_numba = sum(warm[k] for k in NUMBA_FIXED)
    if cold is not None:
        cold_first = sum(cold[k] for k in first)
        t.sentences.append(
            f"numba {numba}: a cold start answers its first exact query after {fmt_time(cold_first)} (import, "
            f"build and query) and has compiled the whole first frame after {fmt_time(cold['total'])}; a warm "
            f"start takes {fmt_time(warm_first)} and {fmt_time(warm['total'])}; `import culling` alone takes "
            f"{fmt_time(warm['import'])} warm (`culling.warm_up()` compiles it all ahead of use).  Of the warm "
            f"start, {fmt_time(warm_numba)} is numba's own (importing it and setting it up), which every "
            f"process that uses numba pays whatever it compiles; the library's part is "
            f"{fmt_time(warm['total'] - warm_numba)}."
        )
    if editable is not None:
        res.targets.append(Target("JIT cold start (fresh cache), from a checkout",
                                  f"whole first frame, numba {numba}, after `pip install -e .` shipped the kernels"
                                  + (" (compiling them all instead: the first row)" if cold is not None else ""),
                                  fmt_time(editable["total"]),
                                  "<= 6 s (aim: 3 s)", editable["total"] <= 6.0, editable["total"] <= 3.0))
    if shipped is not None:
        t.sentences.append(
            f"An installed wheel ships its kernels compiled (`culling.shipped`): on an empty cache its whole "
            f"first frame takes {fmt_time(shipped['total'])}, compiling nothing (the kernels shipped for this "
            "run by `python -m culling ship-kernels`, as the wheel's build does, untimed)."
        )
        res.targets.append(Target("JIT cold start (fresh cache), installed wheel",
                                  f"whole first frame, numba {numba}, the wheel's shipped kernels loaded",
                                  fmt_time(shipped["total"]), "<= 6 s (aim: 3 s)", shipped["total"] <= 6.0,
                                  shipped["total"] <= 3.0))
    else:
        t.sentences.append(
            f"numba {numba}: a warm start (the environment's numba cache) answers its first exact query after "
            f"{fmt_time(warm_first)} and the whole first frame after {fmt_time(warm['total'])}; the cold start "
            "that compiles every kernel runs only in the full preset."
        )
    res.tables.append(t)
    res.series["jit"] = {"cold": cold, "warm": warm}
    res.targets.append(Target("JIT warm start (cache present)",
                              f"whole first frame, {_median_of(len(warm_runs), 'fresh process')}; import + build + "
                              f"first exact query {fmt_time(warm_first)}; numba's own import and set-up "
                              f"{fmt_time(warm_numba)}", fmt_time(warm["total"]), "<= 0.3 s",
                              warm["total"] <= 0.3))
    if cfg.jit_cold:
        _compile_table(res)


def _median_of(n: int, what: str) -> str:
    """``'median of 3 fresh processes'``, or ``'one fresh process'``."""
    return f"median of {n} {what}es" if n > 1 else f"one {what}"


def _cpu_change(extra: float) -> str:
    """The workers' CPU against one process's, in words (either may be the larger on a noisy machine)."""
    if extra >= 0:
        return f"at {fmt_time(extra)} more CPU (each worker sets numba up and builds its own small structures)"
    return f"with {fmt_time(-extra)} less CPU (within the noise: each worker also sets numba up and builds its own small structures)"


def _compile_table(res: Results) -> None:
    """The compile itself: every kernel group cold, alone and all together, serial and in workers."""
    cores = os.cpu_count() or 1
    t = Table(
        "compile",
        "The kernels' compile, by kernel group",
        "`python -m culling warm-up` in a new empty numba cache with nothing shipped (`CULLING_SHIPPED_KERNELS=0`), "
        "as a checkout without `pip install -e .` or a wheel built with `CULLING_SHIP_KERNELS=0` meets it: each "
        "group alone (`--groups`, one process: what a program that calls only that group compiles, numba's "
        "own set-up included), then all of them in one process and in worker processes, one per core.  CPU "
        "seconds are the process's and its workers' (user + system); wall seconds depend on what else the "
        "machine runs.",
        ["what", "CPU", "wall"],
    )
    from culling import KERNEL_GROUPS

    rows = [(f"group {g} alone", compile_cost(g, 1)) for g in KERNEL_GROUPS]
    serial = compile_cost(None, 1)
    parallel = compile_cost(None, cores)
    rows += [("all groups, one process", serial), (f"all groups, {cores} worker processes", parallel)]
    for name, cost in rows:
        t.rows.append([name, fmt_time(cost["cpu"]), fmt_time(cost["wall"])])
    t.sentences.append(
        f"Workers cut the wall time of the whole compile from {fmt_time(serial['wall'])} to "
        f"{fmt_time(parallel['wall'])} on {cores} cores, {_cpu_change(parallel['cpu'] - serial['cpu'])}.  "
        "`pip install -e .` and the wheel's "
        "build run this compile once and ship the kernels, so neither a checkout nor an installed wheel "
        "compiles at run time (the rows above).")
    res.tables.append(t)
    res.targets.append(Target("compile every kernel (cold, nothing shipped)", "CPU seconds, one process",
                              fmt_time(serial["cpu"]), "<= 30 s", serial["cpu"] <= 30.0))
