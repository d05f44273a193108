"""bench.fleet reports what each task added to one application beyond its smallest size, per size, and
that as a ratio of the smallest size's own figures: with ``--tasks 1,10,50``, an added idle task against a
task alone in its application, measured in the same run. Its members' pace (``--member-trigger-ms``)
goes into every shared application's settings, and a negative pace is refused naming the option."""

from __future__ import annotations

import argparse
import sys

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.fleet import member_conf, negative_interval, per_added_task

from federator_spark.scheduling import MEMBER_TRIGGER_SETTING


def idle(pss_mb: float, cpu_percent: float) -> dict[str, float]:
    return {"pss_mb": pss_mb, "cpu_percent": cpu_percent, "processes": 27}


def test_each_added_task_is_reported_beside_its_ratio_to_a_task_alone() -> None:
    sizes = {"1": idle(1000, 2.0), "10": idle(1450, 5.6), "50": idle(3450, 21.6)}

    assert per_added_task(sizes) == {
        "10": {"pss_mb": 50.0, "cpu_percent": 0.4, "of_smallest": {"pss_mb": 0.05, "cpu_percent": 0.2}},
        "50": {"pss_mb": 50.0, "cpu_percent": 0.4, "of_smallest": {"pss_mb": 0.05, "cpu_percent": 0.2}},
    }


def test_a_smallest_size_that_measured_no_cpu_has_no_ratio() -> None:
    added = per_added_task({"1": idle(1000, 0.0), "3": idle(1100, 1.0)})["3"]

    assert added["of_smallest"] == {"pss_mb": 0.05, "cpu_percent": None}


def test_the_members_pace_is_a_setting_of_every_shared_application_when_given() -> None:
    assert member_conf(argparse.Namespace(member_trigger_ms=250)) == {MEMBER_TRIGGER_SETTING: "250"}
    assert member_conf(argparse.Namespace(member_trigger_ms=None)) == {}  # the application's default


def test_a_negative_pace_is_refused_by_name() -> None:
    given = argparse.Namespace(trigger_seconds=None, member_trigger_ms=-5)

    assert negative_interval(given) == "--member-trigger-ms: 0 or more, got -5"
    assert negative_interval(argparse.Namespace(trigger_seconds=1, member_trigger_ms=0)) is None
