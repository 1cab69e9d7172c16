"""One local Ray cluster for the server tests (``ray.init(num_cpus=2)``: starting one costs seconds).

Every test that uses :func:`ray_cluster` is marked ``ray``: in CI a skip
(Ray not installed) is a failure (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        # The actors import server/ and culling/ from the checkout, as the tests do.
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    if started:
        ray.shutdown()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()) and item.get_closest_marker("ray") is None:
            item.add_marker(pytest.mark.ray)
