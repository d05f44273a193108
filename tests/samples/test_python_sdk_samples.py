"""The Azure SDK for Python's published samples, unmodified, against the emulator (``tools/run-sdk-samples``,
docs/emulator.md): none fails; those that need something other than Event Hubs, Service Bus and Blob
Storage are listed as not run, with their reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [
    pytest.mark.full(why="about a hundred samples, each a process of its own: 10+ minutes"),
    pytest.mark.timeout(3600),
]


def test_every_published_sample_runs_against_the_emulator_or_is_listed_with_its_reason(
    run_samples: Callable[..., list[dict[str, Any]]],
) -> None:
    results = run_samples("--only", "*.py")
    assert sum(result["passed"] for result in results) > len(results) / 2, "most samples run"
