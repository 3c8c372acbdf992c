"""Mentions of Neo's handle where GitHub would render them, and what they ask (pure).

GitHub renders comments as CommonMark: code, quotes and HTML comments hold
no mention. `@neo stop` alone asks to stop, `@neo review` for a review, and
a comment that starts with `@neo steer` steers the run going on.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = [
    "Reading",
    "asks_review",
    "is_steer",
    "is_stop",
    "mention_count",
    "mentions",
    "read_mentions",
    "steer_text",
    "visible_text",
]


# GitHub renders comments as CommonMark (cmark-gfm): what is code, a quote or
# a comment there is decided by the parser's rules (indentation, lazy quote
# continuation, fences in list items), which line-based guesses keep missing.
# Built once: triage runs on the request path. Inline parsing, a third of the
# cost, is done here per block, and only for the blocks that name the handle
# when counting mentions. text_join is off so that an escaped `\@` stays a
# token of its own.
_MARKDOWN = MarkdownIt("commonmark").disable(["inline", "text_join"])
# Raw HTML GitHub shows as code, or not at all.
_HIDING_ELEMENTS = frozenset({"code", "pre"})
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
# HTML comments are invisible on GitHub; issue templates put instructions in
# them. An unclosed one hides the rest of its HTML block, which CommonMark
# runs to the end of the text.
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def visible_text(markdown: str) -> str:
    """`markdown` without what cannot hold a mention: code, quotes, HTML comments.

    Removed parts become blank, so words on either side never join; each
    line of what is kept stays on its own line.
    """
    return _read(markdown, None).text


@dataclass(frozen=True, slots=True)
class Reading:
    """The visible text of the blocks read; the others are left blank, unread."""

    text: str
    unread: list[Callable[[], str]]


def _read(markdown: str, naming: str | None) -> Reading:
    """Read every block of `markdown`, or with `naming` only those that contain it."""
    env: dict[str, Any] = {}  # link reference definitions, for inline parsing
    lines: list[str] = []
    unread: list[Callable[[], str]] = []
    quotes = 0
    for token in _MARKDOWN.parse(markdown, env):
        if token.type == "blockquote_open":
            quotes += 1
        elif token.type == "blockquote_close":
            quotes -= 1
        elif quotes or token.map is None or token.type not in ("inline", "html_block"):
            continue  # quoted; or structure; or code_block and fence, which hold code
        else:
            text = functools.partial(_block_text, token, env)
            if naming is None or naming in token.content.lower():
                _place(lines, token.map, text())
            else:
                unread.append(text)
    return Reading("\n".join(lines), unread)


def _block_text(token: Token, env: dict[str, Any]) -> str:
    if token.type == "html_block":
        return _html_text(token.content)
    children: list[Token] = []
    _MARKDOWN.inline.parse(token.content, _MARKDOWN, env, children)
    return _inline_text(children)


def _place(lines: list[str], where: list[int], text: str) -> None:
    """Put `text` on the source lines `where` = [first, past the last] it came from."""
    first, end = where
    if len(lines) < end:
        lines.extend([""] * (end - len(lines)))
    parts = text.split("\n")
    room = max(end - first, 1)
    if len(parts) > room:  # a code span over several lines: fewer breaks came out
        parts = [*parts[: room - 1], " ".join(parts[room - 1 :])]
    for offset, part in enumerate(parts):
        line = first + offset
        lines[line] = f"{lines[line]} {part}" if lines[line] else part


def _inline_text(children: list[Token]) -> str:
    out: list[str] = []
    hiding = 0  # depth of open <code> or <pre> elements
    for child in children:
        kind = child.type
        if kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "html_inline":
            tag = _TAG_NAME.match(child.content)
            if tag and tag[2].lower() in _HIDING_ELEMENTS and not child.content.endswith("/>"):
                hiding = max(hiding - 1, 0) if tag[1] else hiding + 1
            out.append(" ")
        elif hiding:
            continue
        elif kind == "text":
            out.append(child.content)
        elif kind == "text_special":
            # `\@neo` shows "@neo" but says "not a mention".
            out.append(" " if child.info == "escape" and child.content == "@" else child.content)
        elif kind in ("code_inline", "image"):  # code; an image's alt text is not shown
            out.append(" ")
        # Emphasis and link markers: the text between them is its own token.
    return "".join(out)


class _HtmlText(HTMLParser):
    """The text a raw HTML block shows, but not inside <code> or <pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.kept: list[str] = []
        self._hiding = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._hiding += tag in _HIDING_ELEMENTS
        self.kept.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDING_ELEMENTS and self._hiding:
            self._hiding -= 1
        self.kept.append(" ")

    def handle_data(self, data: str) -> None:
        self.kept.append("\n" * data.count("\n") if self._hiding else data)


def _html_text(html: str) -> str:
    # Comments go first, newlines kept: HTMLParser reads an unclosed one as text.
    html = _HTML_COMMENT.sub(lambda m: " " + "\n" * m[0].count("\n"), html)
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    return "".join(parser.kept)


@functools.lru_cache(maxsize=8)
def _mention_pattern(handle: str) -> re.Pattern[str]:
    # A whole word: not part of an email, a URL, a longer login (@neo-bot,
    # @neo_x, @neonate), a team (@neo/team) or a domain (@neo.com).
    return re.compile(
        r"(?<![\w@./+-])" + re.escape(handle) + r"(?![\w/@-]|\.\w)",
        re.IGNORECASE,
    )


@functools.lru_cache(maxsize=8)
def _stop_pattern(handle: str) -> re.Pattern[str]:
    mention = _mention_pattern(handle).pattern
    return re.compile(r"[^\w@]*" + mention + r"[^\w]+stop[^\w]*", re.IGNORECASE)


def read_mentions(markdown: str, handle: str) -> Reading:
    """The blocks of `markdown` that name `handle`. Most text names it nowhere,
    and this test costs far less than parsing."""
    named = handle.lower()
    return _read(markdown, named) if named in markdown.lower() else Reading("", [])


def mention_count(reading: Reading, handle: str) -> int:
    return len(_mention_pattern(handle).findall(reading.text))


def mentions(markdown: str, handle: str) -> int:
    """How many times `markdown` mentions `handle` where GitHub would render it."""
    return mention_count(read_mentions(markdown, handle), handle)


def is_stop(reading: Reading, handle: str) -> bool:
    """`@neo stop`, alone, any case, punctuation tolerated (`@NEO, stop!`)."""
    if _stop_pattern(handle).fullmatch(reading.text.strip()) is None:
        return False
    # Alone: the blocks not read, which do not name the handle, show nothing.
    return not any(text().strip() for text in reading.unread)


@functools.lru_cache(maxsize=8)
def _review_pattern(handle: str) -> re.Pattern[str]:
    return re.compile(_mention_pattern(handle).pattern + r"[\s,:]+review\b", re.IGNORECASE)


def asks_review(reading: Reading, handle: str) -> bool:
    """`@neo review`: `review` the first word after a mention."""
    return _review_pattern(handle).search(reading.text) is not None


@functools.lru_cache(maxsize=8)
def _steer_pattern(handle: str) -> re.Pattern[str]:
    # `steer` the first word after the handle, which opens the text: `@neo steer:`,
    # `@Neo, steer ...`; not `@neo steering ...`, nor a mention later on.
    return re.compile(
        r"[^\w@]*" + _mention_pattern(handle).pattern + r"[\s,:]+steer(?![\w-])", re.IGNORECASE
    )


def is_steer(markdown: str, reading: Reading, handle: str) -> bool:
    """A comment that starts with `@neo steer`, where GitHub shows it (not in code or a quote)."""
    if _steer_pattern(handle).match(reading.text.lstrip()) is None:
        return False
    # The reading holds only the blocks naming the handle: none may come before.
    return _steer_pattern(handle).match(visible_text(markdown).lstrip()) is not None


def steer_text(markdown: str, handle: str) -> str:
    """What a `@neo steer` comment says after its opening words, as written."""
    found = _steer_pattern(handle).match(markdown.lstrip())
    text = markdown.lstrip()[found.end() :] if found is not None else markdown
    return text.lstrip(" \t:,.-").strip()
