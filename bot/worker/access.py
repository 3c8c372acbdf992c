"""Who may run Neo, or stop it: the requester's role, allow-listed bots, and the replies.

`authorised` is the rule, pure; `Access` asks GitHub what the rule needs
(the author's role on the repository).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import RepoConfig
from bot.github.client import RepoClient
from bot.jobs import JobRequest

__all__ = [
    "Access",
    "authorised",
    "is_unchecked",
    "unauthorised_run",
    "unauthorised_stop",
    "user_authorised",
]


def is_unchecked(request: JobRequest, bot: str) -> bool:
    """A thread-less job by Neo itself or nobody: the repository's own files asked."""
    if request.thread.number != 0:
        return False
    return not request.author or request.author.lower() == bot.lower()


def authorised(
    request: JobRequest,
    *,
    level: str | None,
    allowed: Sequence[str],
    bots: Sequence[str],
    bot: str,
) -> bool:
    """Whether the request's author may have Neo work here.

    A user needs a role in `allowed`; a bot must be listed in `bots` (the
    config's and the worker's together) and never be Neo itself.
    """
    if is_unchecked(request, bot):
        return True
    author = request.author
    if author.lower().endswith("[bot]"):
        listed = {name.lower() for name in bots}
        return author.lower() in listed and author != bot
    return user_authorised(level, allowed)


def user_authorised(level: str | None, allowed: Sequence[str]) -> bool:
    """Whether a person whose role here is `level` may have Neo work (or stop it, or
    steer it, from a comment or the run page): a role `allowed_users` lists."""
    return level in allowed


def unauthorised_run(request: JobRequest, allowed: Sequence[str], source: str) -> str:
    roles = ", ".join(allowed)
    return (
        f"Sorry @{request.author}, Neo only works for people with {roles} access to this "
        f"repository (set by `allowed_users` in {source}). Nothing was run."
    )


def unauthorised_stop(
    request: JobRequest, allowed: Sequence[str], source: str, *, verb: str = "stop"
) -> str:
    """The reply to a stop (or, `verb`, a steer) by someone who may not start a run."""
    roles = ", ".join(allowed)
    return (
        f"Sorry @{request.author}, only people with {roles} access to this repository can"
        f" {verb} Neo's work (set by `allowed_users` in {source}). The work goes on."
    )


@dataclass(frozen=True, slots=True)
class Access:
    """The rule with what it reads from GitHub; `allowed_bots` are the worker's own."""

    allowed_bots: frozenset[str] = frozenset()

    async def permission(self, github: RepoClient, request: JobRequest) -> str | None:
        """The author's role on the repository, when a role decides (a user's request)."""
        if is_unchecked(request, github.bot_login) or request.author.lower().endswith("[bot]"):
            return None
        return await github.permission(request.author)

    def authorised(
        self, request: JobRequest, level: str | None, config: RepoConfig, bot: str
    ) -> bool:
        """Whether the author may have Neo work here, by `config`'s `allowed_users`
        and `allowed_bots` and the worker's own bots."""
        return authorised(
            request,
            level=level,
            allowed=config.allowed_users,
            bots=(*config.allowed_bots, *self.allowed_bots),
            bot=bot,
        )
