"""The benchmark harness runs end to end at tiny sizes (no timing assertions).

Every section runs, every method's answer is checked against brute force (a
structure that drops one answer must fail the run), the report and plots are
written where asked and ``docs/`` is left alone, and the report records the
commit it measured.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from interrupts import interrupt_once, sigint_as_a_terminal_gives_it

pytest.importorskip("scipy")
pytest.importorskip("rtree")
pytest.importorskip("matplotlib")

from benchmarks import SECTION_NAMES, AgreementError, run  # noqa: E402
from benchmarks.suite import Structures, load_structures  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: One worker runs this module's tests (pyproject: --dist loadgroup), so the costly ``tiny`` run is made once.
pytestmark = pytest.mark.xdist_group("benchmarks_quick")

NAMED_TARGETS = ("exact query vs brute force", "query_many", "update_many", "insert_many build",
                    "memory per object", "remote clusters")


def _snapshot(folder: Path) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*")} if folder.exists() else {}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    before = _snapshot(DOCS)
    res = run(preset="tiny", out=out, verbose=False)
    return res, out, before


def test_every_section_reports(tiny):
    res, _, _ = tiny
    keys = {t.key for t in res.tables}
    assert set(SECTION_NAMES) <= keys
    for t in res.tables:
        if t.key == "jit":                 # skipped in the tiny preset, and says so
            assert t.sentences and "Skipped" in t.sentences[0]
            continue
        assert t.rows, t.key
        assert all(len(row) == len(t.columns) for row in t.rows), t.key


def test_many_query_sections_compare_every_method(tiny):
    res, _, _ = tiny
    tables = {t.key: t for t in res.tables}
    methods = {row[1] for row in tables["interest"].rows}
    assert methods == {"tree query_many", "numpy brute force", "scipy cKDTree inverted", "scipy cKDTree per radius class",
                       "rtree intersection_v"}
    for case in {row[0] for row in tables["interest"].rows}:
        pairs = {row[5] for row in tables["interest"].rows if row[0] == case}
        assert len(pairs) == 1                     # every method found the same pairs
    assert {row[1] for row in tables["sparse-many"].rows} == {"tree query_many", "scipy cKDTree inverted",
                                                              "rtree intersection_v"}
    assert any(row[0].endswith("radii x2") for row in tables["interest"].rows)   # the heavier variant
    assert {row[1] for row in tables["collision-probes"].rows} == {
        "tree: overlapping_many", "scipy cKDTree inverted (entities ask)",
        "scipy cKDTree per radius class (probes ask)", "scipy cKDTree sparse_distance_matrix"}
    assert len({row[4] for row in tables["collision-probes"].rows}) == 1          # the same hits
    collision = tables["collision"].rows
    assert {row[1] for row in collision} == {"tree: update_many + overlapping_pairs", "scipy cKDTree query_pairs",
                                            "numpy uniform hash grid"}
    assert {row[1] for row in tables["collision-heavy"].rows} == {"tree: update_many + overlapping_pairs",
                                                                  "scipy cKDTree split by radius class"}
    for n in {row[0] for row in collision}:
        assert len({row[5] for row in collision if row[0] == n}) == 1
    assert int(collision[-1][5].replace(",", "")) > 0   # the workload has contacts to find
    mixed = tables["collision-mixed"].rows          # radii 10:1 and 100:1: the peers sized by the largest, and split
    assert {row[1] for row in mixed} == {row[1] for row in collision} | {"scipy cKDTree split by radius class"}
    assert len({row[0] for row in mixed}) == 2
    for case in {row[0] for row in mixed}:
        assert len({row[5] for row in mixed if row[0] == case}) == 1


def test_every_named_target_is_reported(tiny):
    res, _, _ = tiny
    names = [t.name for t in res.targets]
    for prefix in NAMED_TARGETS:
        assert any(n.startswith(prefix) for n in names), prefix
    limits = {t.name.split(" (")[0].split(",")[0]: t.limit for t in res.targets}
    assert limits["update_many"].startswith("<= 100 ns")
    assert limits["insert_many build at 1k"].startswith("<= 150 ms")
    assert limits["memory per object at 1k"] == "<= 100 B (issue 41: stays)"
    assert all(isinstance(t.passed, bool) for t in res.targets)


def test_report_and_plots_written_where_asked(tiny):
    res, out, before = tiny
    assert _snapshot(DOCS) == before
    text = (out / "PERFORMANCE.md").read_text()
    for heading in ("## Targets", "## Interest management", "## Collision broad phase", "## JIT start-up"):
        assert heading in text
    for table in res.tables:
        assert f"## {table.title}" in text, f"table {table.key!r} is missing from the report"
    for name in ("query_vs_n.png", "query_vs_output.png", "update_cost.png", "remote_clusters.png",
                 "interest.png", "collision.png"):
        assert (out / name).stat().st_size > 1000, name


def test_report_records_the_commit(tiny):
    res, _, _ = tiny
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    assert res.machine["commit"].split()[0] == head.stdout.strip()


def test_cli_writes_into_the_checkouts_docs():
    from benchmarks import cli

    assert cli.DOCS == DOCS


def _drop_every_third(handles, counts=None):
    """Lose answers 0, 3, 6, ...: (handles,) or (handles, counts) with counts kept consistent."""
    keep = np.arange(len(handles)) % 3 != 0
    if counts is None:
        return handles[keep]
    owner = np.repeat(np.arange(len(counts)), counts)
    return handles[keep], np.bincount(owner[keep], minlength=len(counts)).astype(counts.dtype)


def _dropping(cls, method):
    """A subclass of ``cls`` whose ``method`` loses a third of its answers."""

    def broken(self, *args, **kwargs):
        out = getattr(super(sub, self), method)(*args, **kwargs)
        return _drop_every_third(*out) if method == "query_many" else _drop_every_third(out)

    sub = type(f"Dropping{cls.__name__}", (cls,), {method: broken})
    return sub


@pytest.mark.parametrize(("section", "method"), [("forest", "query"), ("interest", "query_many")])
def test_a_wrong_answer_fails_the_run(section, method):
    real = load_structures()
    structs = Structures(_dropping(real.tree, method), real.dense, real.collision)
    with pytest.raises(AgreementError, match="disagrees"):
        run(preset="tiny", only=[section], structs=structs, verbose=False)


def test_a_missed_contact_fails_the_collision_run():
    """A broad phase that loses a third of its pairs is caught by the brute-force check."""
    real = load_structures()

    class LossyPairs(real.tree):
        def overlapping_pairs(self):
            first, second = super().overlapping_pairs()
            keep = np.arange(first.size) % 3 != 0
            return first[keep], second[keep]

    structs = Structures(LossyPairs, real.dense, real.collision)
    with pytest.raises(AgreementError, match="disagrees"):
        run(preset="tiny", only=["collision"], structs=structs, verbose=False)


def test_frameparts_times_the_collision_frame_part_by_part_and_alternates_a_constant():
    from benchmarks import frameparts
    from culling.tree import batch

    frame, spent = frameparts.parts(1500, 4)
    assert set(frame) == {"tree: update_many + overlapping_pairs", "scipy cKDTree query_pairs",
                          "numpy uniform hash grid"}
    assert {"update_many", "overlapping_pairs", "  settle", "    bucket and count"} <= set(spent)
    assert all(seconds >= 0.0 for seconds in spent.values())
    before = batch.PARALLEL_SETTLE_MIN
    assert set(frameparts.ab(1500, 4, "culling.tree.batch.PARALLEL_SETTLE_MIN", (1, 10**9))) == {1, 10**9}
    assert batch.PARALLEL_SETTLE_MIN == before  # put back
    assert batch.settle.__name__ == "settle" and not hasattr(batch.settle, "__wrapped__")  # parts unwrapped


def test_frameparts_counts_cpu_and_page_faults_on_each_workload():
    import time

    from benchmarks import frameparts

    for workload in ("heavy", "mixed10"):
        radii, steps = frameparts.frames_of(workload, 1500, 3)
        assert radii.shape == (1500,) and len(steps) == 3 and steps[0].shape == (1500, 3)
    frame, spent = frameparts.parts(1500, 3, alone=True, clock=time.thread_time, workload="heavy")
    assert set(frame) == {"tree: update_many + overlapping_pairs"}
    assert {"update_many", "overlapping_pairs", "  across bands: runs noted (cpu)", "  their pairs written"} <= set(spent)
    frame, spent = frameparts.parts(1500, 3, alone=True, clock=frameparts._faults)
    assert all(count >= 0.0 for count in spent.values())
    # between the peers the collision sections run: the heavy tail's single-reach peers would return
    # about every pair (at 100k, tens of GB in NumPy's hash grid), so it has the class-split one
    frame, _ = frameparts.parts(1500, 2, workload="heavy")
    assert set(frame) == {"tree: update_many + overlapping_pairs", "scipy cKDTree split by radius class"}
    assert set(frameparts.ab(1500, 2, "culling.tree.batch.PARALLEL_SETTLE_MIN", (1, 10**9), "mixed10")) == {1, 10**9}


def test_frameparts_versus_alternates_the_two_checkouts_and_reads_every_line(tmp_path):
    from pathlib import Path

    from benchmarks import frameparts

    other = tmp_path / "other"
    (other / "culling").mkdir(parents=True)
    here = Path(frameparts.__file__).resolve().parent.parent
    ran = []

    def run(root, argv):
        ran.append(root)
        a = root == here
        return (f"tree: update_many + overlapping_pairs        {1.5 if a else 2.5:8.3f} ms a frame (median of 3)\n"
                "the tree's frame, part by part (medians):\n"
                f"    settle                                   {0.25 if a else 0.5:8.3f} ms\n")

    found = frameparts.versus(str(other), 2, ["--n", "500"], run)
    assert ran == [here, other, other, here]  # A B, then B A
    assert found["tree: update_many + overlapping_pairs"] == ([1.5, 1.5], [2.5, 2.5])
    assert found["    settle"] == ([0.25, 0.25], [0.5, 0.5])
    assert frameparts._without(["--n", "9", "--versus", "x", "--rounds=4", "--cpu"],
                               {"--versus": 1, "--rounds": 1}) == ["--n", "9", "--cpu"]
    with pytest.raises(SystemExit):
        frameparts.versus(str(tmp_path), 1, [], run)  # not a checkout


def test_pool_layout_times_each_layout():
    from benchmarks import pool_layout

    times = pool_layout.compare(objects=2_000, repeats=3)
    assert set(times) == {"columns", "rows of 64 B", "rows of 40 B", "columns, rows in order"}
    assert all(seconds > 0.0 for seconds in times.values())
    # the sweep of the rows in order writes what the objects' order writes
    rng = np.random.default_rng(3)
    rows = rng.permutation(300)[:200].astype(np.int64)
    centres, radii = rng.random((200, 3)), rng.random(200)
    by_objects = rng.random((5, 300))
    by_rows = by_objects.copy()
    owner = np.full(300, -1, dtype=np.int64)
    owner[rows] = np.arange(200)
    backup, backup_by_row = np.empty((200, 4)), np.empty((4, 300))
    index = np.full(200, -1, dtype=np.int64)
    assert (pool_layout._settle_columns(rows, centres, radii, by_objects, backup)
            == pool_layout._settle_sweep(owner, index, np.arange(200), centres, radii, by_rows, backup_by_row))
    assert np.array_equal(by_objects, by_rows) and np.array_equal(backup, backup_by_row[:, rows].T)
    assert (index == -1).all()


def test_perf_map_names_the_loaded_kernels_by_their_python_names(tmp_path):
    from benchmarks import profiling
    from culling import ViewDistanceTree

    tree = ViewDistanceTree(size=64.0)
    tree.insert_many(np.full((3, 3), 8.0), np.ones(3))
    assert tree.query([8.0, 8.0, 8.0], exact=True).size == 3  # loads the exact query's kernels
    lines = profiling.write_perf_map(tmp_path / "perf.map").read_text().splitlines()
    names = {}
    for line in lines:
        start, size, name = line.split(" ", 2)
        assert int(start, 16) > 0 and 0 < int(size, 16) <= 1 << 20
        names[name] = int(start, 16)
    assert "culling.tree.walk.query" in names and "cpython.culling.tree.walk.query" in names
    starts = sorted(names.values())
    assert len(set(starts)) == len(starts)  # one name per address
    assert profiling._readable("_ZN7culling4core7members9keep_rowsB3v12B4xyzE") == "culling.core.members.keep_rows"
    assert profiling._readable("NRT_incref") == "NRT_incref"


def test_interest_ticks_compare_the_three_ways_and_agree(tiny):
    res, _, _ = tiny
    rows = {t.key: t for t in res.tables}["interest-ticks"].rows
    assert {row[1] for row in rows} == {"culling InterestManager", "scipy cKDTree + np.setdiff1d",
                                        "tree + MultiCameraTracker loop"}
    assert len({row[5] for row in rows}) == 1          # every method holds the same pairs
    assert any(t.name.startswith("interest tick with events") for t in res.targets)


@pytest.mark.parametrize("plant", ["a pair left that it did not hold", "a pair entered twice"])
def test_an_event_that_changes_nothing_fails_the_interest_ticks_run(monkeypatch, plant):
    """The manager's sets are rebuilt from its events and compared with the peer's; a set operation
    swallowed an event for a pair never held, or one reported twice.  Each event is now checked against
    the pairs held before it."""
    from benchmarks import interest_ticks

    real_tick = interest_ticks.Manager.tick

    def planted(self, s, t):
        eo, ev, lo, lv = real_tick(self, s, t)
        if t < 2:
            return eo, ev, lo, lv
        if plant == "a pair entered twice":
            rows = np.flatnonzero(np.diff(eo))                   # the viewers with something entered
            if not rows.size:
                return eo, ev, lo, lv
            row = int(rows[0])
            ev = np.insert(ev, eo[row], ev[eo[row]])
            eo = eo + (np.arange(eo.size) > row)
        else:
            last = self.ids.size - 1
            held = self.im.interest(self.ids[last])
            stranger = int(np.setdiff1d(np.arange(held.size + 1), held)[0])
            lv = np.append(lv, stranger)
            lo = lo.copy()
            lo[-1] += 1
        return eo, ev, lo, lv

    monkeypatch.setattr(interest_ticks.Manager, "tick", planted)
    with pytest.raises(AgreementError, match=plant):
        run(preset="tiny", only=["interest-ticks"], verbose=False)


@pytest.mark.parametrize("argv, says", [
    (["--n", "0"], "--n must be at least 2"),
    (["--frames", "0"], "--frames must be at least 1"),
    (["--frames", "1", "--ab", "culling.tree.batch.PARALLEL_SETTLE_MIN", "1", "2"], "at least 2 with --ab"),
    (["--ab", "no.such.module.X", "1", "2"], "cannot import no.such.module"),
    (["--ab", "PARALLEL_SETTLE_MIN", "1", "2"], "is not MODULE.NAME"),
    (["--ab", "culling.tree.batch.settle", "1", "2"], "is a function, not a constant"),
    (["--ab", "culling.tree.batch.PARALLEL_SETTLE_MIN", "abc", "2"], "must be Python literals (8000, 2.5, True, 'text'), got 'abc'"),
    (["--ab", "culling.tree.batch.PARALLEL_SETTLE_MIN", "1", "foo"], "must be Python literals (8000, 2.5, True, 'text'), got 'foo'"),
    (["--ab", "culling.tree.batch.PARALLEL_SETTLE_MIN", "5", "5"], "the two values are the same"),
    (["--ab", "culling.tree.batch.PARALLEL_SETTLE_MIN", "1", "2", "--faults"], "drop --faults"),
    (["--cpu", "--faults"], "not allowed with"),
    (["--versus", ".", "--rounds", "0"], "--rounds must be at least 1"),
])
def test_frameparts_answers_a_bad_option_in_one_usage_line_before_any_frame(argv, says, capsys):
    from benchmarks import frameparts

    with pytest.raises(SystemExit) as stopped:
        frameparts.main(argv)
    assert stopped.value.code == 2
    assert says in capsys.readouterr().err


def test_frameparts_ab_prints_each_value_with_its_own_frame_count(capsys):
    from benchmarks import frameparts

    assert frameparts.main(["--n", "500", "--frames", "3", "--alone", "--ab",
                            "culling.tree.batch.PARALLEL_SETTLE_MIN", "1", "2"]) == 0
    found = frameparts.figures(capsys.readouterr().out)
    assert set(found) == {f"culling.tree.batch.PARALLEL_SETTLE_MIN = {v}{cpu}" for v in (1, 2)
                          for cpu in ("", ", process CPU")}  # --versus reads both figures


def test_profiling_times_the_methods_themselves_and_refuses_bad_options(capsys):
    from benchmarks import profiling

    for name, (make, _) in profiling.CASES.items():
        funcs, _ = make(2_000, 1)
        found = profiling.profiled_functions(funcs)  # every name exists: AttributeError otherwise
        assert all(not hasattr(f, "__wrapped__") for f in found), name  # not the lock's wrapper
    with pytest.raises(AttributeError, match="has no _gone"):
        profiling.profiled_functions(["_gone"])
    for argv, says in ((["query", "--n", "0"], "--n must be at least"), (["--perf", "--repeat", "-3"], "--repeat"),
                       (["--perf", "phases"], "run it without --perf"), (["--perf", "--out", "x"], "drop --out")):
        with pytest.raises(SystemExit):
            profiling.main(argv)
        assert says in capsys.readouterr().err


@pytest.mark.parametrize("tool, argv, says", [
    ("pool_layout", ["--objects", "-5"], "--objects must be at least 1"),
    ("pool_layout", ["--repeats", "1"], "--repeats must be at least 2"),
    ("point_objects", ["--n", "-5"], "--n must be at least 8"),
    ("profiling", ["phases", "--out", "/proc/no/such"], "is not writable"),
    ("jitstart", ["--workers", "2"], "go with --compile"),
    ("jitstart", ["--shipped", "--compile"], "not allowed with"),
    ("jitstart", ["--shipped", "--warm", "1"], "--warm goes with neither --shipped nor --compile"),
    ("jitstart", ["--compile", "--warm", "2"], "--warm goes with neither --shipped nor --compile"),
])
def test_the_smaller_benchmark_tools_answer_a_bad_option_in_one_usage_line(tool, argv, says, capsys):
    import importlib

    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(f"benchmarks.{tool}").main(argv)
    assert stopped.value.code == 2 and says in capsys.readouterr().err


def test_the_benchmark_command_lists_each_sections_tables_and_runs_a_section_named_twice_once(monkeypatch, capsys):
    from benchmarks import cli
    from benchmarks.report import Results
    from benchmarks.suite import SECTION_TABLES

    assert tuple(SECTION_TABLES) == SECTION_NAMES
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at hyphens too
    assert all("".join(f"{name}: {SECTION_TABLES[name]}".split()) in shown for name in SECTION_NAMES)
    ran = []
    monkeypatch.setattr(cli, "run", lambda preset, out, only, **kw: ran.append(only) or Results(preset))
    assert cli.main(["--preset", "tiny", "--only", "moving", "--only", "moving"]) == 0
    assert ran == [["moving"]]


def test_the_benchmark_command_checks_its_out_folder_before_running(tmp_path, capsys):
    from benchmarks import cli

    a_file = tmp_path / "file"
    a_file.write_text("")
    for argv, says in ((["--preset", "tiny", "--only", "moving", "--out", str(cli.DOCS)], "would replace the full report"),
                       (["--quick", "--out", str(cli.DOCS)], "a quick run would replace"),
                       (["--preset", "tiny", "--out", str(a_file)], "is not a folder"),
                       (["--preset", "tiny", "--out", ""], "must name a folder, got an empty string")):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert says in capsys.readouterr().err


def test_each_benchmark_tool_names_the_extra_it_needs_in_one_line(monkeypatch, capsys):
    """Installed with the demo extra only, ``python -m benchmarks --only jit`` stopped with a
    ``ModuleNotFoundError: scipy`` traceback (a newcomer's run of the README's command)."""
    import importlib.util

    from benchmarks import cli, frameparts, profiling

    find_spec = importlib.util.find_spec
    absent = {"scipy", "rtree", "matplotlib", "pyinstrument", "line_profiler"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in absent else find_spec(name, *a))
    for main, argv, says in ((cli.main, ["--only", "jit"], 'needs scipy and rtree: pip install -e ".[bench]"'),
                             (frameparts.main, ["--n", "100"], 'needs scipy: pip install -e ".[bench]"'),
                             (profiling.main, ["query"], 'needs pyinstrument and line_profiler: pip install -e ".[profile]"')):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 1
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err and err.count("\n") == 1, err


def test_a_skipped_section_writes_its_sentence_under_no_empty_table(tiny):
    """The tiny preset skips the start-up section: its report had the table's header with no rows."""
    res, out, _ = tiny
    jit = next(t for t in res.tables if t.key == "jit")
    assert not jit.rows
    report = (out / "PERFORMANCE.md").read_text()
    section = report.split(f"## {jit.title}", 1)[1].split("\n## ", 1)[0]
    assert "Skipped in this preset" in section and "| start |" not in section


@pytest.mark.parametrize("n, label", [(200, "200"), (1_000, "1k"), (1_500, "1.5k"), (2_500, "2.5k"),
                                      (1_234, "1,234"), (20_000, "20k"), (250_000, "250k"), (1_000_000, "1M"),
                                      (1_500_000, "1.5M"), (2_000_000, "2M")])
def test_a_size_is_labelled_by_the_size_it_is(n, label):
    """The tiny preset's 1,500-creature swarm was labelled '1k' (sizes rounded down), against its plot."""
    from benchmarks.report import fmt_size

    assert fmt_size(n) == label


def test_a_build_is_timed_after_an_untimed_one():
    """cKDTree's first build paid ``import scipy.spatial`` (276 ms against 0.75 ms), and its figure was one run."""
    from benchmarks.suite import built
    from benchmarks.workloads import Workload

    class Counted:
        builds = 0

        def build(self, centres, radii):
            self.builds += 1

    method, wl = Counted(), Workload("w", np.zeros((3, 3)), np.ones(3), np.zeros((1, 3)))
    built(method, wl, repeats=3)
    assert method.builds == 4


def test_an_interrupted_report_leaves_the_one_before_whole(tiny, tmp_path, monkeypatch):
    """A Ctrl-C while the plots were written left a new PERFORMANCE.md naming plots that were missing (or an
    earlier run's): the files are written aside and moved in at the end, the report last."""
    from benchmarks import cli

    res, _, _ = tiny
    first = cli.write_report(res, tmp_path)
    assert [p.name for p in first][0] == "PERFORMANCE.md" and all(p.is_file() for p in first)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "write_markdown", interrupted)  # after every plot is written
    with pytest.raises(KeyboardInterrupt):
        cli.write_report(res, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no staging folder left either


def test_ctrl_c_ends_a_benchmark_run_in_one_line_and_leaves_the_report_before_it(tmp_path):
    out, log = tmp_path / "report", tmp_path / "stderr"
    out.mkdir()
    (out / "PERFORMANCE.md").write_text("an earlier run's report")
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "benchmarks", "--preset", "tiny", "--out", str(out)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                preexec_fn=sigint_as_a_terminal_gives_it)
        interrupt_once(proc, lambda: "running " in log.read_text())
    assert proc.returncode == 130
    assert log.read_text().splitlines()[-1] == "python -m benchmarks: error: interrupted"
    assert "Traceback" not in log.read_text()
    assert [p.name for p in out.iterdir()] == ["PERFORMANCE.md"]
    assert (out / "PERFORMANCE.md").read_text() == "an earlier run's report"


def test_compile_profile_refuses_an_unknown_kernel_group_in_one_line():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_profile.py"), "--groups", "tree,bogus"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("tools/compile_profile.py: error: unknown kernel group 'bogus'; the "
                                            "groups are tree, pairs, grid, interest, cubes")


@pytest.mark.parametrize("tool, flag", [("dense_vs_tree", "--objects"), ("frameparts", "--n"), ("point_objects", "--n"),
                                        ("pool_layout", "--objects"), ("profiling", "--n")])
def test_the_tools_take_a_count_as_their_help_prints_it(tool, flag, capsys):
    """Their help prints counts as ``10,000``; typed back, ``int`` refused it.  The count is read before
    ``--help`` ends the run: status 0, not a usage error."""
    import importlib

    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(f"benchmarks.{tool}").main([flag, "10,000", "--help"])
    assert stopped.value.code == 0, capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(f"benchmarks.{tool}").main([flag, "10,00", "--help"])
    assert stopped.value.code == 2 and "expected a whole number, got '10,00'" in capsys.readouterr().err
