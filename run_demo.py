#!/usr/bin/env python3
"""View-distance culling demo: ``python run_demo.py`` (``--help`` for the flags).

Opens a window with a display; with none (or ``--headless``) renders
offscreen through EGL and writes PNG frames.  The application is the
``demo`` package (demo/cli.py: flags and errors); this file only calls it.
"""

import sys

if __name__ == "__main__":
    try:
        from demo.cli import main
    except ImportError as exc:  # a missing dependency: one line, not a traceback
        print(f"run_demo.py: error: {exc}; install the project first: pip install -e .", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:  # Ctrl-C while the modules load: as main() says it later
        print("run_demo.py: error: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(main())
