"""Where and how the engine's programs write their images.

A program that writes frames, screenshots or reports into a folder
(``run_demo.py``'s ``--out``, the examples' and the benchmarks') checks it
before it builds a scene or runs, so a read-only or mistyped folder costs one line on stderr, not a long wait and a
traceback; and it writes each file under a temporary name and renames it, so
a Ctrl-C or a full disk never leaves a truncated image under the real name.
A run of headless frames removes the frames an earlier, longer run left past
its last (:func:`stale_frames`).
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["FRAME_NAME", "folder_argument", "stale_frames", "unwritable_folder", "write_atomically"]

#: The name of a headless frame (``frame_0000.png``, ...): the demo's and the examples'.
FRAME_NAME = re.compile(r"frame_(\d{4,})\.png")


def stale_frames(out: Path, frames: int) -> list[Path]:
    """The frames an earlier run left in ``out`` past the last of a run of ``frames``: left there, a
    shorter run's folder read as a longer run's last frames."""
    return sorted(path for path in out.iterdir()
                  if (match := FRAME_NAME.fullmatch(path.name)) and int(match.group(1)) >= frames and path.is_file())


def folder_argument(text: str) -> Path:
    """``--out``'s type: a folder's name.  An empty one is refused (``Path("")`` is the current folder:
    files a run meant for a folder of their own would land among the user's)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder, got an empty string")
    return Path(text)


def unwritable_folder(folder: Path) -> str | None:
    """Why images cannot be written into ``folder`` (created if missing), or None if they can.

    Checked before the scene is built (a read-only ``--out`` costs no wait) by
    writing a probe file into the folder, or into its nearest existing
    parent when it does not exist yet.
    """
    target = folder
    try:  # Path.exists raises where the system refuses the name itself (ENAMETOOLONG: a traceback)
        while not target.exists() and target.absolute().parent != target.absolute():
            if target.is_symlink():  # a link to nowhere: mkdir would fail on it after the scene is built
                return f"--out {folder} is a broken link ({target} -> {os.readlink(target)})"
            target = target.absolute().parent
        is_folder = target.is_dir()
    except OSError as exc:
        return f"--out {folder} cannot be used: {exc.strerror or exc}"
    if not is_folder:
        return f"--out {folder} is not a folder ({target} is a file)" if target != folder \
            else f"--out {folder} is not a folder"
    try:
        with tempfile.TemporaryFile(dir=target):
            pass
    except OSError as exc:  # "(/proc): No such file or directory" read as if /proc were missing
        where = "there" if target == folder else f"in {target}"
        return f"--out {folder} is not writable: a file cannot be created {where} ({exc.strerror or exc})"
    return None


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Have ``write(tmp)`` write the file at a temporary path beside ``path``, then rename it to ``path``.

    The temporary name keeps ``path``'s suffix (image writers pick the format from it) and starts with a
    dot; whatever interrupts the write (Ctrl-C, an error) removes it, and ``path`` is either the old file
    or the whole new one, never a part.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
