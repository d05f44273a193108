"""Every condition reason the operator reports is explained in docs/troubleshooting.md, under the
condition that carries it; the Debian packages these tests need are installed by the project's script."""

from __future__ import annotations

import re
import subprocess

import pytest

from federator.reasons import BY_CONDITION as REASONS
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
