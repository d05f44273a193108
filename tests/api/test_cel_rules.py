"""Every CEL rule of the CRDs compiles, and every rule's message is produced by some invalid manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import celpy
import pytest

from federator.crds.generate import crd
from federator_contract.api.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]


def _rules(node: dict[str, Any]) -> list[dict[str, str]]:
    found = list(node.get("x-kubernetes-validations", []))
    for sub in node.get("properties", {}).values():
        found += _rules(sub)
    if "items" in node:
        found += _rules(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        found += _rules(node["additionalProperties"])
    return found


ALL_RULES = [r for k in KINDS for r in _rules(crd(k)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])]


@pytest.mark.parametrize("rule", sorted({r["rule"] for r in ALL_RULES}))
def test_rule_compiles(rule: str) -> None:
    env = celpy.Environment()
    env.program(env.compile(rule))


def test_every_rule_message_is_exercised_by_a_test() -> None:
    corpus = " ".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "tests" / "manifests" / "invalid").glob("*.yaml")
    )
    transition_tests = (ROOT / "tests" / "validation" / "test_rules.py").read_text(encoding="utf-8")
    untested = sorted(
        {
            r["message"]
            for r in ALL_RULES
            if r["message"] not in corpus and r["message"] not in transition_tests
        }
    )
    assert untested == [], "add a corpus file (or a transition test in test_rules.py) for each"
