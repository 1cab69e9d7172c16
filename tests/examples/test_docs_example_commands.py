"""The docs' commands that run the examples (tests/test_docs_commands.py reads and lists them all).

They need the ``examples`` extra, as the other tests here do: without it they skip, unless
``CULLING_REQUIRE_EXAMPLES`` is set, where that fails (``.ci/run`` installs the extra and sets it
before it runs ``tests/examples``).
"""

from __future__ import annotations

import pytest

from tests.examples.test_engine_examples import NEEDS, _need
from tests.test_docs_commands import TO_RUN, needs_examples, run_command

EXAMPLE_COMMANDS = [c for c in TO_RUN if needs_examples(c)]

pytestmark = pytest.mark.gl   # renders offscreen (EGL; Vulkan for pygfx): never skipped in CI


@pytest.mark.parametrize("command", EXAMPLE_COMMANDS)
def test_the_example_command_runs_as_written(command):
    for name in NEEDS:
        _need(name)
    run_command(command)
