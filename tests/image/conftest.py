"""Fixtures of the image smoke runs (marker ``images``): the built images, mounted, and the budget file.

``tools/build-images --smoke`` builds the images and runs these tests; ``./dev test`` deselects them
(``-m "not images"`` in pyproject.toml). An image that is missing fails the test: a smoke run that
skips would pass without having run anything.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

import pytest

from support.images import ImageRoot, image_exists, open_image
from support.resources import ROOT

BUDGET = ROOT / ".images" / "smoke.json"


def _tag() -> str:
    chart = (ROOT / "charts" / "federator" / "Chart.yaml").read_text(encoding="utf-8")
    match = re.search(r'^appVersion:\s*"?([^"\s]+)"?', chart, flags=re.MULTILINE)
    assert match, "Chart.yaml has no appVersion"
    return match[1]


def _image(variable: str, name: str) -> str:
    image = os.environ.get(variable) or f"ghcr.io/federator/{name}:{_tag()}"
    if os.geteuid() != 0:
        pytest.fail("the image smoke runs need root (buildah, mounts): run tools/build-images --smoke")
    if not image_exists(image):
        pytest.fail(f"{image} is not built: run tools/build-images --smoke")
    return image


@pytest.fixture(scope="module")
def operator_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ImageRoot]:
    image = _image("FEDERATOR_OPERATOR_IMAGE", "federator-operator")
    with open_image(image, tmp_path_factory.mktemp("operator-image")) as root:
        yield root


@pytest.fixture(scope="module")
def spark_image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ImageRoot]:
    image = _image("FEDERATOR_SPARK_IMAGE", "federator-spark")
    with open_image(image, tmp_path_factory.mktemp("spark-image")) as root:
        yield root


@pytest.fixture(scope="session")
def budget() -> Iterator[dict[str, float]]:
    """Start-up times of the smoke runs (seconds), written to .images/smoke.json for the build's budget."""
    times: dict[str, float] = {}
    yield times
    if times:
        BUDGET.parent.mkdir(exist_ok=True)
        previous = json.loads(BUDGET.read_text()) if BUDGET.exists() else {}
        BUDGET.write_text(json.dumps({**previous, **{k: round(v, 1) for k, v in times.items()}}, indent=1))
