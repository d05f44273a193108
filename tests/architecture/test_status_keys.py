"""Status is read and written through the contract's status models only: no module of the operator, local
mode or the plugin spells a status field's wire name (camelCase) as a string. The names checked are those
of the three kinds' status models, found by walking the models, so a field added there is checked too."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

from pydantic import BaseModel

from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverGroupStatus
from federator_contract.api.replicationtask import ReplicationTaskSpec, ReplicationTaskStatus
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec, ServiceBusMirrorStatus

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = ROOT / "operator" / "federator"


def _aliases(*roots: type[BaseModel]) -> set[str]:
    """Every wire name of the models' fields, nested models included."""
    found: set[str] = set()
    seen: set[type[BaseModel]] = set()

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, info in model.model_fields.items():
            found.add(info.alias or name)
            pending = [info.annotation]
            while pending:
                annotation = pending.pop()
                pending.extend(typing.get_args(annotation))
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    walk(annotation)

    for root in roots:
        walk(root)
    return found


def status_keys() -> set[str]:
    """The camelCase wire names only a status has: a spec's names (`consumerGroup`) are read through the
    spec models anyway, and `apiVersion` is every object's."""
    status = _aliases(FailoverGroupStatus, ReplicationTaskStatus, ServiceBusMirrorStatus)
    spec = _aliases(FailoverGroupSpec, ReplicationTaskSpec, ServiceBusMirrorSpec)
    return {key for key in status - spec - {"apiVersion"} if key != key.lower()}


def spelled(path: Path, keys: set[str]) -> list[str]:
    """`line: key` for every string constant of the module that is a status key."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in keys
    ]


def by_module() -> dict[str, list[str]]:
    keys = status_keys()
    found = {str(p.relative_to(OPERATOR)): spelled(p, keys) for p in sorted(OPERATOR.rglob("*.py"))}
    return {module: lines for module, lines in found.items() if lines}


def test_the_checked_names_include_those_read_by_hand_before() -> None:
    assert {"consumerMember", "eventsBehind", "observedGeneration", "lastTransitionTime"} <= status_keys()
    assert "consumerGroup" not in status_keys()


def test_no_module_spells_a_status_key_outside_the_contract() -> None:
    assert by_module() == {}, "read or write status through the contract's status models"


def test_the_check_finds_a_status_key_in_a_module(tmp_path: Path) -> None:
    module = tmp_path / "reads.py"
    module.write_text('def member(status):\n    return status.get("consumerMember")\n', encoding="utf-8")
    assert spelled(module, status_keys()) == ["2: consumerMember"]
