"""Shared test set-up: seeded randomness, floating-point errors that raise, one EGL context.

Rendering tests (engine and demo) draw real frames on Mesa's llvmpipe through
EGL (no display, no GPU needed).  If EGL cannot give an OpenGL 3.3 context at
all, every test that asks for ``gl_ctx`` is skipped with the reason.
"""

import os

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
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


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
    try:
        import moderngl

        ctx = moderngl.create_standalone_context(backend="egl", require=330)
    except Exception as exc:  # no libEGL, no Mesa driver, no 3.3 support
        pytest.skip(f"no OpenGL 3.3 context on EGL (install libegl1 libegl-mesa0 libgl1-mesa-dri): {exc}")
    yield ctx
    ctx.release()
