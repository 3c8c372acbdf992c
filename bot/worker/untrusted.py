"""Untrusted text, both ways (rule 6): what GitHub users wrote, quoted to the model as
data; what the model wrote, made safe to post on GitHub. Pure.

Inbound: each text sits verbatim in a block whose tag carries a `boundary`
token found in none of the texts, so no text can close its block; Neo's own
labels on it are `plain`, one line, HTML-escaped. Outbound: `neutralise`
breaks pings, closing keywords, images on hosts other than GitHub's and raw
HTML where GitHub would render them, written as it reads them (character
references too; github_markdown.py); fenced code is left as written.
`close_fences` closes a fence a cut left open. The schemes:
docs/architecture.md, "The prompt" and "The report".
"""

from __future__ import annotations

import hashlib
import html
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from markdown_it import MarkdownIt

from bot.worker.github_markdown import decode_references, image_openers, may_move_blocks
from runner.closing import inert_closing_keywords
from runner.text import one_line

__all__ = [
    "ZWSP",
    "Block",
    "Excerpt",
    "Post",
    "boundary",
    "cap_bytes",
    "close_fences",
    "code_span",
    "cut",
    "defuse",
    "inline_markdown",
    "neutralise",
    "plain",
    "shown_association",
    "shown_author",
]

# --- inbound: quoted to the model as data ----------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Post:
    """Text a GitHub user wrote: an issue or PR body, a comment, a review."""

    author: str
    # GitHub's author_association: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
    association: str
    body: str
    created_at: str = ""  # ISO 8601, as GitHub gives it
    is_bot: bool = False
    # GitHub's id of the comment, when it is one: tells the trigger apart.
    id: int | None = None
    # GitHub's rendering of `body`, when read: where its attached images are.
    body_html: str = ""


_TOKEN_DIGITS = 16


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A quoted text, maybe shortened, and the note saying so."""

    text: str
    note: str | None = None


def cut(text: str, limit: int) -> Excerpt:
    if len(text) <= limit:
        return Excerpt(text)
    return Excerpt(text[:limit], f"showing the first {limit:,} of {len(text):,} characters")


def cap_bytes(text: str, limit: int) -> Excerpt:
    """The head of `text` within `limit` UTF-8 bytes, cut at a line."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return Excerpt(text)
    head = data[:limit].decode("utf-8", "ignore")
    if "\n" in head:
        head = head[: head.rindex("\n") + 1]
    shown = len(head.encode("utf-8", "surrogatepass"))
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return Excerpt(
        head,
        f"showing the first {shown:,} of {len(data):,} bytes"
        f" ({head.count(chr(10)):,} of {lines:,} lines)",
    )


_SPACE = re.compile(r"\s+")


# What a value GitHub left out becomes on its way here (githubkit's Unset, or
# None, through str()); the prompt shows what GitHub itself shows instead.
_MISSING = frozenset({"", "None", "<UNSET>"})


def shown_association(value: str) -> str:
    return "NONE" if value.strip() in _MISSING else value


def shown_author(login: str) -> str:
    # A deleted account, which GitHub shows as "ghost".
    return "ghost" if login.strip() in _MISSING else login


def plain(value: str) -> str:
    """Neo's own label text: one line, no markup that could open or close a block."""
    return html.escape(_SPACE.sub(" ", value).strip(), quote=True)


@dataclass(frozen=True, slots=True)
class Block:
    """One quoted text and the labels Neo puts on it."""

    content: str
    labels: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, kind: str, text: Excerpt, post: Post | None, **labels: str | None) -> Block:
        attrs: dict[str, str | None] = {"kind": kind}
        if post is not None:
            is_bot = post.is_bot or post.author.lower().endswith("[bot]")
            attrs.update(
                author=shown_author(post.author),
                association=shown_association(post.association),
                created_at=post.created_at,
                bot="true" if is_bot else None,
            )
        attrs.update(labels)
        attrs["truncated"] = text.note
        return cls(text.text, tuple((k, v) for k, v in attrs.items() if v))

    def render(self, token: str) -> str:
        attrs = "".join(f' {name}="{plain(value)}"' for name, value in self.labels)
        return f"<data-{token}{attrs}>\n{self.content}\n</data-{token}>"


def boundary(texts: Iterable[str]) -> str:
    """A token of hex digits found in none of `texts`, derived from them alone."""
    texts = [text.lower() for text in texts]
    seed = hashlib.sha256()
    for text in texts:
        seed.update(text.encode("utf-8", "surrogatepass"))
        seed.update(b"\0")
    for counter in itertools.count():
        digest = hashlib.sha256(seed.digest() + counter.to_bytes(8, "big"))
        token = digest.hexdigest()[:_TOKEN_DIGITS]
        if not any(token in text for text in texts):
            return token
    raise AssertionError("unreachable")  # pragma: no cover


# --- outbound: model text made safe to post ----------------------------------------


ZWSP = "\u200b"


_MENTION = re.compile(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9])")


# `<` opening a tag, a closing tag, a comment or a declaration; not an autolink.
_TAG = re.compile(r"<(?=[A-Za-z/!?])(?![A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*>)")


_NEWLINES = re.compile(r"\r\n?")


# Only the block structure matters here: where fences are.
_MARKDOWN = MarkdownIt("commonmark").enable("table")
_MARKDOWN.core.ruler.disable(["inline", "text_join"])


def defuse(text: str) -> str:
    """Break every mention, closing keyword, foreign image and HTML opener in `text`.

    The references GitHub decodes into a mention or a keyword (`&#64;alice`)
    are written as their characters first, so the rules see what GitHub
    shows. A closing keyword's reference is named as an issue (`fixes issue
    #1`), as in a commit message: one rule for both.
    """
    text = decode_references(text)
    # `!`, ZWSP, `[`: a link to the same address, which nobody fetches unless
    # they follow it. GitHub fetches an image for every reader, through its
    # camo proxy but at the URL as written: a secret in it reaches the host.
    for opener in reversed(image_openers(text)):
        text = text[: opener + 1] + ZWSP + text[opener + 1 :]
    text = _MENTION.sub("@" + ZWSP, text)
    text = _TAG.sub("<" + ZWSP, text)
    return inert_closing_keywords(text)


def _fenced_lines(text: str) -> set[int]:
    """The lines inside fenced code blocks, fences included, as CommonMark sees them.

    Indented code blocks are not counted: GitHub's footnotes can make a
    paragraph of what CommonMark calls indented code, so they are neutralised.
    """
    lines: set[int] = set()
    for token in _MARKDOWN.parse(text):
        if token.type == "fence" and token.map is not None:
            lines.update(range(*token.map))
    return lines


def neutralise(markdown: str) -> str:
    """`markdown` as GitHub will show it, minus pings, closing keywords, images on
    other hosts than GitHub's and raw HTML.

    Breaking an HTML block can turn lines that were raw HTML into Markdown,
    and a decoded reference can start a block (`&#45; a` is a list item once
    written `- a`): either can change where fences are, so then the result
    is parsed again, until it is stable. Each pass only breaks or decodes
    what is still whole, so this ends. The other changes (a letter or an
    `@` decoded, a break inside a word or after an `@` or a `!`, a word
    added after a keyword) change no block.
    """
    text = _NEWLINES.sub("\n", markdown).replace("\0", "\ufffd")
    while True:
        fenced = _fenced_lines(text)
        out: list[str] = []
        prose: list[str] = []
        moved = False
        for number, line in enumerate([*text.split("\n"), None]):
            if line is not None and number not in fenced:
                prose.append(line)
                continue
            if prose:
                chunk = "\n".join(prose)
                decoded = decode_references(chunk)
                moved = moved or may_move_blocks(chunk) or _TAG.search(decoded) is not None
                out.append(defuse(decoded))
                prose = []
            if line is not None:
                out.append(line)
        text = "\n".join(out)
        if not moved:
            return text


_SENTINEL = "neo-end-of-text"


def _open_fence(text: str) -> tuple[str, str] | None:
    """The prefix and markup of a fence still open at the end of `text`."""
    tokens = _MARKDOWN.parse(f"{text}\n\n{_SENTINEL}")
    sentinel = text.count("\n") + 2
    for token in tokens:
        if token.type == "fence" and token.map is not None and token.map[1] > sentinel:
            opener = text.split("\n")[token.map[0]]
            column = max(opener.find(token.markup), 0)
            # Keep blockquote markers, blank out list markers.
            return re.sub(r"[^>\s]", " ", opener[:column]), token.markup
    return None


def close_fences(text: str) -> str:
    """`text` with a fence left open at its end closed, so it cannot swallow what follows."""
    opened = _open_fence(text)
    if opened is None:
        return text
    prefix, markup = opened
    for closer in (f"\n{prefix}{markup}", f"\n{markup}", "\n"):
        if _open_fence(text + closer) is None:
            return text + closer
    return text  # only the look of what follows would suffer


_BACKTICKS = re.compile(r"`+")


def code_span(text: str) -> str:
    """`text` as one inline code span it cannot break out of.

    Nothing in a code span pings, links or closes, so the text stays as the
    agent typed it, copyable.
    """
    text = one_line(text, 10_000) or "(empty)"
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inline_markdown(text: str, limit: int) -> str:
    """Model text for one line of Markdown: a checklist item, a note."""
    return defuse(one_line(text, limit))
