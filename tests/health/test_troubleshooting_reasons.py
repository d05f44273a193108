"""Every condition reason the operator reports is explained in docs/troubleshooting.md, under the
condition that carries it; docs/status.md names every domain-condition and Event reason, and the docs'
reason tables name no reason the catalogue (federator.reasons) lacks. The Debian packages these tests need
are installed by the project's script."""

from __future__ import annotations

import re
import subprocess

import pytest

from federator.reasons import BY_CONDITION as REASONS
from federator.reasons import CATALOGUE, DOMAIN, EVENTS
from support.resources import ROOT


def sections() -> dict[str, str]:
    text = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    return {part.split("\n", 1)[0]: part for part in parts[1:]}


@pytest.mark.parametrize(("condition", "reason"), [(c, r) for c, rs in REASONS.items() for r in rs])
def test_reason_is_explained_under_its_condition(condition: str, reason: str) -> None:
    [section] = [body for title, body in sections().items() if title.startswith(f"{condition}=True")]
    row = re.search(rf"^\| `{reason}` \|", section, flags=re.MULTILINE)
    assert row, f"{reason} is not explained under {condition}=True"


def test_system_packages_script_reports_nothing_missing() -> None:
    script = ROOT / "tools" / "install-system-packages"
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=10)
    done = subprocess.run([str(script), "--check"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"run tools/install-system-packages: {done.stderr}"


def _first_cells(text: str, header: str) -> list[str]:
    """The reasons named in the first column of every table whose header row starts with ``header``."""
    found, in_table = [], False
    for line in text.splitlines():
        if line.startswith(header):
            in_table = True
        elif in_table and line.startswith("|") and not line.startswith("|---"):
            found += re.findall(r"`([A-Za-z]+)`", line.split("|")[1])
        elif not line.startswith("|"):
            in_table = False
    return found


@pytest.mark.parametrize(
    ("doc", "header"), [("status.md", "| Ready reason |"), ("troubleshooting.md", "| Reason |")]
)
def test_the_reason_tables_name_only_catalogued_reasons(doc: str, header: str) -> None:
    named = _first_cells((ROOT / "docs" / doc).read_text(encoding="utf-8"), header)
    assert len(named) > 20, f"the reason tables of {doc} are found"
    assert sorted(set(named) - CATALOGUE) == []


@pytest.mark.parametrize("reason", sorted({r for rs in DOMAIN.values() for r in rs} | set(EVENTS)))
def test_domain_condition_and_event_reasons_are_documented(reason: str) -> None:
    assert f"`{reason}`" in (ROOT / "docs" / "status.md").read_text(encoding="utf-8")
