"""The test suite's own rules (tests/conftest.py), run in a scratch pytest session.

In CI a skipped ``gl`` or ``window`` test is a failure, unless it skips for an optional extra the
README's set-up does not install; the markers follow the
fixtures; ``CULLING_REQUIRE_INSTALLED`` refuses a culling imported from a
checkout.  Each rule is shown to bite, not only to pass.
"""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parent / "conftest.py").read_text()

SKIPPING_TESTS = '''
import pytest

@pytest.fixture
def gl_ctx():
    pytest.skip("no EGL here")

@pytest.fixture
def xvfb():
    pytest.skip("Xvfb is not installed")

def test_uses_gl(gl_ctx):
    pass

def test_uses_window(xvfb):
    pass

@pytest.mark.window
def test_declared_window():
    pytest.skip("xdotool is not installed")

def test_plain_skip():
    pytest.skip("not a gl or window test")

@pytest.mark.gl
def test_needs_an_extra():
    pytest.skip("optional extra not installed: needs panda3d")
'''


@pytest.fixture
def scratch(pytester, monkeypatch):
    monkeypatch.delenv("CULLING_REQUIRE_INSTALLED", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_skips=SKIPPING_TESTS)
    return pytester


@pytest.mark.parametrize("ci", ["true", "1"])
def test_gl_and_window_skips_fail_in_ci(scratch, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    result = scratch.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2, failed=1, skipped=2)   # the plain skip and the missing extra
    result.stdout.fnmatch_lines(["*a gl test skipped in CI, where it must run*no EGL here*",
                                 "*a window test skipped in CI, where it must run*Xvfb is not installed*"])


@pytest.mark.parametrize("ci", [None, "", "0", "false"])
def test_they_skip_outside_ci(scratch, monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    scratch.runpytest("-p", "no:cacheprovider").assert_outcomes(skipped=5)


def test_markers_follow_the_fixtures(scratch, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    scratch.runpytest("-p", "no:cacheprovider", "-m", "gl").assert_outcomes(skipped=2)
    scratch.runpytest("-p", "no:cacheprovider", "-m", "window").assert_outcomes(skipped=2)
    scratch.runpytest("-p", "no:cacheprovider", "-m", "not gl and not window").assert_outcomes(skipped=1)


def test_require_installed_refuses_a_checkout(pytester, monkeypatch):
    """Here culling comes from the checkout (pythonpath "."), so the session must refuse to start."""
    import culling

    monkeypatch.setenv("CULLING_REQUIRE_INSTALLED", "1")
    monkeypatch.setenv("PYTHONPATH", str(Path(culling.__file__).resolve().parents[1]))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*CULLING_REQUIRE_INSTALLED is set but culling was imported from*"])



GROUPED_TESTS = """
import pytest

@pytest.fixture
def xvfb():
    pass

""" + "".join(f"""
def test_window_{i}(xvfb):
    pass

@pytest.mark.ray
def test_ray_{i}():
    pass

def test_plain_{i}():
    pass
""" for i in range(6)) + """
@pytest.mark.window
@pytest.mark.xdist_group("own")
def test_own_group():
    pass
"""


def test_window_and_ray_tests_each_run_on_one_worker(pytester, monkeypatch):
    """Under pytest-xdist (pyproject: -n auto --dist loadgroup) the window tests run on one worker, the Ray
    tests on one worker; a test that names its own group keeps it.  (Whatever the pytest version: from
    pytest 9.2 pytest-xdist's own hand-over of the groups does nothing, pytest-dev/pytest-xdist#1386.)"""
    pytest.importorskip("xdist")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_grouped=GROUPED_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v")
    result.assert_outcomes(passed=19)
    worker = {}   # test name -> the worker that ran it
    for line in result.stdout.lines:
        if line.startswith("[gw") and " PASSED " in line:
            worker[line.split("::")[-1].split("@")[0].strip()] = line.split("]")[0].lstrip("[")
    assert len(worker) == 19, result.stdout.lines
    for kind in ("window", "ray"):
        assert len({worker[f"test_{kind}_{i}"] for i in range(6)}) == 1, (kind, worker)
    assert len(set(worker.values())) == 2, worker   # the rest spread over both workers


def test_without_xdist_the_group_marker_is_known(pytester, monkeypatch):
    """Where pytest-xdist is not installed (or is disabled) the groups mean nothing, and --strict-markers
    still accepts them."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_grouped=GROUPED_TESTS)
    pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist", "--strict-markers").assert_outcomes(passed=19)
