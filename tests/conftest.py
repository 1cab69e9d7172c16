"""Shared test set-up: seeded randomness, floating-point errors that raise, markers.

Markers (registered in pyproject.toml; ``-m "not window"`` deselects a kind):

- ``gl``: renders through an OpenGL context (offscreen EGL, Mesa's llvmpipe
  without a GPU); applied here to every test that uses the ``gl_ctx`` fixture.
- ``window``: opens the real window under Xvfb; applied to every test that uses
  the ``xvfb`` fixture (and declared by its module).
- ``screenshot``: compares frames with the stored references.
- ``ray``: starts a local Ray cluster (``tests/server``; Ray is in the ``test``
  and ``server`` extras).

The suite runs in parallel, one pytest-xdist worker per core (pyproject's
``-n auto --dist loadgroup``).  The ``window`` tests share one worker and run
one after another, and so do the ``ray`` tests (:data:`ONE_AT_A_TIME`: each
``xdist_group`` runs on one worker): two real windows at once (Xvfb, the demo,
Mesa's software renderer each) or two local Ray clusters (each sized to the
machine, with its own object store) must not share a small machine.  A module
whose module-scoped fixture is costly declares its own ``xdist_group``, so the
fixture runs once, not once per worker.  Each worker is a session of its own:
a session-scoped fixture (``gl_ctx``) runs once per worker.  pytest-xdist's
own way of passing a test's group from the worker that collected it to the
scheduler (a suffix on the test's node id) silently does nothing from pytest
9.2 on (pytest-dev/pytest-xdist#1386), so the workers here write the groups to
a file the scheduler reads (:func:`pytest_xdist_make_scheduler`).

In CI (the environment variable ``CI`` set, not ``0``/``false``) a ``gl``,
``window`` or ``ray`` test never skips: a skip there means a missing tool, and it is
reported as a failure.  ``CULLING_REQUIRE_INSTALLED=1`` makes the session refuse
to run unless ``culling`` is imported from an installed distribution
(site-packages), not from a checkout: ``.ci/run`` sets it when it tests the
wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sysconfig
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


IN_CI = _env_flag("CI")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))

#: Test kinds that need a tool CI installs (Mesa EGL; Xvfb, xdotool; Ray): in CI their skip is a failure.
NEVER_SKIP_IN_CI = ("gl", "window", "ray")
#: How a skip for an optional extra the README's set-up does not install (``examples``) begins: such a
#: skip stays a skip in CI too (CI=true is set by most CI services, where the README's test command must
#: pass); ``.ci/run`` installs the extra and sets CULLING_REQUIRE_EXAMPLES, under which those tests fail
#: instead (tests/examples/test_engine_examples.py).
EXTRA_NOT_INSTALLED = "optional extra not installed: "
#: Fixtures that make a test a ``gl`` or ``window`` test.
MARKER_FIXTURES = {"gl_ctx": "gl", "xvfb": "window"}
#: Test kinds run one at a time: all tests of a kind form one ``xdist_group`` of that name (one worker).
ONE_AT_A_TIME = ("window", "ray")
#: The files of the costliest tests (whole programs in subprocesses, cold compiles, the property suites),
#: costliest first: they run before the rest, so that the quick tests pytest-xdist hands out one at a time
#: fill the end of the run evenly and no worker is left running one of these alone (it did: the pure
#: wheel's 40 s after the other worker had finished).  The groups (window, ray, the benchmarks' tiny run)
#: go first anyway (pytest-xdist hands out the largest group first).
#: By file name (each is unique under tests/), so the order holds for CI's copy of the tests as well.
SLOW_FIRST = ("test_docs_commands.py", "test_processes.py", "test_kernel_cache.py", "test_packaging.py",
              "test_interrupts.py", "test_callees_by_symbol.py", "test_structure_stateful.py",
              "test_structure_stress.py", "test_work_bounds.py", "test_conftest_rules.py")


#: The markers as pyproject.toml registers them, for a run without it (the wheel's tests in CI).
MARKERS = {
    "gl": "renders through an OpenGL context (offscreen EGL); never skipped in CI",
    "window": "opens the real window under Xvfb and drives it with X input; never skipped in CI",
    "screenshot": "renders the stored reference views (compared only on the reference renderer)",
    "ray": "starts a local Ray cluster (server/); never skipped in CI",
}
#: pytest-xdist's marker, registered here for a run without pytest-xdist (where it means nothing).
XDIST_GROUP = "xdist_group(name): the tests of one group run on one pytest-xdist worker (--dist loadgroup)"


def pytest_configure(config: pytest.Config) -> None:
    # A suite started with SIGINT ignored (``pytest &`` in a script, ``nohup``: Python then keeps SIG_IGN) would
    # fail the Ctrl-C tests, which send SIGINT to themselves: the default handler, as a terminal's run has it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    known = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    for name, text in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {text}")
    if "xdist_group" not in known:
        config.addinivalue_line("markers", XDIST_GROUP)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regen-screenshots", action="store_true", default=False,
                     help="rewrite tests/demo/reference/*.png and renderer.json from this machine's renderer")


def pytest_report_header(config: pytest.Config) -> str:
    try:
        import culling
    except ImportError as exc:
        return f"culling: not importable ({exc})"
    return f"culling: {Path(culling.__file__).parent}" + ("; CI: gl and window skips fail" if IN_CI else "")


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _env_flag("CULLING_REQUIRE_INSTALLED"):
        return
    import culling

    where = Path(culling.__file__).resolve().parent
    site = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    if where.parent not in site:
        raise pytest.UsageError(f"CULLING_REQUIRE_INSTALLED is set but culling was imported from {where}, "
                                f"not from site-packages ({', '.join(sorted(map(str, site)))})")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group markers, and before -m
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))   # stable: each file's order kept
    for item in items:
        for fixture, marker in MARKER_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        if item.get_closest_marker("xdist_group") is None:
            kind = next((name for name in ONE_AT_A_TIME if item.get_closest_marker(name) is not None), None)
            if kind is not None:
                item.add_marker(pytest.mark.xdist_group(kind))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    if not (IN_CI and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if reason.removeprefix("Skipped: ").startswith(EXTRA_NOT_INSTALLED):
        return
    kinds = [name for name in NEVER_SKIP_IN_CI if item.get_closest_marker(name) is not None]
    if kinds:
        report.outcome = "failed"
        report.longrepr = f"a {'/'.join(kinds)} test skipped in CI, where it must run: {reason}"


#: The controller's folder where each pytest-xdist worker writes the groups of the tests it collected.
GROUPS_DIR = pytest.StashKey[Path]()


def _xdist_groups(item: pytest.Item) -> str | None:
    """The test's group as pytest-xdist names it (its ``xdist_group`` names, sorted and joined), or None."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) or None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # the controller, for each worker it starts (pytest-xdist)
    config = node.config
    if GROUPS_DIR not in config.stash:
        config.stash[GROUPS_DIR] = Path(tempfile.mkdtemp(prefix="pytest-xdist-groups-"))
    node.workerinput["culling_groups_dir"] = str(config.stash[GROUPS_DIR])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:  # a worker, before it reports its collection
    where = getattr(session.config, "workerinput", {}).get("culling_groups_dir")
    if where is None:
        return
    groups = {item.nodeid: group for item in session.items if (group := _xdist_groups(item)) is not None}
    mine = Path(where) / f"{session.config.workerinput['workerid']}.json"
    mine.with_suffix(".tmp").write_text(json.dumps(groups))
    mine.with_suffix(".tmp").replace(mine)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup`` with the groups the workers wrote (pytest-xdist's when its node-id suffix works)."""
    if config.getvalue("dist") != "loadgroup" or GROUPS_DIR not in config.stash:
        return None
    from xdist.scheduler import LoadGroupScheduling

    class GroupsTheWorkersWrote(LoadGroupScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has reported its collection (and so written its file)
                self.groups = {}
                for written in sorted(config.stash[GROUPS_DIR].glob("*.json")):
                    self.groups.update(json.loads(written.read_text()))
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return GroupsTheWorkersWrote(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    if GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[GROUPS_DIR], ignore_errors=True)


@pytest.fixture(autouse=True)
def _numpy_errors_raise():
    old = np.seterr(all="raise")
    try:
        yield
    finally:
        np.seterr(**old)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def gl_ctx():
    """One offscreen OpenGL 3.3 context (EGL; Mesa's llvmpipe without a GPU) for the whole session."""
    try:
        import moderngl

        ctx = moderngl.create_standalone_context(backend="egl", require=330)
    except Exception as exc:  # no libEGL, no Mesa driver, no 3.3 support
        pytest.skip(f"no OpenGL 3.3 context on EGL (install libegl1 libegl-mesa0 libgl1-mesa-dri): {exc}")
    yield ctx
    ctx.release()
