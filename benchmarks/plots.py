"""PNG plots of a run (matplotlib, Agg backend): one function per figure.

Each takes the run's ``series`` and an output folder, and returns the path it
wrote, or None when the run did not include that benchmark.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.report import Results

COLOURS = {
    "tree (exact)": "C0",
    "tree (candidates)": "C9",
    "numpy brute force": "C3",
    "numpy brute force, one expression": "C5",
    "scipy cKDTree": "C2",
    "rtree": "C1",
    "tree": "C0",
}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out: Path, name: str) -> Path:
    path = out / name
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def query_vs_n(series: dict, out: Path) -> Path | None:
    """Median query time against N per method, log-log: forest and scaling."""
    forest, scaling = series.get("forest"), series.get("scaling")
    if not forest and not scaling:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    if forest:
        ax = axes[0]
        for name, ys in forest["methods"].items():
            ax.loglog(forest["n"], np.array(ys) * 1e6, "o-", label=name, color=COLOURS.get(name))
        ax.set(title="forest: fixed 4096 world (density grows with N)", xlabel="objects N", ylabel="median query time (us)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    if scaling:
        ax = axes[1]
        n = scaling["n"]
        for name in ("tree", "numpy brute force", "scipy cKDTree", "rtree"):
            if name in scaling:
                ax.loglog(n, np.array(scaling[name]) * 1e6, "o-", label=name, color=COLOURS.get(name))
        lo = min(scaling["tree"]) * 1e6
        ax.fill_between([n[0], n[-1]], lo, lo * 1.1, color="C0", alpha=0.15, label="tree min + 10%")
        ax.set(title="scaling: constant density near the camera", xlabel="objects N", ylabel="median query time (us)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    return _save(fig, out, "query_vs_n.png")


def query_vs_output(series: dict, out: Path) -> Path | None:
    """Tree exact query time per path point against its output size."""
    forest = series.get("forest")
    if not forest:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for k, (n, outs, times) in enumerate(forest["tree_points"]):
        ax.loglog(np.maximum(outs, 1), np.array(times) * 1e6, "o", ms=3, color=f"C{k}", label=f"tree exact, N={n:,}")
    for k, (n, outs, times) in enumerate(forest["gather_points"]):
        ax.loglog(np.maximum(outs, 1), np.array(times) * 1e6, "x", ms=3, color=f"C{k}", alpha=0.5,
                  label=f"gather floor, N={n:,}")
    ax.set(title="query time against output size (forest, per path point)", xlabel="objects returned",
           ylabel="time (us)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, out, "query_vs_output.png")


def update_cost(series: dict, out: Path) -> Path | None:
    """Moving: cost per object per frame by method; single ops against N."""
    moving = series.get("moving")
    if not moving:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    names = [r[0] for r in moving["rows"]]
    values = [r[1] * 1e9 for r in moving["rows"]]
    ax = axes[0]
    ax.barh(names, values, color=["C0", "C3", "C2", "C1", "C1"][: len(names)])
    ax.axvline(100, color="k", ls="--", lw=1, label="target 100 ns")
    ax.set_xscale("log")
    ax.set(title="moving objects: cost per object per frame", xlabel="ns per object")
    ax.legend(fontsize=8)
    ax.invert_yaxis()
    ax = axes[1]
    single = moving.get("forest_single") or []
    if single:
        n = [s[0] for s in single]
        ax.loglog(n, [s[1] * 1e6 for s in single], "o-", label="update() in node")
        ax.loglog(n, [s[2] * 1e6 for s in single], "s-", label="remove()")
        ax.axhline(10, color="k", ls="--", lw=1, label="target 10 us")
        ax.set(title="single operations against N (forest)", xlabel="objects N", ylabel="us per call")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    else:
        ax.bar([s[0] for s in moving["single"]], [s[1] * 1e6 for s in moving["single"]])
        ax.set(title="single operations", ylabel="us per call")
    return _save(fig, out, "update_cost.png")


def remote_clusters(series: dict, out: Path) -> Path | None:
    """Query time along the path with and without the remote clusters."""
    c = series.get("clusters")
    if not c:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = np.arange(len(c["without"]))
    ax.semilogy(x, np.array(c["without"]) * 1e6, "-", color="C0", label=f"tree, {c['labels'][0]}")
    ax.semilogy(x, np.array(c["with"]) * 1e6, "--", color="C4", label=f"tree, {c['labels'][0]} {c['labels'][1]}")
    ax.semilogy(x, np.array(c["brute_without"]) * 1e6, "-", color="C3", alpha=0.6, label=f"brute force, {c['labels'][0]}")
    ax.semilogy(x, np.array(c["brute_with"]) * 1e6, "--", color="C3", alpha=0.6,
                label=f"brute force, {c['labels'][0]} {c['labels'][1]}")
    ax.set(title="remote clusters: query time along the camera path", xlabel="path point", ylabel="time (us)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, out, "remote_clusters.png")


def dense_vs_tree(series: dict, out: Path) -> Path | None:
    """Dense grid against tree: build, query, update and memory per world."""
    d = series.get("dense")
    if not d:
        return None
    plt = _plt()
    panels = (("build", 1e3, "build (ms)"), ("query", 1e6, "exact query (us)"),
              ("update_many", 1e9, "update_many (ns / object)"), ("mem", 1.0, "memory (bytes / object)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 3.8))
    worlds = [f"{w} ({n:,})" for w, n, _ in d]
    names = list(d[0][2].keys())
    width = 0.8 / len(names)
    for ax, (key, scale, label) in zip(axes, panels):
        for k, name in enumerate(names):
            vals = [stats[name][key] * scale for _, _, stats in d]
            bars = ax.bar(np.arange(len(d)) + k * width, vals, width, label=name, color=f"C{k}")
            ax.bar_label(bars, fmt=lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.3g}", fontsize=7)
        ax.set_xticks(np.arange(len(d)) + width * (len(names) - 1) / 2, worlds)
        ax.set(title=label)
        ax.margins(y=0.25)  # room above the tallest bar for its label and the legend
        ax.legend(fontsize=8, loc="upper left")
    return _save(fig, out, "dense_vs_tree.png")


BATCH_COLOURS = {
    "tree query_many": "C0",
    "numpy brute force": "C3",
    "scipy cKDTree inverted": "C2",
    "scipy cKDTree per radius class": "C5",
    "rtree intersection_v": "C1",
    "tree: update_many + overlapping_pairs": "C0",
    "scipy cKDTree query_pairs": "C2",
    "numpy uniform hash grid": "C4",
}


def interest(series: dict, out: Path) -> Path | None:
    """Interest management: tick time per method, the small case and against N."""
    cases = series.get("interest")
    if not cases:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    small, large = cases[0], cases[1:]
    ax = axes[0]
    names = list(small["tick"])
    values = [small["tick"][k] * 1e3 for k in names]
    bars = ax.barh(names, values, color=[BATCH_COLOURS.get(k, "C7") for k in names])
    ax.bar_label(bars, fmt="%.3g ms", fontsize=8)
    ax.set_xlim(0, max(values) * 1.25)
    ax.set(title=f"one tick: {small['label']}", xlabel="ms per tick (wall clock)")
    ax.invert_yaxis()
    ax = axes[1]
    if large:
        n = [c["n"] for c in large]
        for name in names:
            ax.loglog(n, [c["tick"][name] * 1e3 for c in large], "o-", label=name, color=BATCH_COLOURS.get(name))
        ax.axhline(25, color="k", ls="--", lw=1, label="aim: 25 ms tick")
        ax.set(title=f"{large[0]['m']:,} viewers: tick against entities", xlabel="entities N",
               ylabel="ms per tick (wall clock)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    return _save(fig, out, "interest.png")


def collision(series: dict, out: Path) -> Path | None:
    """Broad phase: time per frame against N for each method."""
    c = series.get("collision")
    if not c or not c["n"]:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name, ys in c["methods"].items():
        ax.loglog(c["n"], np.array(ys) * 1e3, "o-", label=name, color=BATCH_COLOURS.get(name))
    ax.set(title="collision broad phase: all touching pairs per frame", xlabel="moving creatures N",
           ylabel="ms per frame (wall clock)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, out, "collision.png")


FIGURES = (query_vs_n, query_vs_output, update_cost, remote_clusters, dense_vs_tree, interest, collision)


def write_plots(res: Results, out: Path) -> list[Path]:
    """Write every figure the run has data for into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with np.errstate(all="ignore"):  # matplotlib's own arithmetic, not ours
        return [p for f in FIGURES if (p := f(res.series, out)) is not None]
