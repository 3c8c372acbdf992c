"""bot.github.core from tables: what an answer means, and how long to wait."""

from __future__ import annotations

import json

import pytest

from bot.github.core import (
    GHES_API_VERSION,
    SECONDARY_WAIT,
    Retry,
    RetryPolicy,
    api_version,
    classify,
    github_message,
    header_seconds,
    next_link,
    retry_wait,
)
from bot.github.errors import GitHubError

NOW = 1_700_000_000.0
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes."


def body(message: str | None = None, **extra: object) -> bytes:
    return json.dumps({"message": message, **extra} if message is not None else extra).encode()


@pytest.mark.parametrize(
    ("raw", "reason", "expected"),
    [
        (body("Not Found"), "Not Found", "Not Found"),
        (
            body(
                "Validation Failed",
                errors=[
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": "A pull request already exists for octo:neo/issue-1.",
                    }
                ],
            ),
            "",
            "Validation Failed: A pull request already exists for octo:neo/issue-1.",
        ),
        (
            body(
                "Validation Failed",
                errors=[{"resource": "Issue", "field": "title", "code": "missing_field"}],
            ),
            "",
            "Validation Failed: Issue title missing_field",
        ),
        (
            body("Validation Failed", errors=["first", "second"]),
            "",
            "Validation Failed: first; second",
        ),
        (body("  two\n lines  "), "", "two lines"),
        (b"<html>bad gateway</html>", "Bad Gateway", "Bad Gateway"),
        (b"", "", "error"),
        (body("x" * 300), "", "x" * 199 + "…"),
    ],
)
def test_github_message(raw: bytes, reason: str, expected: str) -> None:
    assert github_message(raw, reason) == expected


@pytest.mark.parametrize(
    ("status", "headers", "message", "wait"),
    [
        (502, {}, "Server Error", None),  # retried, the backoff decides
        (503, {"Retry-After": "7"}, "Unavailable", 7.0),
        (429, {}, "Too many", None),
        (403, {"retry-after": "30"}, "Forbidden", 30.0),
        (403, {}, SECONDARY, SECONDARY_WAIT),
        (429, {}, SECONDARY, SECONDARY_WAIT),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW + 90)}, "limit", 90.0),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(NOW - 5)}, "limit", 0.0),
        (403, {"x-ratelimit-remaining": "0"}, "limit", SECONDARY_WAIT),
        (403, {"retry-after": "soon"}, "Resource not accessible by integration", "final"),
        (404, {}, "Not Found", "final"),
        (422, {}, "Validation Failed", "final"),
    ],
)
def test_classify(status: int, headers: dict[str, str], message: str, wait: object) -> None:
    decision = classify("GET", "/repos/o/r", status, headers, body(message), now=NOW)
    if wait == "final":
        assert isinstance(decision, GitHubError)
        assert decision.status == status
        assert str(decision) == f"github {status} GET /repos/o/r: {message}"
    else:
        assert isinstance(decision, Retry)
        assert decision.wait == wait
        assert decision.error.status == status


POLICY = RetryPolicy(max_attempts=4, base_delay=1.0, max_wait=120.0)


@pytest.mark.parametrize(
    ("attempt", "asked", "expected"),
    [
        (1, None, 1.0),
        (2, None, 2.0),
        (3, None, 4.0),
        (1, 30.0, 30.0),  # GitHub's wait wins over a shorter backoff
        (3, 0.0, 4.0),  # and the backoff over a shorter one of GitHub's
        (4, None, "give up"),  # the last attempt failed
        (1, 121.0, "too long"),
    ],
)
def test_retry_wait(attempt: int, asked: float | None, expected: object) -> None:
    error = GitHubError("github 502 GET /x: Server Error", status=502)
    wait = retry_wait(POLICY, attempt, Retry(error, asked))
    if expected == "give up":
        assert wait is error
    elif expected == "too long":
        assert isinstance(wait, GitHubError)
        assert str(wait).endswith("(GitHub asks to wait 121 s)")
        assert wait.status == 502
    else:
        assert wait == expected


def test_the_backoff_never_exceeds_the_cap() -> None:
    error = GitHubError("github 502 GET /x: Server Error", status=502)
    assert retry_wait(RetryPolicy(max_attempts=20, max_wait=10.0), 10, Retry(error)) == 10.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("5", 5.0), ("1.5", 1.5), ("-3", 0.0), ("soon", None), ("nan", None)],
)
def test_header_seconds(value: str | None, expected: float | None) -> None:
    assert header_seconds(value) == expected


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        (None, None),
        ("", None),
        (
            '<https://h/x?page=2>; rel="next", <https://h/x?page=5>; rel="last"',
            "https://h/x?page=2",
        ),
        (
            '<https://h/x?page=1>; rel="prev", <https://h/x?page=3>; rel="next"',
            "https://h/x?page=3",
        ),
        (
            '<https://h/x?page=1>; rel="first", <https://h/x?page=1>; rel="prev"',
            None,
        ),
        ("<https://h/x?page=2>; rel=next", "https://h/x?page=2"),
        ('<https://h/x?page=2>; title="t"; rel="next"', "https://h/x?page=2"),
        ('<https://h/x?page=2>; rel="nextish"', None),
    ],
)
def test_next_link(link: str | None, expected: str | None) -> None:
    assert next_link(link) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.github.com", None),
        ("https://API.github.com/", None),
        ("https://ghe.example.com/api/v3", GHES_API_VERSION),
        ("http://127.0.0.1:8080/api/v3", GHES_API_VERSION),
    ],
)
def test_api_version(url: str, expected: str | None) -> None:
    assert api_version(url) == expected
