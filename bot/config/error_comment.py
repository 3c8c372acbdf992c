"""The comment Neo posts, instead of running, when `.github/neo.yml` is invalid.

Pure Markdown from a `RepoConfigError`; text from the file appears only in
code spans, so it can neither format the comment nor mention anyone.
"""

from __future__ import annotations

import re

from bot.config.loading import RepoConfigError
from bot.github.markers import CONFIG_ERROR_MARKER
from runner.text import one_line

__all__ = ["REFERENCE_PATH", "render_config_error"]

# Where `bot.config.reference` writes the reference in Neo's own repository.
REFERENCE_PATH = "docs/configuration.md"


def _code_span(text: str, limit: int = 300) -> str:
    """`text` as inline code: one line, shortened, safe whatever backticks it holds."""
    text = one_line(text, limit)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def render_config_error(error: RepoConfigError, *, reference_url: str = REFERENCE_PATH) -> str:
    """The Markdown of the one comment Neo posts, instead of running, for an invalid file.

    `reference_url` should be an absolute link to Neo's `docs/configuration.md`
    when one is known: a relative link resolves against the commenting page.
    """
    where = []
    if error.field is not None:
        where.append(f"- **Setting:** {_code_span(error.field)}")
    if error.line is not None:
        where.append(f"- **Line:** {error.line}")
    where.append(f"- **Problem:** {_code_span(error.problem)}")
    return "\n".join(
        [
            CONFIG_ERROR_MARKER,
            f"**Neo did not run:** {_code_span(error.source)} on the default branch is invalid.",
            "",
            *where,
            "",
            "Nothing ran. Fix the file on the default branch, then ask again; every setting "
            f"is described in the [configuration reference]({reference_url}).",
        ]
    )
