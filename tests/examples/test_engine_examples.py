"""The engine examples run as a user runs them: headless, a few frames, a small forest.

Each program is started with ``--headless --frames 3 --objects 20000``; the test checks its frames
(sky, ground and foliage-coloured pixels, not a blank image) and its summary lines (one a second and
one for the last frame, never one per frame): every frame they name drew fewer objects than the world
holds, exactly as many as the tree's exact answer at the camera and as a NumPy brute force over all
objects (the camera path and the world come from the program's own functions, so nothing here
re-implements its maths).  Bad flags: one line on stderr, exit 2; a folder ``--out`` cannot write
into: one line, exit 1, before any work.  A first run's compile is announced with a progress bar.

Without the ``examples`` extra (panda3d, pygfx, rendercanvas) the tests skip, in CI too (the README's
set-up does not install it), unless ``CULLING_REQUIRE_EXAMPLES`` is set, as ``.ci/run`` sets it where it
installs the extra and Mesa's Vulkan driver: then that is a failure.  Other skips (no EGL, no Vulkan)
fail in CI as every ``gl`` test's do (tests/conftest.py).
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from interrupts import interrupt_once, sigint_as_a_terminal_gives_it

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
#: Set where the ``examples`` extra was installed to be tested (``.ci/run``): its absence then fails.
REQUIRED = os.environ.get("CULLING_REQUIRE_EXAMPLES", "").strip().lower() not in ("", "0", "false", "no")
OBJECTS, FRAMES = 20_000, 3
#: The summary line both examples print once a second (and for the last frame).
SUMMARY = re.compile(r"^frame (?P<frame>\d+): drawn (?P<drawn>\d+) of (?P<total>\d+) objects, "
                     r"query (?P<query>[0-9.]+) ms \(median of (?P<frames>\d+)\), (?P<fps>[0-9.]+) fps, "
                     r"camera at \((?P<x>-?[0-9.]+), (?P<y>-?[0-9.]+), (?P<z>-?[0-9.]+)\), "
                     r"(?P<clearance>-?[0-9.]+) m above the ground$")

pytestmark = [pytest.mark.gl,   # renders offscreen (EGL; Vulkan for pygfx): never skipped in CI
              pytest.mark.xdist_group("engine_examples")]   # one worker: each example's headless run is made once


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: What each example needs beyond the test extra: its own list, which it checks first.
NEEDS = {name: _load(name).ENGINE_MODULES for name in ("panda3d_forest", "pygfx_forest")}


def _need(name: str) -> None:
    missing = [m for m in NEEDS[name] if importlib.util.find_spec(m) is None]
    if missing:
        message = f"{name} needs {', '.join(missing)}: pip install -e '.[examples]'"
        if REQUIRED:
            pytest.fail(f"{message} (CULLING_REQUIRE_EXAMPLES is set)")
        pytest.skip(f"optional extra not installed: {message}")  # tests/conftest.py's EXTRA_NOT_INSTALLED


def _run(name: str, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module", params=sorted(NEEDS))
def headless_run(request, tmp_path_factory):
    """(name, summary lines as (frame, drawn, total) triples, out folder, stdout) of one headless run."""
    name = request.param
    _need(name)
    out = tmp_path_factory.mktemp(name)
    proc = _run(name, "--headless", "--frames", str(FRAMES), "--objects", str(OBJECTS), "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [SUMMARY.match(line) for line in proc.stdout.splitlines()]
    return name, [(int(m["frame"]), int(m["drawn"]), int(m["total"])) for m in lines if m], out, proc.stdout


def test_summary_lines_are_fewer_than_frames_and_end_at_the_last_frame(headless_run):
    name, lines, _, stdout = headless_run
    frames = [frame for frame, _, _ in lines]
    assert frames and frames[-1] == FRAMES - 1 and frames == sorted(set(frames)), f"{name}: {stdout}"
    assert len(stdout.splitlines()) < 5 + FRAMES, f"{name} prints a line per frame: {stdout}"
    assert all(total == OBJECTS for _, _, total in lines)


def test_drawn_is_the_exact_answer_at_the_camera_and_fewer_than_all(headless_run):
    name, lines, _, _ = headless_run
    module = _load(name)
    scene, *world, tree, handles, object_of = module.build_world(OBJECTS)
    centres = world[0] if world else scene.centres   # Panda3D's example keeps its centres in its own frame
    assert np.array_equal(object_of[handles], np.arange(len(scene)))   # handles[i] is object i's, for update_many
    for frame, drawn, total in lines:
        eye = module.camera_at(scene, frame / module.FPS)[0]
        brute = int(np.count_nonzero(np.linalg.norm(centres - eye, axis=1) <= scene.view_distance))
        assert 0 < drawn < total, f"{name} frame {frame}: drew {drawn} of {total}"
        assert drawn == brute == tree.query(eye, exact=True).size, f"{name} frame {frame}"


def test_frames_show_sky_ground_and_trees(headless_run):
    from PIL import Image

    name, _, out, _ = headless_run
    files = sorted(out.glob("frame_*.png"))
    assert [f.name for f in files] == [f"frame_{i:04d}.png" for i in range(FRAMES)]
    for path in files:
        rgb = np.asarray(Image.open(path).convert("RGB")).astype(np.int32)
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        assert rgb.shape == (360, 640, 3) and rgb.std() > 20, f"{path.name} is blank"
        sky = np.count_nonzero((b > g) & (g > r))
        foliage = np.count_nonzero((g > 2.2 * r) & (g > 1.5 * b) & (g > 30))   # trees and bushes, not the ground
        assert sky > 0.1 * r.size, f"{name} {path.name}: {sky} sky pixels"
        assert foliage > 300, f"{name} {path.name}: {foliage} tree-coloured pixels"


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_bad_flag_is_one_line_on_stderr_and_exit_2(name):
    _need(name)
    proc = _run(name, "--bogus")
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr == f"{name}.py: error: unrecognized arguments: --bogus\n"


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_without_the_engine_it_names_the_extra_in_one_line_and_exits_1(name, monkeypatch, capsys):
    """Run without the examples extra, each stopped with a ModuleNotFoundError traceback at its engine's
    first import (a newcomer's run after the README's demo install)."""
    example = _load(name)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda module, *a: None if module in example.ENGINE_MODULES else find_spec(module, *a))
    assert example.main(["--headless", "--frames", "1"]) == 1
    err = capsys.readouterr().err
    assert err == (f"{name}.py: error: needs {', '.join(example.ENGINE_MODULES)}: "
                   'pip install -e ".[examples]" (the examples extra)\n')


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_copy_outside_the_checkout_names_what_it_needs_of_the_repository_in_one_line(name, tmp_path):
    """A copied example stopped with ``ModuleNotFoundError: No module named 'engine'`` (an integrator taking it
    as a template)."""
    copy = tmp_path / f"{name}.py"
    copy.write_text((ROOT / "examples" / f"{name}.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "PYTHONPATH")}
    proc = subprocess.run([sys.executable, str(copy), "--headless", "--frames", "1"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    repository = (f"{name}.py: error: needs this repository's engine, scenes: run it from the checkout or "
                  "put the checkout on PYTHONPATH (see its docstring)")
    extra = [m for m in _load(name).ENGINE_MODULES if importlib.util.find_spec(m) is None]
    assert proc.stderr == repository + (f"; and {', '.join(extra)}: pip install -e \".[examples]\" "
                                        "(the examples extra)" if extra else "") + "\n"


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_copy_without_the_repository_or_the_extra_names_both_in_one_line(name, monkeypatch, capsys):
    """A copy outside the checkout, in an environment without the extra, learnt of the extra only after the
    repository was found (a newcomer's second run)."""
    example = _load(name)
    find_spec = importlib.util.find_spec
    absent = {"engine", "scenes", *example.ENGINE_MODULES}
    monkeypatch.setattr(importlib.util, "find_spec", lambda module, *a: None if module in absent else find_spec(module, *a))
    assert example.main(["--headless", "--frames", "1"]) == 1
    assert capsys.readouterr().err == (
        f"{name}.py: error: needs this repository's engine, scenes: run it from the checkout or put the checkout on "
        f"PYTHONPATH (see its docstring); and {', '.join(example.ENGINE_MODULES)}: pip install -e \".[examples]\" "
        "(the examples extra)\n")


def test_pygfx_gives_each_kind_room_for_what_a_frame_draws_and_grows_it():
    """Room for every object spent pygfx's process-wide instance ids (at most 1,000,000) on culled objects:
    the 1M forest stopped with ``RuntimeError: Max number of objects reached`` before its first frame."""
    _need("pygfx_forest")
    import pygfx as gfx

    example = _load("pygfx_forest")
    world = gfx.Scene()
    kind = example.KindInstances(world, gfx.box_geometry(), gfx.MeshBasicMaterial())
    first = kind.mesh
    assert first.instance_buffer.nitems == example.FIRST_ROOM and first in world.children
    matrices = np.tile(np.eye(4, dtype=np.float32), (300, 1, 1))
    matrices[:, 3, 0] = np.arange(300)
    kind.show(matrices)                                         # more than the room: a mesh twice as large
    grown = kind.mesh
    assert grown is not first and first not in world.children and grown in world.children
    assert grown.instance_buffer.nitems == 2 * example.FIRST_ROOM and grown.instance_buffer.draw_range == (0, 300)
    assert np.array_equal(grown.instance_buffer.data["matrix"][:300], matrices)
    kind.show(matrices[:10])                                    # fewer: the same mesh, a shorter prefix
    assert kind.mesh is grown and grown.instance_buffer.draw_range == (0, 10)
    before = example.KindInstances.ids_held
    with pytest.raises(SystemExit, match="pygfx holds at most 1,000,000 instances"):
        kind.show(np.zeros((example.PYGFX_MAX_IDS, 4, 4), dtype=np.float32))
    assert example.KindInstances.ids_held == before and kind.mesh is grown      # nothing changed


@pytest.mark.parametrize("name", sorted(NEEDS))
@pytest.mark.parametrize("flags", [("--frames", "x"), ("--frames", "0"), ("--objects", "-5"), ("--out",),
                                   ("--out", "")])   # "" was read as ".": 60 frames into the current folder
def test_bad_values_are_refused_by_the_parser(name, flags, capsys):
    _need(name)
    with pytest.raises(SystemExit) as stop:
        _load(name).parse_args(list(flags))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"{name}.py: error: "), err
    if flags[1:] in (("0",), ("-5",)):                  # the flag refused is the one named, with its value
        assert err.rstrip().endswith(f"{flags[0]} must be at least 1, got {flags[1]}"), err


def test_pygfx_says_which_adapter_it_chose(headless_run):
    name, _, _, stdout = headless_run
    if name == "pygfx_forest":
        assert any(line.startswith("pygfx on ") for line in stdout.splitlines()), stdout


def test_pygfx_prefers_an_adapter_that_offers_pygfx_s_features_then_a_gpu_then_vulkan():
    _need("pygfx_forest")
    rank = _load("pygfx_forest").rank_adapter
    lavapipe = [({"adapter_type": "CPU", "backend_type": "OpenGL"}, set()),              # what failed now and then
                ({"adapter_type": "CPU", "backend_type": "Vulkan"}, {"float32-filterable"})]
    assert min(lavapipe, key=lambda a: rank(*a))[0]["backend_type"] == "Vulkan"
    gpus = [({"adapter_type": "CPU", "backend_type": "Vulkan"}, {"float32-filterable"}),
            ({"adapter_type": "DiscreteGPU", "backend_type": "OpenGL"}, {"float32-filterable"}),
            ({"adapter_type": "DiscreteGPU", "backend_type": "Vulkan"}, {"float32-filterable"})]
    assert min(gpus, key=lambda a: rank(*a))[0] == {"adapter_type": "DiscreteGPU", "backend_type": "Vulkan"}


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_ctrl_c_is_one_line_and_exit_130_and_leaves_only_whole_frames(name, tmp_path):
    """Interrupted mid-run (SIGINT, as a terminal's Ctrl-C): no traceback, and every frame on disk is
    whole (each is written under a temporary name and renamed: engine.files.write_atomically)."""
    _need(name)
    from PIL import Image

    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.Popen([sys.executable, str(ROOT / "examples" / f"{name}.py"), "--headless", "--frames",
                             "100000", "--objects", "5000", "--out", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_a_terminal_gives_it)
    err = interrupt_once(proc, lambda: len(list(out.glob("frame_*.png"))) >= 3)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == f"{name}.py: error: interrupted" and "Traceback" not in err, err
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]   # no temporary left
    for png in out.glob("frame_*.png"):
        with Image.open(png) as image:
            image.load()                               # a truncated file would raise


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_an_out_folder_it_cannot_write_into_is_one_line_and_exit_1_before_any_work(name, tmp_path):
    _need(name)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for out in (Path("/proc/frames"), blocker / "frames"):   # /proc: not even root may create a file there
        proc = _run(name, "--headless", "--frames", "2", "--objects", "1000", "--out", str(out))
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
        assert proc.stderr.startswith(f"{name}.py: error: --out {out} is not ") and proc.stderr.count("\n") == 1, proc.stderr
        assert not out.exists()


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_display_that_cannot_be_reached_is_one_line_and_exit_1(name):
    """DISPLAY set but nothing there (an X server that stopped): GLFW aborted the process on an
    assertion (pygfx, exit 134) and Panda3D raised "Could not open window." after building the world."""
    _need(name)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), "--objects", "1000", "--frames", "2"],
                          cwd=ROOT, env=dict(env, DISPLAY=":987654"), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr == (f"{name}.py: error: cannot open a window: the display ':987654' cannot be reached "
                           "(--headless renders offscreen)\n"), proc.stderr


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_frame_that_cannot_be_written_and_too_many_objects_are_one_line_and_exit_1(name, tmp_path):
    """A frame's file taken by a folder (pygfx raised IsADirectoryError's traceback), and --objects beyond
    memory (NumPy's _ArrayMemoryError traceback)."""
    _need(name)
    (tmp_path / "frame_0000.png").mkdir()
    proc = _run(name, "--headless", "--frames", "2", "--objects", "1000", "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1] == (f"{name}.py: error: could not write {tmp_path / 'frame_0000.png'}: "
                                            "Is a directory"), proc.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / f"{name}.py"), "--headless", "--frames", "1",
                           "--objects", str(10**8), "--out", str(tmp_path / "big")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240, preexec_fn=_address_space(3 << 30))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == f"{name}.py: error: out of memory: try fewer --objects", proc.stderr


def _address_space(limit: int):
    """A child's preexec_fn: at most ``limit`` bytes of address space (what a smaller machine has)."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_more_objects_than_an_array_holds_is_refused_by_the_parser(name, capsys):
    """2**63 objects ended in NumPy's "Maximum allowed dimension exceeded" traceback."""
    _need(name)
    module = _load(name)
    with pytest.raises(SystemExit) as stop:
        module.parse_args(["--objects", str(2**63)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"{name}.py: error: --objects must be at most "
                                                        f"{module.MAX_OBJECTS:,}, got {2**63:,}")


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_an_out_that_is_a_broken_link_is_one_line_and_exit_1_before_any_work(name, tmp_path):
    """A link to nowhere passed the check (it "did not exist") and mkdir raised FileExistsError's traceback
    after the world was built."""
    _need(name)
    (tmp_path / "frames").symlink_to(tmp_path / "nowhere")
    proc = _run(name, "--headless", "--frames", "1", "--objects", "1000", "--out", str(tmp_path / "frames"))
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr == (f"{name}.py: error: --out {tmp_path / 'frames'} is a broken link ({tmp_path / 'frames'} -> "
                           f"{tmp_path / 'nowhere'}) (choose another --out)\n"), proc.stderr


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_copy_in_a_project_with_its_own_engine_package_finds_the_checkout_on_pythonpath(name, tmp_path):
    """A copy in ``project/tools/`` put ``project/`` first on the path, so the project's own ``engine`` hid the
    checkout's (``No module named 'engine.display'``), though the docstring says to put the checkout on
    PYTHONPATH.  An unwritable --out stops it just after the checkout's ``engine.files`` answered."""
    _need(name)
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("")
    (tmp_path / "tools").mkdir()
    copy = tmp_path / "tools" / f"{name}.py"
    copy.write_text((ROOT / "examples" / f"{name}.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, str(copy), "--headless", "--frames", "1", "--out", "/proc/frames"],
                          cwd=tmp_path, env=dict(env, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.startswith(f"{name}.py: error: --out /proc/frames is not writable"), \
        proc.stderr


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_copy_beside_a_project_s_own_engine_package_says_it_is_hidden_in_one_line(name, tmp_path):
    """A copy in the folder that holds the project's own ``engine/``: the script's folder comes first on the
    path, before PYTHONPATH, so that ``engine`` hid the checkout's and the run ended in ``No module named
    'engine.files'`` (a template's first run), where the code's comment said it found the checkout's."""
    _need(name)
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text('"""A project engine."""\n')
    copy = tmp_path / f"{name}.py"
    copy.write_text((ROOT / "examples" / f"{name}.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, str(copy), "--headless", "--frames", "1"], cwd=tmp_path,
                          env=dict(env, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert proc.stderr == (f"{name}.py: error: needs this repository's engine, hidden by {tmp_path / 'engine'} "
                           "(a package of that name found first): rename one, or put your own helpers in its place "
                           "(see its docstring)\n"), proc.stderr


#: Runs an example headless with the tree's query sending the process a SIGINT inside the third frame's task
#: (not the warm-up's queries): where a Ctrl-C lands within a frame only now and then, here on every run.
CTRL_C_IN_A_FRAME = """
import os, runpy, signal, sys
import culling
query, frames = culling.ViewDistanceTree.query, []
def query_and_interrupt(self, *args, **kwargs):
    if sys._getframe(1).f_code.co_name in ("cull_and_draw", "draw_frame"):
        frames.append(1)
        if len(frames) == 3:
            os.kill(os.getpid(), signal.SIGINT)   # its handler runs here, inside the frame
    return query(self, *args, **kwargs)
culling.ViewDistanceTree.query = query_and_interrupt
sys.argv = [sys.argv[1], "--headless", "--objects", "5000", "--frames", "50", "--out", sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_ctrl_c_within_a_headless_frame_is_one_line_and_status_130(name, tmp_path):
    """Panda3D's task manager catches a SIGINT that lands inside ``taskMgr.step()`` and prints "* interrupt
    by keyboard" before raising at the frame's end: two lines, where the docs promise one (a template's
    user, one run in four)."""
    _need(name)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_FRAME, str(ROOT / "examples" / f"{name}.py"),
                           str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
                          preexec_fn=sigint_as_a_terminal_gives_it)
    assert proc.returncode == 130, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stderr.splitlines()[-1] == f"{name}.py: error: interrupted", proc.stderr[-2000:]
    assert "interrupt by keyboard" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_panda3d_frames_are_encoded_in_memory_and_written_by_python():
    """PNMImage.write to a file answered True on a full disk and left an empty frame (exit status 0):
    the PNG is made in memory and Python writes it, which raises where the disk is full."""
    _need("panda3d_forest")
    import io

    from panda3d.core import PNMImage, StringStream
    from PIL import Image

    image = PNMImage(8, 4, 3)
    image.fill(0.2, 0.5, 0.8)
    data = _load("panda3d_forest").png_bytes(image, StringStream)
    with Image.open(io.BytesIO(data)) as png:
        assert png.size == (8, 4) and png.convert("RGB").getpixel((3, 2)) == (51, 128, 204)
    if Path("/dev/full").exists():
        with pytest.raises(OSError):
            Path("/dev/full").write_bytes(data)
    with pytest.raises(OSError, match="could not encode"):   # libpng's error left write() True, the stream empty
        _load("panda3d_forest").png_bytes(PNMImage(0, 0), StringStream)


def test_pygfx_turns_each_object_as_the_engine_and_panda3d_do():
    """pygfx's matrices turned every object the other way (its +x to (cos, 0, -sin)): the engine's shader
    (assets/shaders/object.vert.glsl) turns the mesh's +x to (cos, 0, sin) and its -z to (sin, 0, -cos)."""
    _need("pygfx_forest")
    from types import SimpleNamespace

    yaw, r = np.array([0.5, 2.0]), np.array([2.0, 1.0])
    scene = SimpleNamespace(yaw=yaw, bounding_radius=r, centres=np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    m = _load("pygfx_forest").instance_matrices(_Sized(scene, 2))
    for k in range(2):
        model = m[k].T.astype(np.float64)          # pygfx stores it transposed: the translation is the last row
        c, s = np.cos(yaw[k]), np.sin(yaw[k])
        assert np.allclose(model[:3, :3] @ [1.0, 0.0, 0.0], r[k] * np.array([c, 0.0, s]), atol=1e-6)
        assert np.allclose(model[:3, :3] @ [0.0, 0.0, -1.0], r[k] * np.array([s, 0.0, -c]), atol=1e-6)
        assert np.allclose(model[:3, 3], scene.centres[k])


class _Sized:
    """A stand-in scene with the attributes ``instance_matrices`` reads and a length."""

    def __init__(self, inner, n: int) -> None:
        self._inner, self._n = inner, n

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def __len__(self) -> int:
        return self._n


def test_pygfx_without_any_adapter_is_one_line_and_exit_1(tmp_path):
    """No Vulkan driver and no EGL: ``RuntimeError: wgpu finds no GPU adapter`` came as a traceback."""
    _need("pygfx_forest")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(VK_ICD_FILENAMES=str(tmp_path / "none.json"), __EGL_VENDOR_LIBRARY_FILENAMES=str(tmp_path / "none.json"))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "pygfx_forest.py"), "--headless", "--frames", "1",
                           "--objects", "1000", "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == ("pygfx_forest.py: error: wgpu finds no GPU adapter (install Mesa's "
                                            "Vulkan driver: mesa-vulkan-drivers)"), proc.stderr


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_one_frame_says_first_frame_not_a_rate_and_all_says_no_query(name, tmp_path):
    """One frame: its summary came before the frame was drawn, and a rate over it timed its culling alone
    (Panda3D said 1278 fps for a 64 ms frame).  ``--all`` asks no query: no query time (it timed np.arange)."""
    _need(name)
    lines = _run(name, "--headless", "--frames", "1", "--objects", "2000", "--out", str(tmp_path)).stdout.splitlines()
    assert any(line.startswith("frame 0: ") and ", first frame, camera at " in line for line in lines), lines
    lines = _run(name, "--headless", "--frames", "2", "--all", "--objects", "2000", "--out", str(tmp_path)).stdout
    assert "no query (--all), " in lines and "(no query), first frame " in lines, lines


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_help_shows_the_out_default_and_loads_no_engine(name):
    _need(name)
    code = ("import runpy, sys; sys.argv = [sys.argv[0], '--help']\n"
            f"try: runpy.run_path({str(ROOT / 'examples' / f'{name}.py')!r}, run_name='__main__')\n"
            "except SystemExit: pass\n"
            "print(sorted(m for m in ('numba', 'culling', 'panda3d', 'pygfx', 'wgpu') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert f"(default out/{name})" in " ".join(proc.stdout.split()), proc.stdout
    # a copy needs the repository's engine/ and scenes/: --help said nothing of it, only the docstring
    assert "imports this repository's engine/ and scenes/ besides culling" in " ".join(proc.stdout.split())
    assert proc.stdout.rstrip().endswith("[]"), proc.stdout


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_first_run_says_it_compiles_with_a_progress_bar(name, monkeypatch, capsys):
    """A first run (no kernel cached) announces the compile and draws ``culling``'s own progress bar."""
    _need(name)
    import culling

    module = _load(name)
    monkeypatch.setattr(culling, "kernels_cached", lambda groups=None: False)
    module.warm_up_kernels()
    err, COMPILING = capsys.readouterr().err, "compiling kernels (first run only)"
    assert err.startswith(f"{COMPILING} ...\n"), err
    bars = [line for line in err.splitlines() if line.startswith(f"{COMPILING}: [")]
    assert bars and "##############################] " in bars[-1], err       # a full bar at the end
    assert err.rstrip().splitlines()[-1].startswith("kernels compiled in "), err


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_shorter_run_removes_the_frames_an_earlier_run_left_past_its_last(name, tmp_path):
    """The examples left a longer earlier run's last frames, unlike the demo: the folder read as one run."""
    _need(name)
    for left in ("frame_0001.png", "frame_0089.png", "notes.txt"):
        (tmp_path / left).write_bytes(b"an earlier run's")
    proc = _run(name, "--headless", "--frames", "1", "--objects", "200", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["frame_0000.png", "notes.txt"]


def test_both_examples_draw_the_same_lathed_shapes():
    """pygfx drew its own library shapes (a cone tree without a trunk, a plain cylinder for a tower);
    it now lathes the Panda3D example's profiles: the same shapes, turned y up, on the same bases."""
    _need("pygfx_forest")
    from scenes.base import mesh_base

    pygfx_example, panda_example = _load("pygfx_forest"), _load("panda3d_forest")
    assert pygfx_example.PROFILES == panda_example.PROFILES
    for mesh, (profile, _) in pygfx_example.PROFILES.items():
        at = pygfx_example.kind_geometry(mesh).positions.data.astype(np.float64)
        heights = [h for _, h in profile]
        assert np.isclose(at[:, 1].min(), mesh_base(mesh) + min(heights), atol=1e-6)
        assert np.isclose(at[:, 1].max(), mesh_base(mesh) + max(heights), atol=1e-6)
        across = np.hypot(at[:, 0], at[:, 2])
        assert np.isclose(across.max(), max(r for r, _ in profile), atol=1e-6)
    tree = pygfx_example.kind_geometry("cone_tree").positions.data.astype(np.float64)
    trunk = tree[tree[:, 1] < mesh_base("cone_tree") + 0.4 - 1e-6]
    assert trunk.size and np.allclose(np.hypot(trunk[:, 0], trunk[:, 2]), 0.1, atol=1e-6)   # the trunk is there
