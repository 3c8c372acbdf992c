"""A repository's merged pull requests, newest first: what a benchmark can be built from.

Read with a user's or an installation's token (`GITHUB_TOKEN`), through the
same caller as every other read: classified, retried, paged.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import httpx
from githubkit import GitHub, TokenAuthStrategy
from githubkit_schemas.latest.models import PullRequestSimple

from bot.github.app import Borrowed, connection_pool
from bot.github.caller import Caller
from bot.github.core import api_version

__all__ = ["MergedPull", "merged_pulls"]

_PAGE = 50


@dataclass(frozen=True, slots=True)
class MergedPull:
    number: int
    title: str
    body: str
    # Where the pull request's branch started from (the base's tip as GitHub
    # last compared it) and its last commit.
    base_sha: str
    head_sha: str
    url: str


async def merged_pulls(
    repository: str, *, token: str, api_url: str = "https://api.github.com", limit: int = 20
) -> list[MergedPull]:
    """Up to `limit` merged pull requests of `repository` ("owner/name"), newest first.

    Raises GitHubError (one line) when GitHub refuses or cannot be reached.
    """
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"repository must be 'owner/name', got {repository!r}")
    url = httpx.URL(api_url)
    pool = connection_pool(url, max_connections=4)
    try:
        github: GitHub[Any] = GitHub(
            TokenAuthStrategy(token),
            base_url=url,
            user_agent="neo-bench",
            async_transport=Borrowed(pool, api_version(url)),
            http_cache=False,
            auto_retry=False,  # one retry policy: bot.github.core's, through the Caller
        )
        return await _merged(Caller(github), owner, name, limit)
    finally:
        await pool.aclose()


async def _merged(caller: Caller, owner: str, name: str, limit: int) -> list[MergedPull]:
    path = f"/repos/{owner}/{name}/pulls"
    found: list[MergedPull] = []
    pages = caller.each_page(
        path,
        lambda: caller.github.rest.pulls.async_list(
            owner, name, state="closed", sort="updated", direction="desc", per_page=_PAGE
        ),
        list[PullRequestSimple],
    )
    async with contextlib.aclosing(pages):
        async for response in pages:
            for pull in response.parsed_data:
                if pull.merged_at is None:
                    continue  # closed without merging: no fix to learn from
                found.append(
                    MergedPull(
                        number=pull.number,
                        title=pull.title,
                        body=pull.body or "",
                        base_sha=pull.base.sha,
                        head_sha=pull.head.sha,
                        url=pull.html_url,
                    )
                )
                if len(found) >= limit:
                    return found
    return found
