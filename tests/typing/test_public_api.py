"""The typed usage sample runs: what ``mypy --strict`` checks there is what the library accepts."""

import runpy
from pathlib import Path


def test_the_typed_usage_sample_runs() -> None:
    runpy.run_path(str(Path(__file__).with_name("public_api.py")), run_name="__main__")
