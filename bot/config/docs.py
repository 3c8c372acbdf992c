"""Where Neo's own documentation lives, for the links in what Neo posts (pure).

A comment on GitHub needs absolute links: a relative one resolves under the
page it is shown on, a 404 in the user's repository. The documentation is
the `docs/` folder of Neo's repository; a fork of Neo that publishes its own
sets NEO_DOCS_URL (the service), or runs as an Action from its own
repository, whose `docs/` at the ref in use is then linked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote, urlsplit

from runner.errors import ConfigError

__all__ = ["DEFAULT_DOCS_URL", "action_docs_url", "docs_page", "docs_url_problem"]

# docs/ of Neo's repository on its main branch.
DEFAULT_DOCS_URL: Final = "https://github.com/neo-agent/neo/blob/main/docs"

# What ends a Markdown link's destination early, or cannot be in a URL as written.
_UNSAFE = re.compile(r"[\s<>()\[\]`\"'\\\x00-\x1f\x7f]")
# Where the runner unpacks `uses: OWNER/REPO@REF`: <tool dir>/_actions/OWNER/REPO/REF.
_ACTION_PATH = re.compile(r"/_actions/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+)/(.+?)/*$")


def docs_url_problem(url: str) -> str | None:
    """Why `url` cannot be the documentation's base in a Markdown link, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "must be an absolute http(s) URL, e.g. " + DEFAULT_DOCS_URL
    if _UNSAFE.search(url):
        return "must not contain spaces, quotes, brackets or parentheses"
    return None


def docs_page(base: str, page: str) -> str:
    """The absolute URL of `page` (e.g. `configuration.md`) under the documentation's `base`."""
    return f"{base.rstrip('/')}/{page}"


def action_docs_url(environ: Mapping[str, str], server_url: str) -> str:
    """The documentation an Action run links: NEO_DOCS_URL, else `docs/` of the
    repository and ref the workflow's `uses:` named (a fork's own), else Neo's.

    Raises ConfigError for a NEO_DOCS_URL no link can use.
    """
    explicit = environ.get("NEO_DOCS_URL", "").strip()
    if explicit:
        problem = docs_url_problem(explicit)
        if problem is not None:
            raise ConfigError(f"NEO_DOCS_URL: {problem}")
        return explicit
    found = _ACTION_PATH.search(environ.get("GITHUB_ACTION_PATH", "").replace("\\", "/"))
    if found is None or docs_url_problem(server_url) is not None:
        return DEFAULT_DOCS_URL
    owner, repo, ref = found.groups()
    return f"{server_url.rstrip('/')}/{owner}/{repo}/blob/{quote(ref)}/docs"
