"""Culling tests run with NumPy's RuntimeWarnings as errors.

The library must not leak overflow/underflow/invalid warnings on extreme
input: it decides such cases itself.  The root conftest also sets
``np.seterr(all="raise")``; this catches what ``seterr`` does not govern.
"""

import signal
from collections.abc import Callable, Iterator

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/culling" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings("error::RuntimeWarning"))


def raise_interrupt(signum: int, frame: object) -> None:
    """SIGINT's handler in the tests that interrupt: Python's default, as a function the tests can name."""
    raise KeyboardInterrupt


@pytest.fixture
def sigint_raises() -> Iterator[Callable[[int, object], None]]:
    """SIGINT raises KeyboardInterrupt (as Python's default handler does) for this test only; yields the
    handler, so a test can check that the library gave it back."""
    old = signal.signal(signal.SIGINT, raise_interrupt)
    try:
        yield raise_interrupt
    finally:
        signal.signal(signal.SIGINT, old)
