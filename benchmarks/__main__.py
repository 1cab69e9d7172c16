"""``python -m benchmarks``: see :func:`benchmarks.cli.main`."""

from benchmarks.cli import main
from benchmarks.command import exit_with

exit_with(main, "python -m benchmarks")
