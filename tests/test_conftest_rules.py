"""The test suite's own rules (tests/conftest.py), run in a scratch pytest session.

In CI a skipped ``gl`` or ``window`` test is a failure; the markers follow the
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
    result.assert_outcomes(errors=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*a gl test skipped in CI, where it must run*no EGL here*",
                                 "*a window test skipped in CI, where it must run*Xvfb is not installed*"])


@pytest.mark.parametrize("ci", [None, "", "0", "false"])
def test_they_skip_outside_ci(scratch, monkeypatch, ci):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    scratch.runpytest("-p", "no:cacheprovider").assert_outcomes(skipped=4)


def test_markers_follow_the_fixtures(scratch, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    scratch.runpytest("-p", "no:cacheprovider", "-m", "gl").assert_outcomes(skipped=1)
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
