"""Screenshots compared with stored references (rendered on Mesa llvmpipe).

Regenerate after an intended visual change with::

    UPDATE_SCREENSHOTS=1 python -m pytest tests/demo/test_screenshots.py

On a mismatch the actual image and a diff image (differences amplified, in
red) are written next to the test's temporary folder; the failure message
gives their paths.  HUD text is off here: it depends on the system's fonts.
"""

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from demo.headless import headless_pose

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
UPDATE = os.environ.get("UPDATE_SCREENSHOTS", "") not in ("", "0")
SIZE = (240, 135)
#: A pixel "differs" when a channel moves by more than this (llvmpipe versions
#: round differently at triangle edges); at most this share of pixels may differ.
CHANNEL_TOLERANCE = 24
MAX_DIFFERING_SHARE = 0.01

CASES = {
    # name: (scene, objects, path fraction, freeze_at)
    "forest": ("forest", 20_000, 0.35, None),
    "forest_frozen": ("forest", 20_000, 0.8, 0.5),
    "clusters": ("clusters", 30_000, 0.97, None),
    "swarm": ("swarm", 1_500, 0.25, None),
}


def _shoot(make_demo, render, scene, objects, u, freeze_at):
    demo = make_demo(scene, objects, size=SIZE, overlay=True, seed=1)
    pos, yaw, pitch, frozen = headless_pose(demo.scene, u, freeze_at)
    if frozen:
        demo.set_pose(*headless_pose(demo.scene, freeze_at, None)[:3])
        demo.toggle_freeze()
    demo.set_pose(pos, yaw, pitch)
    demo.update(0.0)
    return render(demo)


@pytest.mark.parametrize("name", list(CASES))
def test_screenshot_matches_reference(name, make_demo, render, tmp_path):
    actual = _shoot(make_demo, render, *CASES[name])
    ref_path = REFERENCE_DIR / f"{name}.png"
    if UPDATE or not ref_path.exists():
        if not UPDATE:
            pytest.fail(f"no reference {ref_path}; run with UPDATE_SCREENSHOTS=1 to create it")
        REFERENCE_DIR.mkdir(exist_ok=True)
        Image.fromarray(actual).save(ref_path)
        return
    expected = np.asarray(Image.open(ref_path).convert("RGB"))
    assert expected.shape == actual.shape
    diff = np.abs(actual.astype(np.int16) - expected.astype(np.int16)).max(axis=-1)
    share = float(np.count_nonzero(diff > CHANNEL_TOLERANCE)) / diff.size
    if share > MAX_DIFFERING_SHARE:
        Image.fromarray(actual).save(tmp_path / f"{name}-actual.png")
        vis = (expected // 3).astype(np.uint8)
        vis[diff > CHANNEL_TOLERANCE] = (255, 0, 0)
        Image.fromarray(vis).save(tmp_path / f"{name}-diff.png")
        pytest.fail(f"{name}: {share:.2%} of pixels differ by more than {CHANNEL_TOLERANCE} "
                    f"(allowed {MAX_DIFFERING_SHARE:.0%}); see {tmp_path / (name + '-diff.png')} "
                    f"and {tmp_path / (name + '-actual.png')}")
