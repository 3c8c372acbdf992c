"""Reading each runner's report into per-test outcomes, and the grading rule (pure)."""

from __future__ import annotations

import json

import pytest

from bench.quality.results import grade, parse

# What pytest -rA prints at the end of a run (pytest 7 and 8 alike).
PYTEST = """\
============================= test session starts ==============================
collected 4 items / 1 error

tests/test_a.py .F.s                                                     [100%]

==================================== ERRORS ====================================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a - b]
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
SKIPPED [1] tests/test_a.py:9: not on this platform
XFAIL tests/test_a.py::test_known - bug 12
ERROR tests/test_b.py - ImportError: cannot import name 'x'
ERROR tests/test_c.py::test_fixture - fixture 'db' not found
=============== 1 failed, 2 passed, 1 skipped, 2 errors in 0.05s ===============
"""

# What node 18's TAP reporter printed for a file of top-level tests and a
# suite, and for a file that could not load (its wrapper, named by its path).
TAP = """\
TAP version 13
# Subtest: adds \\# things
ok 1 - adds \\# things
  ---
  duration_ms: 16.04
  ...
# Subtest: fails
not ok 2 - fails
  ---
  error: '1 == 2'
  ...
# Subtest: suite
    # Subtest: inner ok
    ok 1 - inner ok
      ---
      duration_ms: 8.7
      ...
    # Subtest: inner skip
    ok 2 - inner skip # SKIP
      ---
      ...
    1..2
ok 3 - suite
  ---
  type: 'suite'
  ...
# Subtest: /w/test/b.test.js
not ok 2 - /w/test/b.test.js
  ---
  error: 'test failed'
  ...
1..4
"""


def test_pytest_summary_lines() -> None:
    assert parse("pytest", PYTEST) == {
        "tests/test_a.py::test_one": "passed",
        "tests/test_a.py::test_param[a - b]": "passed",
        "tests/test_a.py::test_two": "failed",
        "tests/test_a.py::test_known": "passed",
        "tests/test_b.py": "failed",
        "tests/test_c.py::test_fixture": "failed",
    }


def test_pytest_without_summary_is_empty() -> None:
    assert parse("pytest", "ImportError while loading conftest\n") == {}


def test_go_json_events() -> None:
    events = [
        {"Action": "run", "Package": "example.com/x", "Test": "TestA"},
        {"Action": "output", "Package": "example.com/x", "Test": "TestA", "Output": "ok\n"},
        {"Action": "pass", "Package": "example.com/x", "Test": "TestA"},
        {"Action": "fail", "Package": "example.com/x", "Test": "TestB/sub"},
        {"Action": "skip", "Package": "example.com/x", "Test": "TestC"},
        {"Action": "fail", "Package": "example.com/x"},
    ]
    output = "\n".join(json.dumps(event) for event in events) + "\n# build failed\n{broken\n"
    assert parse("go", output) == {"TestA": "passed", "TestB/sub": "failed", "TestC": "skipped"}


def test_tap_nesting_skips_and_file_wrappers() -> None:
    assert parse("node", TAP) == {
        "adds # things": "passed",
        "fails": "failed",
        "suite > inner ok": "passed",
        "suite > inner skip": "skipped",
        "suite": "passed",
    }


def test_a_name_reported_twice_keeps_the_failure() -> None:
    output = "PASSED t.py::test_x\nFAILED t.py::test_x - flaky\nPASSED t.py::test_x\n"
    assert parse("pytest", output) == {"t.py::test_x": "failed"}


def test_unknown_runner() -> None:
    with pytest.raises(ValueError, match="unknown test runner"):
        parse("maven", "")


@pytest.mark.parametrize(
    ("outcomes", "resolved", "f2p", "p2p"),
    [
        ({"a": "passed", "b": "passed"}, True, (), ()),
        ({"a": "failed", "b": "passed"}, False, ("a",), ()),
        ({"a": "passed", "b": "failed"}, False, (), ("b",)),
        # A test the report does not mention did not pass; nor did a skipped one.
        ({"b": "passed"}, False, ("a",), ()),
        ({"a": "skipped", "b": "passed"}, False, ("a",), ()),
    ],
)
def test_grade_is_swe_bench_rule(
    outcomes: dict[str, str], resolved: bool, f2p: tuple[str, ...], p2p: tuple[str, ...]
) -> None:
    graded = grade(outcomes, ["a"], ["b"])  # type: ignore[arg-type]
    assert (graded.resolved, graded.fail_to_pass_failed, graded.pass_to_pass_failed) == (
        resolved,
        f2p,
        p2p,
    )
