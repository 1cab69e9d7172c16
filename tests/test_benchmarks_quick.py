"""The benchmark harness runs end to end at tiny sizes (no timing assertions).

It checks that every workload runs, every method agrees with brute force, the
report and plots are written, and that nothing in ``docs/`` is touched.
"""

from pathlib import Path

import pytest

pytest.importorskip("scipy")
pytest.importorskip("rtree")
pytest.importorskip("matplotlib")

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _snapshot(folder: Path) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*")} if folder.exists() else {}


def test_harness_runs_at_tiny_sizes(tmp_path):
    from benchmarks import SECTION_NAMES, run

    before = _snapshot(DOCS)
    res = run(preset="tiny", out=tmp_path, verbose=False)
    assert _snapshot(DOCS) == before
    keys = [t.key for t in res.tables]
    assert set(keys) >= {"forest", "forest_ops", "clusters", "colocated", "moving", "scaling", "dense"}
    assert set(SECTION_NAMES) <= set(keys), "a section the harness declares produced no table"
    assert len(keys) == len(set(keys))
    assert all(t.rows or t.key == "dense" for t in res.tables)
    assert len(res.targets) >= 12
    text = (tmp_path / "PERFORMANCE.md").read_text()
    assert "## Targets" in text and "commit:" in text
    for table in res.tables:
        assert f"## {table.title}" in text, f"table {table.key!r} is missing from the report"
    for name in ("query_vs_n.png", "query_vs_output.png", "update_cost.png", "remote_clusters.png"):
        assert (tmp_path / name).stat().st_size > 1000
