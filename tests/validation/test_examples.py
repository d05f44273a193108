"""The examples are valid, and there is one for every pattern Federator supports."""

from __future__ import annotations

from pathlib import Path

import yaml

from federator.validation import validate_files

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_example_validates() -> None:
    outcomes = validate_files(sorted(EXAMPLES.glob("*.yaml")))
    checked = [o for o in outcomes if not o.skipped]
    assert checked, "no examples found"
    assert [(o.label, [str(p) for p in o.problems]) for o in checked if not o.ok] == []


def _federator_objects() -> list[dict]:
    objects = []
    for path in EXAMPLES.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and str(doc.get("apiVersion", "")).startswith("federator.io/"):
                objects.append(doc)
    return objects


def test_examples_cover_every_pattern() -> None:
    objects = _federator_objects()
    tasks = [o["spec"] for o in objects if o["kind"] == "ReplicationTask"]
    mirrors = {o["spec"]["pattern"] for o in objects if o["kind"] == "ServiceBusMirror"}
    assert mirrors == {"allActive", "activePassive", "spillover"}
    assert any(o["kind"] == "FailoverGroup" for o in objects)
    assert any("loopPrevention" in t for t in tasks), "merge"
    assert any(len(t.get("editors", [])) >= 3 for t in tasks), "editor chain"
    assert any(any("condition" in tg for tg in t["targets"]) and "unrouted" in t for t in tasks), "routing"
    assert any(any("postgres" in tg for tg in t["targets"]) for t in tasks), "log projection"
    assert any("eventHub" in t["source"] and any("serviceBus" in tg for tg in t["targets"]) for t in tasks)
    assert any("serviceBus" in t["source"] and any("eventHub" in tg for tg in t["targets"]) for t in tasks)
    assert any(
        "eventHub" in t["source"]
        and all("eventHub" in tg for tg in t["targets"])
        and "loopPrevention" not in t
        for t in tasks
    ), "plain Event Hubs replication"
