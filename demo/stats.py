"""``--stats``: one CSV row per drawn frame, written and flushed as the frame ends.

The row holds the frame's stage timings and funnel counts (``FrameStats``)
and where the demo stood: scene, camera position and angles, mouse capture,
freeze, view scale, overlay, HUD mode, flying speed, framebuffer size and
the interest view (on or off, the followed player) and the object the X key
picked (its row in the scene's arrays; empty: none).  A
row is complete only after drawing (``draw_ms`` is real), is flushed at once
(a crash or Ctrl-C keeps every row written so far), and frame numbers never
repeat.  Tools (and the window tests) read the demo's state from it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from time import perf_counter
from typing import IO, Any

from engine.frame_stats import FrameStats

__all__ = ["STATE_FIELDS", "StatsWriter"]

#: The columns after ``frame`` and the ``FrameStats`` fields.
STATE_FIELDS = ("time_s", "scene", "x", "y", "z", "yaw", "pitch", "captured", "frozen", "scale", "overlay",
                "boxes", "loose", "level", "fade", "collide", "hud", "speed", "width", "height", "lod", "map",
                "zoom", "status", "interest", "followed", "inspected")


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4f}"
    text = "" if value is None else str(value)
    if any(c in text for c in ',"\n'):
        text = '"' + text.replace('"', '""').replace("\n", " ") + '"'
    return text


class StatsWriter:
    """CSV rows to stdout (``target`` ``"-"``) or to a file, one per frame.

    Parameters
    ----------
    target : str or Path
        ``"-"`` for standard output, else a file path (created, truncated).

    Raises
    ------
    ValueError
        The file cannot be opened (one line naming it and why).
    """

    def __init__(self, target: str | Path) -> None:
        self.path = None if str(target) == "-" else Path(target)
        try:
            self._stream: IO[str] = sys.stdout if self.path is None else open(self.path, "w", encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot write the --stats file {self.path}: {exc.strerror or exc}") from None
        self._start = perf_counter()
        self.rows = 0
        self._write(("frame",) + FrameStats.CSV_FIELDS + STATE_FIELDS)

    def _write(self, cells: Iterable[Any]) -> None:
        self._stream.write(",".join(_cell(c) for c in cells) + "\n")
        self._stream.flush()

    def write(self, frame: int, stats: FrameStats, state: dict[str, Any]) -> None:
        """Write frame ``frame``'s row; ``state`` maps :data:`STATE_FIELDS` (missing: empty)."""
        state = dict(state, time_s=perf_counter() - self._start)
        self._write((frame, *stats.csv_row(), *(state.get(name) for name in STATE_FIELDS)))
        self.rows += 1

    def close(self) -> None:
        if self.path is not None and not self._stream.closed:
            self._stream.close()
