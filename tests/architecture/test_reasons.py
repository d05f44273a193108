"""One true catalogue of reasons (operator/federator/reasons.py): every reason a condition, an Event, a
local-mode row or a planning/management error is given comes from it, and everything in it is used.

Where a reason is given is found in the source: the reason argument of `Note`, `ConditionUpdate`, the
triad's `ready` / `reconciling` / `stalled`, the state machine's `note`, local mode's `TaskRow`, the errors
`PlanningError` / `ManagementError`, `MemberOutcome`, and every `reason=` keyword. A literal there is
refused, and so is a constant some other module defines; `reasons.X` must be catalogued; anything else
passes a reason on (an error's, an update's) and was checked where it was chosen."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from federator import reasons
from federator.failover.conditions import FAILED_OVER
from federator.failover.replication import LOSSLESS_FAILOVER
from federator.reconcile.replicationtask_source import SOURCE_REACHABLE
from federator.reconcile.servicebusmirror import RULES_PROVISIONED, TASKS_READY
from federator.reconcile.taskpods import CHECKPOINT_VOLUME_SHARED
from federator_contract import appstatus

OPERATOR = Path(__file__).resolve().parents[2] / "operator" / "federator"

CATALOGUE_MODULE = OPERATOR / "reasons.py"

# Callable name → position of its reason argument.
REASON_AT = {
    "Note": 1,
    "note": 1,
    "ConditionUpdate": 2,
    "ready": 0,
    "reconciling": 0,
    "stalled": 0,
    "TaskRow": 2,
    "PlanningError": 0,
    "ManagementError": 0,
    "MemberOutcome": 2,
}


@dataclass(frozen=True)
class Given:
    """A reason argument in the source."""

    where: str
    node: ast.expr


def _modules() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(OPERATOR)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(OPERATOR.rglob("*.py"))
        if path != CATALOGUE_MODULE
    }


def _called(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _other_notes(tree: ast.Module) -> bool:
    """Whether the module's `Note` is local mode's plan note (a label and a message, no reason)."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "federator.local.model"
        and any(alias.name == "Note" and alias.asname is None for alias in node.names)
        for node in tree.body
    )


def reasons_given(modules: dict[str, ast.Module]) -> list[Given]:
    found = []
    for module, tree in modules.items():
        skipped = {"Note"} if _other_notes(tree) else set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or _called(node) in skipped:
                continue
            at = REASON_AT.get(_called(node))
            if at is not None and len(node.args) > at and not isinstance(node.args[at], ast.Starred):
                found.append(Given(f"{module}:{node.lineno}", node.args[at]))
            found += [Given(f"{module}:{node.lineno}", k.value) for k in node.keywords if k.arg == "reason"]
    return found


def module_constants(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Module-level `NAME = "text"` everywhere but the catalogue: name → the values it has."""
    found: dict[str, set[str]] = {}
    assignments = [node for tree in modules.values() for node in tree.body if isinstance(node, ast.Assign)]
    for node in assignments:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, set()).add(node.value.value)
    return found


def problems(given: list[Given], constants: dict[str, set[str]]) -> list[str]:
    out = []
    for item in given:
        node = item.node
        if isinstance(node, ast.Constant):
            out.append(f"{item.where}: the literal {node.value!r}; use federator.reasons")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "reasons"
        ):
            if getattr(reasons, node.attr, None) not in reasons.CATALOGUE:
                out.append(f"{item.where}: reasons.{node.attr} is not in the catalogue")
        else:
            name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
            if name in constants:
                out.append(
                    f"{item.where}: {name} = {sorted(constants[name])} is defined outside the catalogue"
                )
    return out


def test_every_reason_given_comes_from_the_catalogue() -> None:
    modules = _modules()
    given = reasons_given(modules)
    assert len(given) > 100, "the scan finds where reasons are given"
    assert problems(given, module_constants(modules)) == []


def _from_the_catalogue(tree: ast.Module) -> set[str]:
    """The catalogue's names a module uses: `reasons.X`, or imported from federator.reasons."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "reasons"
        ):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "federator.reasons":
            found |= {alias.name for alias in node.names}
    return found


def test_every_catalogued_reason_is_given_somewhere() -> None:
    modules = _modules()
    names = {name for tree in modules.values() for name in _from_the_catalogue(tree)}
    given = {getattr(reasons, name) for name in names if hasattr(reasons, name)}
    # The replication app reports these (federator_contract.appstatus); local mode passes them on.
    by_the_app = {appstatus.SOURCE_UNAVAILABLE, appstatus.TARGET_UNAVAILABLE, *appstatus.REFUSED.values()}
    assert sorted(reasons.CATALOGUE - given - by_the_app) == []


def test_domain_conditions_are_those_the_controllers_set() -> None:
    types = {FAILED_OVER, LOSSLESS_FAILOVER, SOURCE_REACHABLE, CHECKPOINT_VOLUME_SHARED, RULES_PROVISIONED}
    assert set(reasons.DOMAIN) == types | {TASKS_READY}


def test_the_scan_refuses_a_literal_and_a_constant_outside_the_catalogue() -> None:
    tree = ast.parse(
        'BEHIND = "Behind"\n'
        'Note("Normal", "Renamed", "m")\n'
        "ConditionUpdate(LOSSLESS, 'False', BEHIND, 'm')\n"
        "stalled(reasons.INVALID_SPEC, 'm')\n"
        "stalled(err.reason, err.message)\n"
    )
    modules = {"sample.py": tree}
    found = problems(reasons_given(modules), module_constants(modules))
    assert found == [
        "sample.py:2: the literal 'Renamed'; use federator.reasons",
        "sample.py:3: BEHIND = ['Behind'] is defined outside the catalogue",
    ]

