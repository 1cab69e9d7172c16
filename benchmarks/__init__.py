"""Benchmarks of ``culling`` against its peers, run with ``python -m benchmarks``.

Workloads (:mod:`benchmarks.workloads`) are seeded; every method
(:mod:`benchmarks.peers`) runs in the same process on the same data and must
return the same exact set as NumPy brute force; targets are ratios measured in
one run (:mod:`benchmarks.sections`); results go to the terminal, to
``docs/PERFORMANCE.md`` (:mod:`benchmarks.report`) and to PNG plots
(:mod:`benchmarks.plots`).
"""

from benchmarks.cli import main, run
from benchmarks.peers import AgreementError
from benchmarks.suite import PRESETS, SECTION_NAMES, Config

__all__ = ["AgreementError", "Config", "PRESETS", "SECTION_NAMES", "main", "run"]
