"""A tenant tries to stall a shared runtime with a LIKE pattern made for a backtracking matcher.

The emulator evaluates every subscription rule on its one reactor thread, so one slow filter stalls
every namespace it serves; the replication app evaluates routing conditions per event, with patterns that
may come from the event itself. Each attempt below is a megabyte text against a pattern that makes a
`.*`-per-'%' regex try every split of the text (`.*a.*a.*a.*b` took 2.8 s on 400 characters). Handled
means: the right answer, from the shared linear matcher (tests/sql/test_sql_like_matching.py shows the
same megabytes matching where the patterns say they do). Each runs in a child process (tenant_guard), so
that a matcher that never answers fails the test with the reason "ReDoS" instead of hanging the suite.
"""

from __future__ import annotations

import pytest
from tenant_guard import answer_of

from federator_contract.emulatorconfig import RuleConfig
from federator_contract.names import UNROUTED
from federator_contract.sql import SqlMessage
from federator_emulator.state.rules import compile_rule
from federator_spark.routing import Router

MB = 1 << 20

# (pattern, ESCAPE or None, repeated text unit): none of them matches the megabyte.
ATTEMPTS = [
    pytest.param("%a%a%a%b", None, "a", id="percent-runs"),
    pytest.param("_%_%_%b", None, "a", id="underscores-and-percents"),
    pytest.param("%a!%%a!%%a!%%b%", "!", "a%", id="escaped-percents"),
    pytest.param("%a%a%a%a%b%", None, "a", id="trailing-percent-scans-everything"),
]


def emulator_rule_verdict(pattern: str, escape: str | None, unit: str) -> bool:
    """A subscription rule as the emulator compiles it, against a message whose label is the text."""
    escape_clause = f" ESCAPE '{escape}'" if escape else ""
    rule = compile_rule(RuleConfig(name="tenant", sql_filter=f"sys.label LIKE '{pattern}'{escape_clause}"))
    return rule.filter.matches(SqlMessage(system={"Label": unit * (MB // len(unit))}))


def routed_targets(pattern: str, escape: str | None, unit: str) -> list[str]:
    """A routing condition of the replication app whose pattern (and escape) the event carries."""
    router = Router.build({"eu": "sys.label LIKE [p] ESCAPE [e]"}, has_unrouted=True)
    user = {"p": pattern, "e": escape or "\x00"}
    return router.targets(SqlMessage(system={"Label": unit * (MB // len(unit))}, user=user))


@pytest.mark.parametrize(("pattern", "escape", "unit"), ATTEMPTS)
def test_a_subscription_rule_cannot_stall_the_emulator(pattern: str, escape: str | None, unit: str) -> None:
    assert answer_of(emulator_rule_verdict, pattern, escape, unit) is False


@pytest.mark.parametrize(("pattern", "escape", "unit"), ATTEMPTS)
def test_a_pattern_an_event_carries_cannot_stall_routing(pattern: str, escape: str | None, unit: str) -> None:
    assert answer_of(routed_targets, pattern, escape, unit) == [UNROUTED]
