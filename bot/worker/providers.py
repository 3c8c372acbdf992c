"""Whether this service offers the providers a job's config asks for.

A service offers the providers whose credentials its environment holds (and
the ChatGPT sign-in stored under its `NEO_HOME`); a config naming another
gets one comment saying what is missing, before any clone or sandbox. No
GitHub, no network: the environment is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.config import RepoConfig
from runner.llm.registry import PROVIDERS, missing_credentials

__all__ = ["Unavailable", "offered", "unavailable", "unavailable_text"]


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A provider the config asks for that the environment cannot sign in to."""

    # "provider" or "fallback": the config's key that names it.
    role: str
    provider: str
    openai_auth: str
    # The variable to set, or the sign-in to store (runner.llm.registry).
    missing: str
    # Where the setting comes from, for the reader: "`.github/neo.yml`", ….
    source: str
    offered: tuple[str, ...]


def offered(env: Mapping[str, str]) -> tuple[str, ...]:
    """The providers `env` holds credentials for, as a config would name them."""
    names = [name for name in PROVIDERS if missing_credentials(name, env) is None]
    if "openai" not in names and not missing_credentials("openai", env, openai_auth="subscription"):
        names.append("openai (with openai_auth: subscription)")
    return tuple(names)


def unavailable(
    config: RepoConfig, env: Mapping[str, str], *, source: Mapping[str, str]
) -> Unavailable | None:
    """The first of the config's provider and fallback that `env` does not offer.

    `source` says where each of `provider` and `fallback` was set, e.g.
    "from `.github/neo.yml`"; a key it lacks is Neo's default.
    """
    asked = [("provider", config.provider)]
    if config.fallback is not None:
        asked.append(("fallback", config.fallback.provider))
    for role, name in asked:
        # The sign-in applies to both: the fallback's key is the service's too.
        missing = missing_credentials(name, env, openai_auth=config.openai_auth)
        if missing is not None:
            where = source.get(role, "Neo's default")
            return Unavailable(role, name, config.openai_auth, missing, where, offered(env))
    return None


def unavailable_text(problem: Unavailable) -> str:
    """The one comment, on one line: what is asked, what is missing, what to do."""
    what = "provider" if problem.role == "provider" else "fallback provider"
    signed_in = problem.provider == "openai" and problem.openai_auth == "subscription"
    auth = " with `openai_auth: subscription`" if signed_in else ""
    if problem.missing.isidentifier():
        lacks = f"it has no `{problem.missing}`"
        fix = "Ask the operator to set it"
    else:
        lacks = "it has no stored ChatGPT sign-in"
        fix = "Ask the operator to sign in with `neo login chatgpt` on its host"
    choice = (
        f", or choose one of: {', '.join(problem.offered)}"
        if problem.offered
        else "; it offers no provider yet"
    )
    return (
        f"Neo did not run: the {what} `{problem.provider}`{auth} ({problem.source}) "
        f"is not offered by this Neo service: {lacks}. {fix}{choice}."
    )
