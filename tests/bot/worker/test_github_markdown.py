"""How GitHub reads Markdown beyond its characters: references decoded, images' hosts."""

from __future__ import annotations

import pytest

from bot.worker.github_markdown import (
    decode_references,
    github_image,
    image_openers,
    may_move_blocks,
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("&#64;alice", "@alice"),
        ("&#x40;&#X61;lice", "@alice"),
        ("&commat;alice", "@alice"),
        ("&#102;ixes &num;1", "fixes #1"),
        ("octo&sol;core&period;", "octo/core."),
        # Decoded until no reference is left: GitHub shows `&#64;x` here.
        ("&&#35;64;x", "@x"),
        # What would become markup, a space or `&` stays written as a reference.
        ("&#33;&#91;x&#93;(u)", "&#33;&#91;x&#93;(u)"),
        ("&lt;img&gt; &amp;#64; &nbsp; &#10;", "&lt;img&gt; &amp;#64; &nbsp; &#10;"),
        # No reference at all: no semicolon, an unknown name, out of range.
        ("&#64 &bogus; &#1114112; &#0;", "&#64 &bogus; &#1114112; &#0;"),
    ],
)
def test_references_to_plain_characters_are_decoded(text: str, shown: str) -> None:
    assert decode_references(text) == shown


@pytest.mark.parametrize(
    "destination",
    [
        "https://github.com/user-attachments/assets/5e1a",
        "https://raw.githubusercontent.com/o/r/main/a.png",
        "HTTPS://Private-User-Images.githubusercontent.com/1/a.png?jwt=x&y=1",
        "https://avatars.githubusercontent.com/u/1?v=4",
        "docs/diagram.png",
        "/octo/hello/raw/main/a.png",
        "",
    ],
)
def test_githubs_own_images(destination: str) -> None:
    assert github_image(destination)


@pytest.mark.parametrize(
    "destination",
    [
        "https://evil.example/p.png",
        "//evil.example/p.png",
        "/\\evil.example/p.png",
        "\\\\evil.example/p.png",
        "/\t/evil.example/p.png",
        " //evil.example/p.png",
        # Pages: user.github.com redirects to user.github.io, which may redirect
        # to any custom domain, query string and all.
        "https://attacker.github.com/p.png?d=SECRET",
        "https://attacker.github.io/p.png",
        "https://gist.githubusercontent.com.evil.example/p.png",
        "https://github.com.evil.example/p.png",
        "https://github.com@evil.example/p.png",
        "https://github.com:8443/p.png",
        # Read as a browser reads it, evil.example is the host.
        "https://evil.example\\@github.com/p.png",
        # CommonMark decodes references in a destination: `&quest;` is `?`.
        "https://evil.example&quest;@github.com/p.png",
        "https://evil.example&#47;@github.com/p.png",
        "javascript:alert(1)",
        "data:image/svg+xml,<svg/>",
        "ftp://github.com/a.png",
        "evil.example:80/p.png",
        "https://[::1/p.png",
    ],
)
def test_other_images(destination: str) -> None:
    assert not github_image(destination)


@pytest.mark.parametrize(
    ("text", "openers"),
    [
        ("![a](https://github.com/a.png) ![b](https://evil.example/b.png)", [31]),
        ("![a][r] and ![b]", [0, 12]),
        ("![a ![b](https://evil.example)](https://github.com/a.png)", [0, 4]),
        ("![a](https://github.com/a(1).png)", [0]),
        ('![a](<https://github.com/a b.png> "t")', []),
        ("![a\nb](https://github.com/a.png)", [0]),
        ("Wow! [x](https://evil.example)", []),
    ],
)
def test_every_image_not_plainly_githubs_is_an_opener(text: str, openers: list[int]) -> None:
    assert image_openers(text) == openers


@pytest.mark.parametrize(
    ("text", "moves"),
    [
        ("&#64;alice &#102;ixes", False),
        ("&amp; &lt;div&gt; &nbsp;", False),
        ("plain text", False),
        ("&#45; a", True),
        ("&#49;. a", True),
        ("&#35; a", True),
        ("| &#45;-- |", True),
    ],
)
def test_only_a_decoded_character_of_block_syntax_may_move_blocks(text: str, moves: bool) -> None:
    assert may_move_blocks(text) is moves
