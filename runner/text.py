"""Text for one line of a message, a log or a report: `one_line`.

Shared by the runner and the bot, so that an error reads the same wherever it
is shown.
"""

from __future__ import annotations

__all__ = ["ELLIPSIS", "one_line"]

ELLIPSIS = "…"


def one_line(what: BaseException | str, limit: int | None = 300) -> str:
    """`what` as one line of at most `limit` characters (None: no limit).

    The rule, for every caller:

    - the text is `str(what)`; an exception whose text is blank reads as its
      type's name (`TimeoutError`), so an error never says nothing;
    - every run of whitespace, line breaks included, becomes one space, and
      the ends are stripped: nothing after a line break is lost;
    - text longer than `limit` is cut to `limit - 1` characters, trailing
      space dropped, and ends with `…`: the result never exceeds `limit`.
    """
    line = " ".join(str(what).split())
    if not line and isinstance(what, BaseException):
        line = type(what).__name__
    if limit is None or len(line) <= limit:
        return line
    return line[: max(limit - 1, 0)].rstrip() + ELLIPSIS
