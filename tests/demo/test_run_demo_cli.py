"""run_demo.py as a user runs it: headless frames, clean one-line errors."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import demo.cli as cli

ROOT = Path(__file__).resolve().parents[2]
RUN_DEMO = ROOT / "run_demo.py"


def run_demo(args, tmp_path, display=None, timeout=120, **extra_env):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    if display is not None:
        env["DISPLAY"] = display
    env.update(extra_env)
    return subprocess.run([sys.executable, str(RUN_DEMO), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _lines(text):
    """The message lines of stderr, less the warm-up's progress (printed where a kernel is not cached yet,
    e.g. after an edit of the package: it is not part of an error's one line)."""
    lines = [line for line in text.replace("\r", "\n").splitlines() if line.strip()]
    return [line for line in lines if not line.startswith(("compiling kernels", "  ["))]


def test_headless_writes_non_blank_frames(tmp_path, gl_ctx):
    out = tmp_path / "frames"
    proc = run_demo(["--headless", "--frames", "3", "--out", str(out), "--size", "160x90",
                     "--objects", "5000", "--stats", "--gif"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    pngs = sorted(out.glob("frame_*.png"))
    assert [p.name for p in pngs] == ["frame_0000.png", "frame_0001.png", "frame_0002.png"]
    for p in pngs:
        img = np.asarray(Image.open(p).convert("RGB"))
        assert img.shape == (90, 160, 3)
        assert img.std() > 10 and len(np.unique(img.reshape(-1, 3), axis=0)) > 30
    with Image.open(out / "demo.gif") as gif:
        assert gif.n_frames == 3
    csv_rows = _lines(proc.stdout)
    assert csv_rows[0].startswith("frame,query_ms,distance_ms,frustum_ms,upload_ms")
    assert len(csv_rows) == 4
    err = _lines(proc.stderr)
    assert len(err) == 1 and "ran headless" in err[0] and str(out) in err[0]


def test_a_shorter_run_leaves_no_frames_of_a_longer_one(tmp_path, gl_ctx):
    """The folder holds the last run's output: a 3-frame run after a 5-frame run with the animation
    removes frames 3 and 4 and the old demo.gif, and says so; a file of another name stays."""
    out = tmp_path / "frames"
    common = ["--headless", "--out", str(out), "--size", "64x36", "--objects", "1000"]
    assert run_demo([*common, "--frames", "5", "--gif"], tmp_path).returncode == 0
    (out / "notes.txt").write_text("mine")
    (out / "frame_12.png").write_text("not a frame of ours: four digits at least")
    proc = run_demo([*common, "--frames", "3"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["frame_0000.png", "frame_0001.png", "frame_0002.png",
                                                      "frame_12.png", "notes.txt"]
    err = _lines(proc.stderr)
    assert len(err) == 1 and "(3 files of an earlier run removed)" in err[0]


@pytest.mark.parametrize("args, fragment", [
    (["--bogus"], "unrecognized arguments"),
    (["--size", "12"], "size must look like"),
    (["--scene", "moon"], "invalid choice"),
    (["--objects", "-3"], "must be >= 0"),
    (["--frames", "0"], "must be >= 1"),
    (["--objects", "1,0,0"], "expected a whole number, got '1,0,0'"),   # a typo, not a hundred
    (["--seed", "1__0"], "expected a whole number, got '1__0'"),
    (["--freeze-at", "2"], "must be in [0, 1]"),
    (["--shape", "torus"], "invalid choice"),
    (["--gif", "--no-images", "--headless"], "--gif needs images"),
    (["--size", "-800x450"], "size sides must be 16..8192 pixels, got '-800x450'"),  # not "expected one argument"
    (["--inspect", "-1,10", "--headless"], "X, Y and FRAME must be >= 0, got '-1,10'"),
    (["--freeze-at", "-0.5"], "must be in [0, 1], got -0.5"),
    (["--no-hud", "--hud", "full"], "--no-hud and --hud full contradict each other"),
])
def test_bad_flags_give_one_line_and_non_zero_exit(args, fragment, tmp_path):
    proc = run_demo(args, tmp_path)
    assert proc.returncode == cli.EXIT_USAGE
    err = _lines(proc.stderr)
    assert len(err) == 1, proc.stderr
    assert fragment in err[0] and "Traceback" not in proc.stderr


@pytest.mark.parametrize("text, value", [("20000", 20_000), ("20_000", 20_000), ("20,000", 20_000),
                                         ("1,000,000", 1_000_000), (" 7 ", 7)])
def test_counts_are_read_as_a_person_writes_them(text, value):
    assert cli._count(text) == value


def test_no_display_falls_back_to_headless(tmp_path, gl_ctx):
    proc = run_demo(["--frames", "1", "--size", "64x36", "--objects", "1000", "--out", "o"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    err = _lines(proc.stderr)
    assert len(err) == 2 and "no display" in err[0] and "running headless" in err[0]
    assert (tmp_path / "o" / "frame_0000.png").exists()


def test_unusable_display_without_headless_is_one_line(tmp_path):
    proc = run_demo(["--objects", "1000"], tmp_path, display=":987654")
    assert proc.returncode == cli.EXIT_ERROR
    err = _lines(proc.stderr)
    assert len(err) == 1 and "--headless" in err[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag", ["--out", "--stats"])
def test_a_window_refuses_an_unwritable_out_or_stats_file_before_the_display_and_the_scene(flag, tmp_path):
    # A display that is not there: the file is refused first, so nothing waits for a scene to be built
    # only to say that P, or the first frame's row, cannot be written
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    proc = run_demo([flag, str(blocker / "inside" / ("x.csv" if flag == "--stats" else "")), "--objects", "1000"],
                    tmp_path, display=":987654")
    err = _lines(proc.stderr)
    assert len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "display" not in err[0] and "unexpected" not in err[0], err[0]
    assert (f"--out {blocker / 'inside'} is not a folder" if flag == "--out"
            else f"cannot write the --stats file {blocker / 'inside' / 'x.csv'}") in err[0], err[0]
    assert proc.returncode == cli.EXIT_ERROR


def test_a_thread_count_the_library_refuses_is_one_line(tmp_path):
    proc = run_demo(["--headless", "--frames", "1"], tmp_path, CULLING_THREADS="many")
    assert proc.returncode == cli.EXIT_ERROR
    err = _lines(proc.stderr)
    assert len(err) == 1 and "CULLING_THREADS must be a positive integer of at most 4,096, got 'many'" in err[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_unusable_gl_context_is_one_line(monkeypatch, capsys, tmp_path):
    import moderngl

    def broken(*args, **kwargs):
        raise Exception("eglInitialize failed (0x3001)")

    monkeypatch.setattr(moderngl, "create_standalone_context", broken)
    code = cli.main(["--headless", "--frames", "1", "--out", str(tmp_path / "o"), "--objects", "100"])
    err = _lines(capsys.readouterr().err)
    assert code == cli.EXIT_ERROR
    assert len(err) == 1 and "no usable OpenGL 3.3 context on EGL" in err[0] and "0x3001" in err[0]


def test_empty_scene_and_cube_shape_run(tmp_path, gl_ctx):
    for extra in (["--objects", "0"], ["--objects", "2000", "--shape", "cube", "--scene", "clusters"]):
        proc = run_demo(["--headless", "--frames", "2", "--size", "64x36", "--no-images", *extra], tmp_path)
        assert proc.returncode == 0, proc.stderr
