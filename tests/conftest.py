"""Shared test set-up: seeded randomness, floating-point errors that raise, markers.

Markers (registered in pyproject.toml; ``-m "not window"`` deselects a kind):

- ``gl``: renders through an OpenGL context (offscreen EGL, Mesa's llvmpipe
  without a GPU); applied here to every test that uses the ``gl_ctx`` fixture.
- ``window``: opens the real window under Xvfb; applied to every test that uses
  the ``xvfb`` fixture (and declared by its module).
- ``screenshot``: compares frames with the stored references.
- ``ray``: starts a local Ray cluster (``tests/server``; Ray is in the ``test``
  and ``server`` extras).

In CI (the environment variable ``CI`` set, not ``0``/``false``) a ``gl``,
``window`` or ``ray`` test never skips: a skip there means a missing tool, and it is
reported as a failure.  ``CULLING_REQUIRE_INSTALLED=1`` makes the session refuse
to run unless ``culling`` is imported from an installed distribution
(site-packages), not from a checkout: ``.ci/run`` sets it when it tests the
wheel.
"""

from __future__ import annotations

import os
import sysconfig
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
#: Fixtures that make a test a ``gl`` or ``window`` test.
MARKER_FIXTURES = {"gl_ctx": "gl", "xvfb": "window"}


#: The markers as pyproject.toml registers them, for a run without it (the wheel's tests in CI).
MARKERS = {
    "gl": "renders through an OpenGL context (offscreen EGL); never skipped in CI",
    "window": "opens the real window under Xvfb and drives it with X input; never skipped in CI",
    "screenshot": "renders the stored reference views (compared only on the reference renderer)",
    "ray": "starts a local Ray cluster (server/); never skipped in CI",
}


def pytest_configure(config: pytest.Config) -> None:
    known = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    for name, text in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {text}")


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in MARKER_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    if not (IN_CI and report.skipped) or hasattr(report, "wasxfail"):
        return
    kinds = [name for name in NEVER_SKIP_IN_CI if item.get_closest_marker(name) is not None]
    if kinds:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"a {'/'.join(kinds)} test skipped in CI, where it must run: {reason}"


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
