"""What a newcomer stumbled on, each fixed: flag errors, summaries, memory, files."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from interrupts import interrupt_once, sigint_as_a_terminal_gives_it
from PIL import Image

import demo.cli as cli
from demo.demo import DemoSettings
from demo.headless import HeadlessOptions, gif_palette, run_headless
from demo.interactive import cannot_save, next_free_path, save_image
from engine.overlay import LEVEL_COLOURS

ROOT = Path(__file__).resolve().parents[2]


def run_demo(args, cwd, display=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    if display is not None:
        env["DISPLAY"] = display
    return subprocess.run([sys.executable, str(ROOT / "run_demo.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _err_lines(proc):
    return [line for line in proc.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("args, fragment", [
    (["--seed", "-1"], "argument --seed: must be >= 0"),
    (["--out", ""], "argument --out: must name a folder"),
    (["--hud", "huge"], "argument --hud: invalid choice"),
    (["--inspect", "3"], "argument --inspect: expected a pixel as X,Y"),
    (["--inspect=-1,4"], "argument --inspect: X, Y and FRAME must be >= 0"),
    (["--inspect", "4,4@x"], "argument --inspect: expected a pixel as X,Y or X,Y@FRAME"),
    (["--inspect", "4,4@"], "argument --inspect: expected a pixel as X,Y or X,Y@FRAME"),      # was frame 0
    (["--inspect", "4,4@1_0"], "argument --inspect: expected a pixel as X,Y or X,Y@FRAME"),   # int() took it
    (["--inspect", "4,4@-1"], "argument --inspect: X, Y and FRAME must be >= 0"),
    (["--headless", "--frames", "5", "--inspect", "10,10@5"], "--inspect ...@5 is past the last frame (5 frames: 0 to 4)"),
    (["--headless", "--inspect", "960,10"], "--inspect 960,10 is outside the 960x540 frame"),
])
def test_odd_flags_name_the_flag_and_exit_2(args, fragment, tmp_path):
    proc = run_demo(args, tmp_path)
    assert proc.returncode == cli.EXIT_USAGE
    assert len(_err_lines(proc)) == 1 and fragment in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, named", [
    (["--frames", "5"], "--frames only applies"),
    (["--gif"], "--gif only applies"),
    (["--freeze-at", "0.5", "--no-images"], "--freeze-at, --no-images only apply"),
    (["--inspect", "10,10"], "--inspect only applies"),
])
def test_headless_only_flags_are_rejected_for_a_window(args, named, tmp_path):
    proc = run_demo(["--objects", "100", *args], tmp_path, display=":987654")
    assert proc.returncode == cli.EXIT_USAGE
    assert len(_err_lines(proc)) == 1 and named in proc.stderr and "--headless" in proc.stderr


def test_missing_display_is_named(tmp_path):
    proc = run_demo(["--objects", "100"], tmp_path, display=":987654")
    assert proc.returncode == cli.EXIT_ERROR
    assert "':987654'" in proc.stderr and "None" not in proc.stderr


def test_without_the_demo_extra_one_line_names_it(tmp_path):
    """As where only another extra is installed (the server's): the camera's pyrr cannot be imported.
    Before, the import's traceback."""
    script = ("import sys; sys.modules['pyrr'] = None; sys.argv[0] = 'run_demo.py'\n"
              "from demo.cli import main\nsys.exit(main(['--headless', '--frames', '1']))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    (line,) = _err_lines(proc)
    assert line.startswith("run_demo.py: error: ") and "pyrr" in line, proc.stderr
    assert line.endswith('; the demo needs its extra: pip install -e ".[demo]"'), proc.stderr


def test_a_ctrl_c_inside_an_extensions_import_says_interrupted_not_install_the_extra(tmp_path):
    """A SIGINT landing inside a C extension's import (numba's) comes out as that import's ImportError: the
    demo said "the demo needs its extra", exit 1.  Simulated as the extension behaves: the interrupt raised
    inside the import, the import failing with its own ImportError."""
    script = ("import signal, sys\n"
              "class Interrupting:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'demo.demo':\n"
              "            try:\n"
              "                signal.raise_signal(signal.SIGINT)\n"
              "            except KeyboardInterrupt:\n"
              "                raise ImportError('numba._devicearray failed to import') from None\n"
              "        return None\n"
              "sys.meta_path.insert(0, Interrupting()); sys.argv[0] = 'run_demo.py'\n"
              "from demo.cli import main\n"
              "code = main(['--headless', '--frames', '1'])\n"
              "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
              "sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert _err_lines(proc) == ["run_demo.py: error: interrupted"], proc.stderr


def test_objects_that_cannot_fit_are_refused_before_allocating(tmp_path):
    proc = run_demo(["--headless", "--objects", "10_000_000_000"], tmp_path)  # run_demo's timeout bounds a hang
    assert proc.returncode == cli.EXIT_ERROR  # the message below says it was the check before allocating, not a time
    (line,) = _err_lines(proc)
    assert "--objects 10,000,000,000 needs about" in line and "GB is available" in line


def test_memory_estimate_follows_the_measured_peak():
    # Measured peaks (RSS, 2M objects minus 10k): forest 340, clusters 330, swarm 590 bytes per object.
    assert cli.memory_estimate("forest", 2_000_000) - cli.memory_estimate("forest", 0) >= 340 * 2_000_000
    assert cli.memory_estimate("swarm", 1) > cli.memory_estimate("forest", 1)


def test_summary_says_one_frame_and_no_images_without_announcing_a_folder(tmp_path, gl_ctx):
    proc = run_demo(["--frames", "1", "--size", "64x36", "--objects", "500", "--no-images"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, second = _err_lines(proc)
    assert "running headless" in first and "images go to" not in first and "--no-images" in first
    assert "1 frame of forest" in second and "no images written" in second
    assert not (tmp_path / "out").exists()


def test_gif_has_one_palette_and_is_named(tmp_path, gl_ctx):
    out = tmp_path / "o"
    proc = run_demo(["--headless", "--frames", "4", "--size", "160x90", "--objects", "3000", "--gif",
                     "--out", str(out), "--hud", "full"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"animation in {out / 'demo.gif'}" in proc.stderr
    with Image.open(out / "demo.gif") as gif:
        palette = np.array(gif.getpalette()[:768]).reshape(-1, 3)
        colours = set()
        for i in range(gif.n_frames):
            gif.seek(i)
            colours |= {tuple(c) for c in np.asarray(gif.convert("RGB")).reshape(-1, 3).tolist()}
    # Every frame draws from the first frame's palette: one palette for the animation.
    assert colours <= {tuple(c) for c in palette.tolist()}
    level = {tuple(int(round(255 * v)) for v in c) for c in LEVEL_COLOURS}
    assert level <= {tuple(c) for c in palette.tolist()}


def test_gif_palette_holds_the_level_colours_exactly():
    frames = [Image.new("RGB", (8, 8), (i * 20, 100, 200)) for i in range(5)]
    palette = np.array(gif_palette(frames).getpalette()[:768]).reshape(-1, 3)
    for colour in LEVEL_COLOURS:
        assert (np.round(255 * colour).astype(int) == palette).all(axis=1).any()


def test_stats_rows_go_to_a_file_one_per_frame(tmp_path, gl_ctx):
    stats = tmp_path / "s.csv"
    result = run_headless(HeadlessOptions(DemoSettings(objects=2000, hud=False), size=(64, 36), frames=3,
                                          out=None, stats=str(stats)), ctx=gl_ctx)
    rows = list(csv.DictReader(stats.open()))
    assert [r["frame"] for r in rows] == ["0", "1", "2"] and len(result.frames) == 3
    assert all(float(r["draw_ms"]) > 0 and r["scene"] == "forest" and r["captured"] == "0" for r in rows)


def test_inspect_presses_x_at_a_pixel_of_the_first_frame_and_every_row_names_the_object(tmp_path):
    """``--inspect X,Y`` headless: one line says what X found there, and every --stats row's ``inspected``
    is that object (the window's X, at a pixel given on the command line)."""
    stats = tmp_path / "s.csv"
    proc = run_demo(["--headless", "--objects", "20000", "--frames", "3", "--no-images", "--size", "320x180",
                     "--inspect", "106,108", "--stats", str(stats)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in _err_lines(proc) if line.startswith("run_demo.py: X: ")]
    assert len(said) == 1 and said[0].endswith(("under pixel 106,108", "on the line of sight through pixel 106,108")), \
        proc.stderr                                  # (the second where the object there is not drawn)
    rows = list(csv.DictReader(stats.open()))
    picked = said[0].split("#")[1].split()[0].rstrip(",")
    assert [r["inspected"] for r in rows] == [picked] * 3
    assert [r["status"] for r in rows] == [said[0].removeprefix("run_demo.py: ")] * 3  # on screen for 3 s


def test_inspect_at_a_later_frame_presses_x_there(tmp_path):
    """``--inspect X,Y@F``: an object that pops in at frame F can be picked at F (it was the first frame only)."""
    stats = tmp_path / "s.csv"
    proc = run_demo(["--headless", "--objects", "20000", "--frames", "3", "--no-images", "--size", "320x180",
                     "--inspect", "160,0@2", "--stats", str(stats)], tmp_path)  # the top row: sky
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(stats.open()))
    assert [r["status"] for r in rows] == ["", "", "X: no object under pixel 160,0"]
    proc = run_demo(["--headless", "--objects", "20000", "--frames", "3", "--no-images", "--size", "320x180",
                     "--inspect", "140,110@1", "--stats", str(stats)], tmp_path)   # a pebble at frame 1
    rows = list(csv.DictReader(stats.open()))
    assert rows[0]["inspected"] == "" and rows[1]["inspected"] == rows[2]["inspected"] != "" and rows[1]["status"]


def test_inspect_on_a_pixel_with_nothing_says_so_on_stderr_and_in_the_status_column(tmp_path):
    stats = tmp_path / "s.csv"
    proc = run_demo(["--headless", "--objects", "20000", "--frames", "2", "--no-images", "--size", "320x180",
                     "--inspect", "160,0", "--stats", str(stats)], tmp_path)  # the top row: sky
    assert proc.returncode == 0, proc.stderr
    assert "run_demo.py: X: no object under pixel 160,0" in _err_lines(proc), proc.stderr
    rows = list(csv.DictReader(stats.open()))
    assert [(r["status"], r["inspected"]) for r in rows] == [("X: no object under pixel 160,0", "")] * 2


def test_the_answer_of_inspect_is_drawn_for_three_seconds_of_frames_as_the_window_shows_it(tmp_path):
    """The window shows a key's answer for STATUS_SECONDS; headless frames are 1/30 s apart, so X's answer
    is drawn (in the status line's cyan, with the HUD off too) and in the status column on the 90 frames
    from its press, and gone from the 91st.  It was in the column of the pressed frame only, never drawn."""
    stats, out = tmp_path / "s.csv", tmp_path / "out"
    proc = run_demo(["--headless", "--objects", "2000", "--frames", "92", "--size", "320x180", "--hud", "off",
                     "--inspect", "160,0@1", "--stats", str(stats), "--out", str(out)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = "X: no object under pixel 160,0"
    assert [r["status"] for r in csv.DictReader(stats.open())] == [""] + [said] * 90 + [""]

    def cyan_pixels(frame: int) -> int:
        image = np.asarray(Image.open(out / f"frame_{frame:04d}.png").convert("RGB"), dtype=np.int16)[:40]
        return int(((image[..., 0] < 160) & (image[..., 1] > 220) & (image[..., 2] > 220)).sum())

    assert cyan_pixels(0) == 0 and cyan_pixels(91) == 0
    assert cyan_pixels(1) > 50 and cyan_pixels(90) > 50


def test_screenshot_names_never_overwrite(tmp_path):
    assert next_free_path(tmp_path / "none", "screenshot").name == "screenshot_000.png"
    (tmp_path / "screenshot_000.png").write_bytes(b"x")
    (tmp_path / "screenshot_007.png").write_bytes(b"x")
    assert next_free_path(tmp_path, "screenshot").name == "screenshot_008.png"


def test_save_image_writes_then_renames(tmp_path):
    path = tmp_path / "a" / "x.png"
    save_image(Image.new("RGB", (4, 4), (1, 2, 3)), path)
    assert Image.open(path).getpixel((0, 0)) == (1, 2, 3)
    assert [p.name for p in path.parent.iterdir()] == ["x.png"]


def test_a_screenshot_into_an_out_folder_a_file_replaced_says_it_is_not_a_folder(tmp_path):
    """P after --out's folder was replaced by a file while the demo ran: the start-up check's words,
    not the bare "File exists" of creating the folder."""
    out = tmp_path / "shots"
    save_image(Image.new("RGB", (4, 4)), next_free_path(out, "screenshot"))
    for png in out.iterdir():
        png.unlink()
    out.rmdir()
    out.write_text("a file where the folder was")
    path = next_free_path(out, "screenshot")
    with pytest.raises(OSError) as failure:
        save_image(Image.new("RGB", (4, 4)), path)
    assert cannot_save(path, out, failure.value) == f"cannot save {path}: --out {out} is not a folder"


def test_a_screenshot_that_fails_for_another_reason_gives_the_system_error(tmp_path):
    path = tmp_path / "screenshot_000.png"
    said = cannot_save(path, tmp_path, OSError(28, "No space left on device"))
    assert said == f"cannot save {path}: No space left on device"


def test_ctrl_c_keeps_stats_rows_and_leaves_no_truncated_png(tmp_path, gl_ctx):
    out, stats = tmp_path / "o", tmp_path / "s.csv"
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "run_demo.py"), "--headless", "--frames", "400", "--size",
                             "320x180", "--objects", "2000", "--out", str(out), "--stats", str(stats)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_a_terminal_gives_it)
    err = interrupt_once(proc, lambda: stats.exists() and stats.read_text().count("\n") >= 6)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    lines = stats.read_text().splitlines()
    assert stats.read_text().endswith("\n") and len(lines) >= 6
    assert [int(line.split(",")[0]) for line in lines[1:]] == list(range(len(lines) - 1))
    pngs = sorted(p for p in out.glob("*.png") if not p.name.startswith("."))
    assert pngs and not [p.name for p in out.iterdir() if p.name.startswith(".")]   # no temporary left
    for png in pngs:
        with Image.open(png) as image:
            image.load()                               # a truncated file would raise


def test_frames_below_one_says_at_least_one(tmp_path):
    proc = run_demo(["--headless", "--frames", "-1"], tmp_path)
    assert proc.returncode == cli.EXIT_USAGE and "argument --frames: must be >= 1, got -1" in proc.stderr


def test_an_out_folder_that_cannot_be_written_is_refused_before_the_scene_is_built(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    proc = run_demo(["--headless", "--frames", "1", "--out", str(blocker / "frames")], tmp_path)
    assert proc.returncode == cli.EXIT_ERROR  # refused by the check that runs before the scene (its message below)
    (line,) = _err_lines(proc)
    assert f"--out {blocker / 'frames'} is not a folder" in line and "OSError" not in line


def test_without_a_display_an_unusable_out_is_refused_in_one_line_before_any_word_of_where_images_go(tmp_path):
    """No display and no --headless: the demo would run headless, but an --out it cannot write is refused
    first, in one line, not after announcing that the images go there."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    proc = run_demo(["--frames", "1", "--out", str(blocker / "frames")], tmp_path)  # no DISPLAY in its env
    assert proc.returncode == cli.EXIT_ERROR
    (line,) = _err_lines(proc)
    assert f"--out {blocker / 'frames'} is not a folder" in line and "running headless" not in line


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_out_folder_is_not_writable(tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        proc = run_demo(["--headless", "--frames", "1", "--out", str(out)], tmp_path)
    finally:
        out.chmod(0o700)
    assert proc.returncode == cli.EXIT_ERROR
    (line,) = _err_lines(proc)
    assert f"--out {out} is not writable" in line and ".tmp" not in line



def test_help_counts_the_compact_hud_lines_the_window_shows_in_the_forest():
    """``--help`` says how many lines the compact HUD has: the forest's window shows exactly that many."""
    from demo.interactive import MOUSE_FREE
    from engine.frame_stats import FrameStats
    from engine.hud import HudInfo, hud_lines

    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    help_text = " ".join(cli.build_parser().format_help().split())
    said = [count for word, count in words.items() if f"{word} lines in the forest" in help_text]
    lines = hud_lines(HudInfo("forest", 200_000, FrameStats(), mouse=MOUSE_FREE), "compact")
    assert said == [len(lines)], (said, [text for text, _ in lines])


@pytest.mark.parametrize("flag, message", [
    ("--stats", "argument --stats: must name a file, got an empty string (--stats alone: stdout)"),
    ("--out", "argument --out: must name a folder, got an empty string"),
])
def test_an_empty_file_or_folder_name_is_refused_in_one_line(flag, message, capsys):
    """``--stats ""`` said "cannot write the --stats file .: Is a directory"."""
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args([flag, ""])
    assert exit_.value.code == cli.EXIT_USAGE
    assert message in capsys.readouterr().err
    assert cli.build_parser().parse_args(["--stats"]).stats == "-"  # alone: stdout, as before
