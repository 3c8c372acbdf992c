"""Reading a test run's output into per-test outcomes, and SWE-bench's grading rule. Pure.

Each runner's own report, as it prints it:

- pytest with `-rA`: the short summary's `PASSED path::test` / `FAILED path::test - why` lines;
- `go test -json`: one JSON event per line; a test's id is its name (`TestX/sub`);
- `node --test --test-reporter=tap`: TAP, subtests nested by indentation; a test's
  id is its names from the outermost suite joined by " > ", a file's own wrapper left out.

A test the output does not mention did not pass: a module that fails to
import takes its tests with it, and they count as failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Grade", "Outcome", "grade", "parse"]

Outcome = Literal["passed", "failed", "skipped"]

# A test id, its parameters in brackets (which may hold " - "), then " - why" for a failure.
_PYTEST_LINE = re.compile(
    r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) ([^\s\[]+(?:\[.*?\](?= - |$))?)(?: - .*)?$"
)
_PYTEST_OUTCOMES: dict[str, Outcome] = {
    "PASSED": "passed",
    "XFAIL": "passed",  # an expected failure is the test's own verdict that all is well
    "FAILED": "failed",
    "ERROR": "failed",
    "XPASS": "failed",
    "SKIPPED": "skipped",
}
_TAP_SUBTEST = re.compile(r"^(\s*)# Subtest: (.*)$")
_TAP_RESULT = re.compile(r"^(\s*)(ok|not ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$")
_SCRIPT = re.compile(r"\.(?:[cm]?js|ts)$")


def parse(runner: str, output: str) -> dict[str, Outcome]:
    """Each test's outcome in `output`, the report of `runner` (pytest, go, node)."""
    if runner == "pytest":
        return _pytest(output)
    if runner == "go":
        return _go(output)
    if runner == "node":
        return _tap(output)
    raise ValueError(f"unknown test runner {runner!r}")


def _pytest(output: str) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    for line in output.splitlines():
        match = _PYTEST_LINE.match(line)
        if match is None:
            continue
        # A skip's own line ("SKIPPED [1] path:line: reason") names no test: no match.
        word, ident = match.groups()
        found[ident] = _worse(found.get(ident), _PYTEST_OUTCOMES[word])
    return found


def _go(output: str) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        test, action = event.get("Test"), event.get("Action")
        if not isinstance(test, str) or action not in ("pass", "fail", "skip"):
            continue
        outcome: Outcome = "passed" if action == "pass" else "failed"
        if action == "skip":
            outcome = "skipped"
        found[test] = _worse(found.get(test), outcome)
    return found


def _tap(output: str) -> dict[str, Outcome]:
    found: dict[str, Outcome] = {}
    # (indent, name) of the subtests open around the current line.
    stack: list[tuple[int, str]] = []
    for line in output.splitlines():
        if match := _TAP_SUBTEST.match(line):
            indent = len(match.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, match.group(2).strip()))
            continue
        match = _TAP_RESULT.match(line)
        if match is None:
            continue
        indent = len(match.group(1))
        while stack and stack[-1][0] > indent:
            stack.pop()
        names = [name for _, name in stack[:-1]]
        names.append(_unescape(match.group(3).strip()))
        if stack and stack[-1][0] == indent:
            stack.pop()
        ident = " > ".join(name for name in names if not _SCRIPT.search(name))
        if not ident:
            continue  # a file's wrapper: its tests are reported on their own
        outcome: Outcome = "passed" if match.group(2) == "ok" else "failed"
        if match.group(4) == "SKIP":
            outcome = "skipped"
        found[ident] = _worse(found.get(ident), outcome)
    return found


def _unescape(name: str) -> str:
    return name.replace("\\#", "#").replace("\\\\", "\\")


def _worse(before: Outcome | None, now: Outcome) -> Outcome:
    """Two results for one id (a name used twice): a failure wins, then a pass."""
    ranks = {"failed": 2, "passed": 1, "skipped": 0}
    return now if before is None or ranks[now] > ranks[before] else before


@dataclass(frozen=True, slots=True)
class Grade:
    """How the hidden tests went, by SWE-bench's rule."""

    resolved: bool
    # The ids that should have passed and did not, for each list.
    fail_to_pass_failed: tuple[str, ...]
    pass_to_pass_failed: tuple[str, ...]


def grade(
    outcomes: Mapping[str, Outcome],
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
) -> Grade:
    """Resolved when every FAIL_TO_PASS and every PASS_TO_PASS test passed."""
    f2p = tuple(ident for ident in fail_to_pass if outcomes.get(ident) != "passed")
    p2p = tuple(ident for ident in pass_to_pass if outcomes.get(ident) != "passed")
    return Grade(not f2p and not p2p, f2p, p2p)
