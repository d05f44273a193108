"""The tiers (support/tiers.py) and the JVM lane's guard (support/jvm_guard.py), run on small suites of
their own."""

from __future__ import annotations

import pytest

CONFTEST = """
pytest_plugins = ["support.tiers", "support.jvm_guard"]

def pytest_configure(config):
    config.addinivalue_line("markers", "jvm: starts a JVM")
    config.addinivalue_line("markers", "full(why): the full tier")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A small suite of its own with the tiers and the guard."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST)
    return pytester


TIERED = """
import pytest

def test_in_ci():
    pass

@pytest.mark.full(why="long")
def test_in_the_full_tier_only():
    pass

def test_the_long_form(in_full_tier):
    assert in_full_tier
"""


def test_ci_leaves_out_the_full_tier_which_runs_everything_in_its_long_form(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_tiered=TIERED)

    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, failed=1, deselected=1)
    suite.runpytest("-p", "no:cacheprovider", "--full").assert_outcomes(passed=3)


PROPERTY = """
from hypothesis import given, strategies as st

@given(st.integers())
def test_a_property(request, value):
    mark = request.node.get_closest_marker("timeout")
    assert (mark.args[0] if mark else None) == (10_000 if request.config.getoption("--full") else None)

def test_not_a_property(request):
    assert request.node.get_closest_marker("timeout") is None
"""


def test_the_full_tier_gives_a_property_test_a_time_limit_scaled_with_its_examples(
    suite: pytest.Pytester,
) -> None:
    suite.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\ntimeout = 300\n")
    suite.makepyfile(test_property=PROPERTY)

    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
    suite.runpytest("-p", "no:cacheprovider", "--full").assert_outcomes(passed=2)  # 300 s * 5,000 / 150


def test_a_full_mark_without_its_reason_stops_the_run(suite: pytest.Pytester) -> None:
    suite.makepyfile("import pytest\n\n@pytest.mark.full\ndef test_unexplained():\n    pass\n")

    result = suite.runpytest("-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_unexplained*needs why=*"])


STARTS_A_JVM = """
import shutil
import subprocess

import pytest

def start_a_jvm(tmp_path):
    java = tmp_path / "java"
    shutil.copy("/bin/sleep", java)  # what the guard sees is a process named java
    subprocess.run([str(java), "2.5"], check=True)

def test_unmarked(tmp_path):
    start_a_jvm(tmp_path)

@pytest.mark.jvm
def test_marked(tmp_path):
    start_a_jvm(tmp_path)
"""


@pytest.mark.jvm  # its suite starts (what looks like) a JVM
def test_a_test_that_starts_a_jvm_without_the_marker_fails(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_jvms=STARTS_A_JVM)

    result = suite.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=2, errors=1)  # the unmarked test, at its teardown
    result.stdout.fnmatch_lines(["*test_unmarked started a JVM*without the `jvm` marker*"])
