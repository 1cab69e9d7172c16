"""``python -m benchmarks``: see :func:`benchmarks.cli.main`."""

import sys

from benchmarks.cli import main

sys.exit(main())
