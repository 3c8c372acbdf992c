"""The comment Neo posts, instead of running, when `.github/neo.yml` is invalid.

Pure Markdown from a `RepoConfigError`: every problem the file has, each
with its line and setting, and an absolute link to the configuration
reference (a relative one would resolve under the issue's URL). Text from
the file appears only in code spans, so it can neither format the comment
nor mention anyone.
"""

from __future__ import annotations

import re

from bot.config.docs import docs_page
from bot.config.loading import ConfigProblem, RepoConfigError
from bot.github.markers import CONFIG_ERROR_MARKER
from runner.text import one_line

__all__ = ["MAX_PROBLEMS_SHOWN", "render_config_error"]

# A file can hold hundreds of problems (a list of wrong values); the first ones say enough.
MAX_PROBLEMS_SHOWN = 30


def _code_span(text: str, limit: int = 300) -> str:
    """`text` as inline code: one line, shortened, safe whatever backticks it holds."""
    text = one_line(text, limit)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _problem_line(problem: ConfigProblem) -> str:
    """`- Line 3, `max_turns`: `Input should be ...``; what the problem has of them."""
    where = []
    if problem.line is not None:
        where.append(f"Line {problem.line}")
    if problem.field is not None:
        where.append(_code_span(problem.field))
    head = f"{', '.join(where)}: " if where else ""
    return f"- {head}{_code_span(problem.problem)}"


def render_config_error(error: RepoConfigError, *, docs_url: str) -> str:
    """The Markdown of the one comment Neo posts, instead of running, for an invalid file.

    `docs_url` is where Neo's documentation lives (`NEO_DOCS_URL`): the
    comment links its configuration reference.
    """
    problems = error.problems
    count = len(problems)
    verdict = "is invalid" if count == 1 else f"has {count} problems"
    listed = [_problem_line(problem) for problem in problems[:MAX_PROBLEMS_SHOWN]]
    if count > MAX_PROBLEMS_SHOWN:
        listed.append(f"- … and {count - MAX_PROBLEMS_SHOWN} more")
    reference = docs_page(docs_url, "configuration.md")
    return "\n".join(
        [
            CONFIG_ERROR_MARKER,
            f"**Neo did not run:** {_code_span(error.source)} on the default branch {verdict}.",
            "",
            *listed,
            "",
            "Nothing ran. Fix the file on the default branch, then ask again; every setting "
            f"is described in [Neo's configuration reference]({reference}).",
        ]
    )
