"""Results as tables and targets; printed to the terminal and written as
``docs/PERFORMANCE.md`` with the machine, the date and the commit."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Table:
    """One result table: a title, rows of cells, a sentence per result."""

    key: str
    title: str
    intro: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)


@dataclass
class Target:
    """One target of the issue, measured as a ratio (or a bound) in this run."""

    name: str
    figure: str
    measured: str
    limit: str
    passed: bool
    aim_met: bool | None = None

    def __post_init__(self) -> None:
        # Comparisons of NumPy scalars give np.bool_; the report wants plain bools.
        self.passed = bool(self.passed)
        self.aim_met = None if self.aim_met is None else bool(self.aim_met)


@dataclass
class Results:
    """Everything one run produced: tables, targets and plot series."""

    preset: str
    tables: list[Table] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    series: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    machine: dict = field(default_factory=dict)


def fmt_time(seconds: float) -> str:
    """A duration with a unit that keeps 3 significant digits: '12.3 us'."""
    if not np.isfinite(seconds):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            v = seconds / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{seconds} s"


def fmt_ratio(r: float) -> str:
    if not np.isfinite(r):
        return "n/a"
    return f"{r:.3g}x" if r < 100 else f"{r:.0f}x"


def fmt_speed(ratio: float) -> str:
    """'12x faster' or '1.5x slower' for a ratio of another method's time to this one's."""
    return f"{fmt_ratio(ratio)} faster" if ratio >= 1 else f"{fmt_ratio(1 / ratio)} slower"


def fmt_count(n: float) -> str:
    return f"{n:,.0f}"


def fmt_size(n: int) -> str:
    """A workload's size as its rows name it: '10k', '1M', '1.5k'; '1,234' where no short form is exact
    (a label must not name another size than the one measured and plotted)."""
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if n >= scale and (n * 10) % scale == 0:
            return f"{n / scale:g}{unit}"
    return f"{n:,}"


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info() -> dict:
    """CPU, cores, OS, Python and library versions, date and git commit."""
    import numpy
    import scipy

    try:
        import rtree

        rtree_v = rtree.__version__
    except ImportError:
        rtree_v = "missing"
    try:
        import numba

        numba_v = numba.__version__
    except ImportError:
        numba_v = "missing"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    root = Path(__file__).resolve().parent.parent
    commit = _run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"]) or "unknown (not a git checkout)"
    dirty = _run(["git", "-C", str(root), "status", "--porcelain"])
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    return {
        "load": load,
        "cpu": cpu,
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": f"numpy {numpy.__version__}, numba {numba_v}, scipy {scipy.__version__}, rtree {rtree_v}",
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
    }


def _text_table(columns: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    line = "  ".join(str(c).ljust(w) for c, w in zip(columns, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _md_table(columns: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(str(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def _target_rows(targets: list[Target]) -> list[list[str]]:
    rows = []
    for t in targets:
        verdict = "PASS" if t.passed else "FAIL"
        if t.passed and t.aim_met is not None:
            verdict += " (aim met)" if t.aim_met else " (aim not met)"
        rows.append([t.name, t.figure, t.measured, t.limit, verdict])
    return rows


CLOCK_TEXT = {
    "cpu": "Times are the benchmark thread's CPU time (`time.thread_time`), so other\n"
    "processes sharing the cores do not stretch them (`--clock wall` measures wall\n"
    "time instead); single queries run single-threaded.",
    "wall": "Times are wall-clock time (`time.perf_counter`), run with `--clock wall`.",
}
MANY_TEXT = ("The many-query sections (interest management, collision broad phase, JIT\n"
             "start-up) always measure wall-clock time: `query_many` and cKDTree's\n"
             "`workers=-1` use every core, which one thread's CPU time would not see.\n"
             "The forest table's `query_many` row and the moving and dense tables'\n"
             "`update_many` rows count the process's CPU time (every thread's), CPU time\n"
             "as the single calls beside them are.")

TARGET_COLUMNS = ["target", "figures", "measured", "required", "result"]


def to_text(res: Results) -> str:
    """The whole report as plain text tables, for the terminal."""
    parts = []
    for table in res.tables:
        parts.append(f"\n== {table.title} ==")
        if table.rows:  # a section this preset skips says so in its sentence, under no empty table
            parts.append(_text_table(table.columns, table.rows))
        parts += [f"  - {s}" for s in table.sentences]
    if res.targets:
        parts.append("\n== Targets ==")
        parts.append(_text_table(TARGET_COLUMNS, _target_rows(res.targets)))
        failed = sum(not t.passed for t in res.targets)
        parts.append(f"{len(res.targets) - failed} of {len(res.targets)} targets pass.")
    parts += [f"note: {n}" for n in res.notes]
    parts.append(f"(preset {res.preset}; its sections took {res.elapsed_s:.0f} s)")
    return "\n".join(parts)


def to_markdown(res: Results) -> str:
    """The report as ``docs/PERFORMANCE.md``."""
    m = res.machine
    failed = sum(not t.passed for t in res.targets)
    lines = [
        "# Performance",
        "",
        "Generated by `python -m benchmarks` (do not edit by hand; rerun it; `--quick`",
        "for a check of about a minute on 2 cores once the kernels are compiled).  Profiles of the tree's hot paths:",
        "`python -m benchmarks.profiling [query|query_many|insert_many|update_many|single|colocated|phases]`",
        "(needs pyinstrument and line_profiler: the `profile` extra, `.venv/bin/pip install -e \".[profile]\"`;",
        "`phases`, the exact query's compiled steps timed one by one, needs neither).",
        "Inside the kernels, with Linux `perf` (each loaded kernel named in `/tmp/perf-<pid>.map`): run",
        "`python -m benchmarks.profiling --perf query_many --repeat 50` under `perf record -o perf.data --`,",
        "then `perf report -i perf.data --no-children --sort sym`.",
        "The collision frame part by part, interleaved with its peers as below:",
        "`python -m benchmarks.frameparts [--n N] [--ab MODULE.NAME A B]`.",
        "",
        "Every figure is a median (per query point over repeats, then over the camera",
        "path) and every target is a ratio or bound measured within this one run: a",
        "ratio's noise largely cancels, a bound's (milliseconds a frame or a tick) does",
        "not, and reads higher on a loaded machine.  The answers are checked: every",
        "query of the forest and the other point-query tables against the library's",
        "reference index (`culling.BruteForceIndex`, every object tested in exact",
        "arithmetic); the batch calls' answers against the NumPy scan's; each broad",
        "phase's last frame against the reference (all pairs, or a sample of the",
        "creatures and the methods against each other); the interest ticks' events add",
        "up to the peer's sets on every tick the peer ran.  A disagreement fails the run.",
        "",
        CLOCK_TEXT.get(m.get("clock", "cpu"), ""),
        MANY_TEXT,
        "",
        f"- machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('os')}; load average at the start "
        f"{m.get('load')} (1, 5, 15 min), at the end {m.get('load_end')}",
        f"- software: Python {m.get('python')}, {m.get('versions')}",
        f"- date: {m.get('date')}",
        f"- commit: {m.get('commit')}",
        f"- preset: {res.preset}; clock: {m.get('clock', 'cpu')}; its sections took {res.elapsed_s:.0f} s (the "
        "start and the plots apart)",
        "",
    ]
    if res.targets:
        lines += [
            "## Targets",
            "",
            f"{len(res.targets) - failed} of {len(res.targets)} targets pass on this machine.",
            "",
            _md_table(TARGET_COLUMNS, _target_rows(res.targets)),
            "",
        ]
    for table in res.tables:
        lines += [f"## {table.title}", "", table.intro, ""]
        if table.rows:
            lines += [_md_table(table.columns, table.rows), ""]
        lines += [f"- {s}" for s in table.sentences]
        lines.append("")
        lines += [f"![{p}]({p})" for p in table.plots]
        if table.plots:
            lines.append("")
    if res.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in res.notes] + [""]
    lines += design_measurements()
    return "\n".join(lines)


#: Hand-measured figures behind docs/DESIGN.md's choices, copied into every report.
DESIGN_MEASUREMENTS = Path(__file__).with_name("design_measurements.md")


def design_measurements() -> list[str]:
    """The lines of :data:`DESIGN_MEASUREMENTS`, each heading one level down (they sit under the report's title)."""
    return ["#" + line if line.startswith("#") else line for line in DESIGN_MEASUREMENTS.read_text().splitlines()] + [""]


def write_markdown(res: Results, out_dir: Path) -> Path:
    """Write ``PERFORMANCE.md`` into ``out_dir``; return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "PERFORMANCE.md"
    path.write_text(to_markdown(res))
    return path
