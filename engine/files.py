"""Where the engine's programs write their images: checked before any work.

A program that writes frames or screenshots into a folder (``run_demo.py``'s
``--out``, the examples' ``--out``) checks it before it builds a scene, so a
read-only or mistyped folder costs one line on stderr, not a long wait and a
traceback.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["unwritable_folder"]


def unwritable_folder(folder: Path) -> str | None:
    """Why images cannot be written into ``folder`` (created if missing), or None if they can.

    Checked before the scene is built (a read-only ``--out`` costs no wait) by
    writing a probe file into the folder, or into its nearest existing
    parent when it does not exist yet.
    """
    target = folder
    while not target.exists() and target.absolute().parent != target.absolute():
        target = target.absolute().parent
    if not target.is_dir():
        return f"--out {folder} is not a folder ({target} is a file)" if target != folder \
            else f"--out {folder} is not a folder"
    try:
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as exc:
        where = "" if target == folder else f" ({target})"
        return f"--out {folder} is not writable{where}: {exc.strerror or exc}"
    return None
