"""Culling tests run with NumPy's RuntimeWarnings as errors.

The library must not leak overflow/underflow/invalid warnings on extreme
input: it decides such cases itself.  The root conftest also sets
``np.seterr(all="raise")``; this catches what ``seterr`` does not govern.
"""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/culling" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.filterwarnings("error::RuntimeWarning"))
