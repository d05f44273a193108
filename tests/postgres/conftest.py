"""Log projection tests run against the real PostgreSQL server of the ``postgres_server`` fixture."""

from __future__ import annotations

import pytest
from projection_helpers import URI_ENV


@pytest.fixture
def uri(postgres_uri: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database whose URI the publishers read from the environment, as executors do."""
    monkeypatch.setenv(URI_ENV, postgres_uri)
    return postgres_uri
