"""Closing keywords Neo did not mean, made inert in plain text such as a commit message (pure).

GitHub closes an issue when a commit that reaches the default branch (or a
pull request's description, or a squash merge's message, which is built
from the pull request's title) says `Fixes #1`: one of close, closes,
closed, fix, fixes, fixed, resolve, resolves, resolved, in any case, a colon
allowed after it, then whitespace and the reference (`#1`, `GH-1`,
`owner/repo#1`, or an issue's URL). Text Neo copies into such a place from
elsewhere (an issue's title, the model's summary) would close an issue
nobody asked Neo to close.

`inert_closing_keywords` names each such reference as an issue: `Fixes #1
crash` becomes `Fixes issue #1 crash`. GitHub needs the reference right
after the keyword, so this no longer closes anything; a reader reads the
same words, and a terminal shows no invisible character (unlike the
zero-width break the Markdown neutraliser uses, which `git log` prints as
`<U+200B>`). The match is generous, as a wrong guess only adds a word: it
reads Markdown as GitHub shows it, since Neo's posts pass through it too.
Emphasis (`_Fixes_`, `**Fixes:**`), a backslash (an escaped colon, a hard
line break) and a keyword glued to punctuation count; so does a space
written as a character reference (`Closes&nbsp;#1`), which GitHub shows as
one. Other references (`&#102;ixes`) are the Markdown neutraliser's to
decode first.
"""

from __future__ import annotations

import html
import re

__all__ = ["inert_closing_keywords"]

_KEYWORD = r"(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
# Emphasis or code markers a Markdown-minded writer may wrap round either part,
# and a backslash: `Fixes\: #1` shows as `Fixes: #1`.
_MARKS = r"[*_~`\\]*"
# A character reference; one in the whitespace must stand for whitespace.
_CHARACTER = r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
_REFERENCE = r"(?:#\d|gh-\d|[\w.-]+/[\w.-]+#\d|https?://)"
_CLOSING = re.compile(
    rf"(?<![A-Za-z0-9])({_KEYWORD}{_MARKS}:?{_MARKS}(?P<space>(?:\s|{_CHARACTER})+){_MARKS})"
    rf"(?={_REFERENCE})",
    re.IGNORECASE,
)
_CHARACTERS = re.compile(_CHARACTER)


def _shown_as_space(space: str) -> bool:
    return all(html.unescape(ref).isspace() for ref in _CHARACTERS.findall(space))


def inert_closing_keywords(text: str) -> str:
    """`text` with every closing keyword's reference named as an issue, so none closes one.

    Idempotent: `Fixes issue #1` has no keyword right before a reference.
    """
    return _CLOSING.sub(
        lambda m: m[1] + "issue " if _shown_as_space(m["space"]) else m[0],
        text,
    )
