"""GitHub's answers as data: the error a failed one means, whether and when to retry.

Pure functions, no I/O and no clock (the caller passes `now`), so the rules are
tested from tables; `bot.github.client` is the shell that sends and sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import httpx

from bot.github.errors import GitHubError
from runner.text import one_line

__all__ = [
    "DEFAULT_API_URL",
    "FAILED_CONCLUSIONS",
    "GHES_API_VERSION",
    "SECONDARY_WAIT",
    "Retry",
    "RetryPolicy",
    "api_version",
    "classify",
    "connection_failure",
    "github_message",
    "header_seconds",
    "next_link",
    "retry_wait",
    "web_url",
]

# github.com's REST API; GitHub Enterprise Server's is another URL.
DEFAULT_API_URL: Final = "https://api.github.com"
# Check and workflow conclusions that say the code is wrong (CI went red);
# cancelled, neutral, skipped and action_required say nothing about it.
FAILED_CONCLUSIONS: Final = frozenset({"failure", "timed_out"})
# GitHub: "wait for at least one minute" when no header says how long.
SECONDARY_WAIT: Final = 60.0
# The one REST API version every GitHub Enterprise Server since 3.9 documents;
# githubkit's generated calls send its newest schema's, which only github.com knows.
GHES_API_VERSION: Final = "2022-11-28"
_DOTCOM_HOSTS: Final = frozenset({"api.github.com"})
_MAX_MESSAGE = 200


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transient failures are retried: attempts in all, backoff, the longest wait."""

    max_attempts: int = 5
    base_delay: float = 1.0  # doubled on every further attempt
    max_wait: float = 120.0  # a longer wait asked for by GitHub fails instead


@dataclass(frozen=True, slots=True)
class Retry:
    """A failure worth retrying after `wait` seconds (None: the backoff decides)."""

    error: GitHubError
    wait: float | None = None


def _detail(item: object) -> str | None:
    """One entry of a validation error's `errors`: its message, else field and code."""
    if isinstance(item, str):
        return item.strip() or None
    if not isinstance(item, Mapping):
        return None
    message = item.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    parts = [item.get(key) for key in ("resource", "field", "code")]
    words = [part for part in parts if isinstance(part, str) and part]
    return " ".join(words) or None


def github_message(body: bytes, reason: str = "") -> str:
    """GitHub's one-line message in an error body, with a validation error's details.

    A 422 says "Validation Failed" at the top and what failed in `errors[].message`
    ("A pull request already exists for octo:neo/issue-1."); both are kept.
    """
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    if not isinstance(data, Mapping):
        return reason or "error"
    message = data.get("message")
    top = message.strip() if isinstance(message, str) else ""
    errors = data.get("errors")
    details = [d for d in map(_detail, errors if isinstance(errors, list) else []) if d]
    text = ": ".join(part for part in (top, "; ".join(details)) if part)
    return one_line(text, _MAX_MESSAGE) if text else (reason or "error")


def header_seconds(value: str | None) -> float | None:
    """A header's number of seconds (`retry-after`, `x-ratelimit-reset`); None if not one."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(seconds, 0.0) if seconds == seconds else None  # NaN is no number


def classify(
    method: str,
    path: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    reason: str = "",
) -> GitHubError | Retry:
    """What a failed answer means: a GitHubError for good, or a Retry and how long to wait.

    Retried: 5xx, 429, and a 403 or 429 rate limit (GitHub's "secondary rate
    limit" message, `retry-after`, or `x-ratelimit-remaining: 0`). The wait is
    `retry-after` if given, else until `x-ratelimit-reset` (epoch seconds, hence
    `now`) when nothing remains, else a minute for a secondary limit.
    """
    lower = {name.lower(): value for name, value in headers.items()}
    message = github_message(body, reason)
    error = GitHubError(f"github {status} {method} {path}: {message}", status=status)
    retry_after = header_seconds(lower.get("retry-after"))
    exhausted = lower.get("x-ratelimit-remaining") == "0"
    secondary = "secondary rate limit" in message.lower()
    if status in (403, 429) and (retry_after is not None or exhausted or secondary):
        if retry_after is not None:
            return Retry(error, retry_after)
        reset = header_seconds(lower.get("x-ratelimit-reset"))
        if exhausted and reset is not None:
            return Retry(error, max(reset - now, 0.0))
        return Retry(error, SECONDARY_WAIT)
    if status >= 500 or status == 429:
        return Retry(error, retry_after)
    return error


def connection_failure(method: str, path: str, reason: str | None) -> Retry:
    """No answer: a timeout (`reason` None) or a connection error named `reason`."""
    what = "no answer in time" if reason is None else f"cannot connect: {reason}"
    return Retry(GitHubError(f"github: {method} {path}: {what}"))


def retry_wait(policy: RetryPolicy, attempt: int, retry: Retry) -> float | GitHubError:
    """Seconds to sleep before attempt `attempt + 1`, or the error to give up with.

    The wait is the backoff (doubling from `base_delay`) or GitHub's, whichever
    is longer, at most `max_wait`; GitHub asking for longer than that, or the
    last attempt failing, gives up.
    """
    if retry.wait is not None and retry.wait > policy.max_wait:
        return GitHubError(
            f"{retry.error} (GitHub asks to wait {retry.wait:.0f} s)", status=retry.error.status
        )
    if attempt >= policy.max_attempts:
        return retry.error
    backoff = policy.base_delay * 2.0 ** (attempt - 1)
    wait = backoff if retry.wait is None else max(retry.wait, backoff)
    return min(wait, policy.max_wait)


def next_link(link: str | None) -> str | None:
    """The `rel="next"` URL of a `Link` header; None on the last page."""
    for part in (link or "").split(","):
        target, _, params = part.partition(";")
        target = target.strip()
        if not (target.startswith("<") and target.endswith(">")):
            continue
        for param in params.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "rel" and "next" in value.strip().strip('"').split():
                return target[1:-1]
    return None


def api_version(api_url: str | httpx.URL) -> str | None:
    """The `X-GitHub-Api-Version` to send to `api_url`; None: githubkit's own.

    github.com takes githubkit's (its newest schema); GitHub Enterprise Server
    (`https://HOST/api/v3`) answers only the versions it documents.
    """
    host = httpx.URL(str(api_url)).host.lower()
    return None if host in _DOTCOM_HOSTS else GHES_API_VERSION


def web_url(api_url: str) -> str:
    """GitHub's web address for a REST API URL.

    https://api.github.com → https://github.com; GitHub Enterprise Server's
    https://HOST/api/v3 → https://HOST; GHE.com's api.SUB.ghe.com → SUB.ghe.com;
    anything else (a test's fake) → the API URL itself.
    """
    parts = urlsplit(api_url.strip().rstrip("/"))
    host = parts.netloc.lower()
    if host == "api.github.com":
        return "https://github.com"
    if host.startswith("api.") and host.endswith(".ghe.com") and not parts.path:
        return f"{parts.scheme}://{parts.netloc[4:]}"
    path = parts.path.removesuffix("/api/v3")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))
