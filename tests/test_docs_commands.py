"""Every shell command in README.md and docs/*.md runs as written, so a page cannot drift from the code.

The commands are read from the pages themselves: each ```` ```sh ```` block (a ``for`` loop is one
command) and each inline code span that is a command with arguments (``python -m ...``,
``.venv/bin/...``, ``pip ...``, ``pytest ...``, ``run_demo.py ...``).  Each one is run here, as
written (:data:`AS_WRITTEN`) or made small (:data:`RUN_AS`), and must exit 0, or it is listed in
:data:`NOT_RUN` with the reason.  A command in none of the three fails
:func:`test_every_command_on_the_pages_is_run_or_listed`, and so does a table entry no page holds
any more.

"As written" means after the README's set-up: ``.venv/bin/`` is the virtual environment these tests
run in (the README's ``.venv`` in CI), an inline ``python`` is its interpreter, and a ```sh``` block
never says a bare ``python`` (after the README's set-up that would be the system's, without the
packages).  Long runs are shortened only where the page offers the flag (:data:`RUN_AS`, the written
command and what is run instead).  Commands that need the ``examples`` extra (Panda3D, pygfx) run
in ``tests/examples/test_docs_example_commands.py``, beside the other tests that need it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The virtual environment's bin folder: what the pages call ``.venv/bin``.
BIN = Path(sys.executable).parent

FENCE = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
ANY_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE = re.compile(r"`((?:\.venv/bin/)?(?:python3?|pip|pytest|run_demo\.py) [^`]+)`")

#: Written on a page and run exactly so.
AS_WRITTEN = {"python -m culling warm-up"}

#: Written on a page -> what runs instead: the same command with the page's own flags made small.
RUN_AS = {
    "python -m benchmarks.dense_vs_tree": "python -m benchmarks.dense_vs_tree --dim 2 --objects 2000 --rounds 1",
    "python -m benchmarks.dense_vs_tree --crowd": "python -m benchmarks.dense_vs_tree --crowd --objects 5000 --rounds 1",
    ".venv/bin/python examples/panda3d_forest.py":
        ".venv/bin/python examples/panda3d_forest.py --frames 2 --objects 20000",
    ".venv/bin/python examples/pygfx_forest.py --headless --frames 30 --objects 50000":
        ".venv/bin/python examples/pygfx_forest.py --headless --frames 2 --objects 20000",
    'for e in panda3d pygfx; do for all in "" --all; do\n'
    "  .venv/bin/python examples/${e}_forest.py --headless --frames 12 --objects 200000 --out out/$e$all $all"
    " | tail -1\ndone; done":
        'for e in panda3d pygfx; do for all in "" --all; do\n'
        "  .venv/bin/python examples/${e}_forest.py --headless --frames 2 --objects 20000 --out out/$e$all $all"
        " | tail -1\ndone; done",
    ".venv/bin/python run_demo.py --headless --objects 1000000 --frames 120 --no-images --stats > lod.csv":
        ".venv/bin/python run_demo.py --headless --objects 20000 --frames 3 --no-images --stats > lod.csv",
    ".venv/bin/python run_demo.py --headless --objects 1000000 --frames 120 --no-images --stats --no-lod > full.csv":
        ".venv/bin/python run_demo.py --headless --objects 20000 --frames 3 --no-images --stats --no-lod > full.csv",
    "run_demo.py --headless --objects 1000000 --frames 40 --freeze-at 0.5 --size 1280x720 --hud full":
        "run_demo.py --headless --objects 20000 --frames 2 --freeze-at 0.5 --size 1280x720 --hud full",
    "run_demo.py --headless --scene clusters --frames 40 --size 1280x720":
        "run_demo.py --headless --scene clusters --objects 20000 --frames 2 --size 1280x720",
    "run_demo.py --headless --scene aggro --frames 30 --size 1280x720 --no-overlay":
        "run_demo.py --headless --scene aggro --objects 3000 --frames 2 --size 1280x720 --no-overlay",
    "run_demo.py --scene aggro": "run_demo.py --headless --scene aggro --objects 3000 --frames 2",
    "run_demo.py --headless --scene swarm --frames 12 --size 1280x720":
        "run_demo.py --headless --scene swarm --frames 2 --size 1280x720",
    "run_demo.py --headless --frames 40 --size 1280x720 --inspect 425,432":
        "run_demo.py --headless --objects 20000 --frames 2 --size 1280x720 --inspect 425,432",
    "run_demo.py --headless --objects 1000000 --frames 40 --size 1280x720 --hud full --map":
        "run_demo.py --headless --objects 20000 --frames 2 --size 1280x720 --hud full --map",
    # The whole run at the tiny sizes: every section, answers checked against brute force (the --quick sizes
    # run the same code on more objects, 17 s of the suite; tests/test_benchmarks_quick.py checks the tiny
    # run's report section by section, in its own process); a page's --only form checks the flag (the jit
    # section has no tiny sizes: skipped at tiny, and says so).
    "python -m benchmarks": "python -m benchmarks --preset tiny",
    "python -m benchmarks --only jit": "python -m benchmarks --preset tiny --only jit",
    ".venv/bin/python -m benchmarks": ".venv/bin/python -m benchmarks --preset tiny",
    "python -m benchmarks.pool_layout": "python -m benchmarks.pool_layout --objects 1000 --repeats 2",
    "python -m benchmarks.pool_layout --objects 100000": "python -m benchmarks.pool_layout --objects 1000 --repeats 2",
    "python -m benchmarks.frameparts": "python -m benchmarks.frameparts --n 500 --frames 3",
    "python -m benchmarks.frameparts --alone": "python -m benchmarks.frameparts --alone --n 500 --frames 3",
    "python -m benchmarks.profiling [query|query_many|insert_many|update_many|single|colocated|phases]":
        "python -m benchmarks.profiling query --n 2000",
    "python -m benchmarks.profiling --perf query_many --repeat 50":
        "python -m benchmarks.profiling --perf query --n 2000 --repeat 1",
    "python -m benchmarks.frameparts [--n N] [--ab MODULE.NAME A B]":
        "python -m benchmarks.frameparts --n 500 --frames 3",
    "python -m server.demo": "python -m server.demo --players 200 --entities 2000 --ticks 2 --quiet",
    "python -m server.demo --shards 1 --ticks 10":
        "python -m server.demo --shards 1 --ticks 2 --players 200 --entities 2000 --quiet",
    # Two shards are the default: at these sizes the same run as the bare command above, so it runs once.
    "python -m server.demo --shards 2 --ticks 10": "python -m server.demo --players 200 --entities 2000 --ticks 2 --quiet",
    "python -m server.demo --players 1000 --entities 10000":
        "python -m server.demo --players 1000 --entities 10000 --ticks 2 --quiet",
    "python -m server.scale": "python -m server.scale --players 200 --entities 2000 --shards 8",
    "python -m benchmarks --only interest-ticks": "python -m benchmarks --preset tiny --only interest-ticks",
    "python -m benchmarks.frameparts --n 100000 --frames 10": "python -m benchmarks.frameparts --n 500 --frames 3",
    "python -m benchmarks.frameparts --n 100000 --alone --cpu": "python -m benchmarks.frameparts --n 500 --frames 3 --alone --cpu",
    "python -m benchmarks.frameparts --n 100000 --alone --cpu --workload heavy":
        "python -m benchmarks.frameparts --n 500 --frames 3 --alone --cpu --workload heavy",
    "python -m benchmarks.frameparts --workload heavy --n 100000 --frames 40 --versus DIR":
        "python -m benchmarks.frameparts --workload heavy --n 500 --frames 3 --versus . --rounds 1",
}

#: Written on a page, not run here, and why.
NOT_RUN = {
    'python3 -m venv .venv && .venv/bin/pip install -e ".[demo]" && .venv/bin/python run_demo.py':
        "the README's set-up; .ci/run makes the same .venv with its test twin, the next command",
    'python3 -m venv .venv && .venv/bin/pip install -e ".[demo,test]" && .venv/bin/pytest':
        "the README's test command: .ci/run runs exactly it, and it runs this test",
    "sudo apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libgl1 libglx-mesa0 mesa-vulkan-drivers xvfb "
    "xdotool imagemagick fonts-dejavu-core libfontconfig1 libfreetype6":
        "installs system packages (root); .ci/run installs the same ones",
    '.venv/bin/pip install -e ".[examples]"':
        ".ci/run's examples step runs it before tests/examples (with CULLING_SHIP_KERNELS=0: it keeps the "
        "kernels the README's install shipped)",
    '.venv/bin/pip install -e ".[bench]"': "installs; the test extra these tests run with holds the same packages",
    'pip install -e ".[bench]"': "installs; the test extra these tests run with holds the same packages",
    '.venv/bin/pip install -e ".[profile]"': "installs; the test extra these tests run with includes it",
    "pip install .": "installs the library into the running environment; .ci/run installs the built wheel",
    "pip install -e .": "the README's set-up does it (with its extras), compiling the kernels into the checkout",
    "pip install -e . --config-settings editable_mode=compat":
        "reinstalls the checkout (compiling the kernels again); checked by hand: mypy --strict then reads "
        "culling's hints from a script outside the checkout, where with the import hook it finds no culling",
    'pip install -e ".[server]"': "installs Ray; the test extra these tests run with includes the server extra",
    'pip install -e ".[demo]"': "the README's first command does it; the test extra these tests run with includes it",
    "pip wheel --no-deps -w dist .": "builds the wheel, compiling every kernel (minutes); .ci/run builds it",
    "python -m culling ship-kernels":
        "compiles every kernel again into the package (minutes); the wheel's build runs it (.ci/run)",
    "pytest tests/demo/test_screenshots.py --regen-screenshots":
        "rewrites the stored reference screenshots; the suite runs that file without the flag",
}

def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#[^\"']*$", "", line).rstrip()


def _block_commands(block: str) -> list[str]:
    """The commands of one ```sh block: a line each, continued lines joined, a loop kept whole."""
    commands, current, depth = [], [], 0
    for line in block.splitlines():
        line = _strip_comment(line)
        if not line.strip():
            continue
        current.append(line)
        depth += len(re.findall(r"\bdo\b", line)) - len(re.findall(r"\bdone\b", line))
        if depth == 0 and not line.endswith("\\"):
            commands.append("\n".join(current))
            current = []
    assert not current, f"an unfinished command: {current}"
    return commands


def page_commands() -> dict[str, list[str]]:
    """Every command on the pages -> the pages (and kinds) that hold it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        text = page.read_text()
        for block in FENCE.findall(text):
            for command in _block_commands(block):
                found.setdefault(command, []).append(f"{page.name} (sh block)")
        prose = ANY_FENCE.sub("", text)
        for span in INLINE.findall(prose):
            found.setdefault(" ".join(span.split()), []).append(f"{page.name} (inline)")
    return found


def needs_examples(command: str) -> bool:
    """Whether ``command`` runs an example (the ``examples`` extra: Panda3D, pygfx)."""
    return "examples/" in command


def runnable(command: str) -> str:
    """The shell text that runs ``command`` after the README's set-up, in this environment."""
    text = RUN_AS.get(command, command)
    text = text.replace(".venv/bin/", f"{BIN}/")
    text = re.sub(r"^python3? ", f"{BIN}/python ", text)
    text = re.sub(r"^run_demo\.py ", f"{BIN}/python run_demo.py ", text)
    return text


def run_command(command: str) -> None:
    """Run one page command from the checkout, headless, and check it exits 0; files it leaves in the
    checkout's top folder (``> lod.csv``) are removed."""
    before = set(ROOT.iterdir())
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    try:
        proc = subprocess.run(["bash", "-o", "pipefail", "-ec", runnable(command)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
    finally:
        for path in set(ROOT.iterdir()) - before:
            if path.is_file():
                path.unlink()
    assert proc.returncode == 0, f"{command!r} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


COMMANDS = page_commands()
#: The commands to run, one per distinct run (``python -m benchmarks`` on two pages runs once).
TO_RUN = sorted({runnable(c): c for c in sorted(COMMANDS, reverse=True) if c in AS_WRITTEN or c in RUN_AS}.values())


def test_every_command_on_the_pages_is_run_or_listed():
    tables = {"AS_WRITTEN": AS_WRITTEN, "RUN_AS": set(RUN_AS), "NOT_RUN": set(NOT_RUN)}
    unknown = {c: where for c, where in COMMANDS.items() if not any(c in t for t in tables.values())}
    assert not unknown, f"commands on the pages that are neither run nor listed (add each to a table): {unknown}"
    stale = sorted(c for t in tables.values() for c in t if c not in COMMANDS)
    assert not stale, f"table entries no page holds any more (update the tables): {stale}"
    twice = [c for c in COMMANDS if sum(c in t for t in tables.values()) > 1]
    assert not twice, f"commands in more than one table: {twice}"


def test_a_sh_block_never_says_a_bare_python_after_the_readme_set_up():
    bare = [(c, where) for c, where in COMMANDS.items()
            if any("sh block" in w for w in where) and re.search(r"(^|[;&|]\s*)python3? (?!-m venv)", c, re.M)]
    assert not bare, f"say .venv/bin/python (the README's virtual environment): {bare}"


def starts_ray(command: str) -> bool:
    """Whether ``command`` starts a local Ray cluster (the sharded server's demo): a ``ray`` test."""
    return "server.demo" in command


@pytest.mark.parametrize("command", [pytest.param(c, marks=[pytest.mark.ray] if starts_ray(c) else [])
                                     for c in TO_RUN if not needs_examples(c)])
def test_the_command_runs_as_written(command):
    run_command(command)


def test_the_examples_commands_run_with_the_examples_tests():
    """Commands that need the examples extra run in tests/examples (which CI runs with that extra)."""
    from tests.examples.test_docs_example_commands import EXAMPLE_COMMANDS

    assert EXAMPLE_COMMANDS == [c for c in TO_RUN if needs_examples(c)] != []
