"""The suite's two tiers. ``./dev test`` (CI, the README's command) runs every test except those marked
``full``; ``./dev test --full`` runs them too, and the tests that scale with the tier
(the ``in_full_tier`` fixture, hypothesis' profile) take their long form: longer outages, more property
examples.

A test is in the full tier only by ``@pytest.mark.full(why="...")``, the reason it does not fit CI's
twenty minutes; a ``full`` mark without one stops the run."""

from __future__ import annotations

import pytest
from hypothesis import settings

MARKER = "full"
# Examples per property test that takes the tier's budget (tests/validation/test_never_crash.py).
PROPERTY_EXAMPLES = {"ci": 150, "full": 5000}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full", action="store_true", help="the full tier: also the tests marked `full`, in their long form"
    )


def full_tier(config: pytest.Config) -> bool:
    return bool(config.getoption("--full"))


def pytest_configure(config: pytest.Config) -> None:
    # Before the test modules are imported: hypothesis' settings take the profile loaded when made.
    tier = "full" if full_tier(config) else "ci"
    settings.register_profile(f"federator-{tier}", max_examples=PROPERTY_EXAMPLES[tier])
    settings.load_profile(f"federator-{tier}")


def why(item: pytest.Item) -> str | None:
    """The reason an item is in the full tier, or None where it is in CI's."""
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return None
    reason = mark.kwargs.get("why", "")
    if not isinstance(reason, str) or not reason.strip():
        raise pytest.UsageError(f'{item.nodeid}: @pytest.mark.{MARKER} needs why="..." (why not in CI)')
    return reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if full_tier(config):
        _scale_property_timeouts(config, items)
        return
    full_only = [item for item in items if why(item) is not None]
    if full_only:
        config.hook.pytest_deselected(items=full_only)
        kept = set(items) - set(full_only)
        items[:] = [item for item in items if item in kept]


def _scale_property_timeouts(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A property test runs the full tier's examples in its time limit scaled as far: 150 spoiled manifests
    take 8 s, 5,000 take over 270 s on a quiet machine, past the suite's 300 s hang guard under load."""
    scale = PROPERTY_EXAMPLES["full"] / PROPERTY_EXAMPLES["ci"]
    limit = float(config.getini("timeout") or 0)
    properties = [item for item in items if getattr(getattr(item, "obj", None), "is_hypothesis_test", False)]
    for item in properties:
        if limit and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(limit * scale))


@pytest.fixture(scope="session")
def in_full_tier(request: pytest.FixtureRequest) -> bool:
    """Whether this run is the full tier: tests that scale with it take their long form."""
    return full_tier(request.config)
