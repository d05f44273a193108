"""The Azure SDK for JavaScript's published samples, unmodified, against the emulator (``tools/run-sdk-samples
--only '*.js'``, docs/emulator.md): none fails; those that need something other than Event Hubs, Service Bus
and Blob Storage are listed as not run, with their reason.

The samples are not in the npm packages and the project keeps no copy: the runner clones them from the SDK
repository at the pinned versions' tags, or takes them from a checkout named by ``FEDERATOR_JS_SAMPLES``.
Where neither is possible the runner says why in a "javascript samples" row, and the test is skipped with
that reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [
    pytest.mark.full(why="twenty samples, each a Node process, some running until stopped: 4+ minutes"),
    pytest.mark.timeout(3600),
]

CHECKOUT = os.environ.get("FEDERATOR_JS_SAMPLES")


def test_every_published_javascript_sample_runs_against_the_emulator_or_is_listed_with_its_reason(
    run_samples: Callable[..., list[dict[str, Any]]],
) -> None:
    results = run_samples("--only", "*.js", *(["--js-samples", CHECKOUT] if CHECKOUT else []))
    missing = [result["detail"] for result in results if result["sample"] == "javascript samples"]
    if missing:
        pytest.skip(f"the JavaScript samples could not be had here: {missing[0]}")
    assert results, "the SDK repository's samples folders hold JavaScript samples"
    assert all(result["sample"].startswith("js-") for result in results)
    assert sum(result["passed"] for result in results) > len(results) / 2, "most samples run"
