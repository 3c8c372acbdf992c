"""How GitHub reads Markdown beyond its characters: the character references it decodes,
and the images it fetches (pure). `untrusted.defuse` acts on what these find.

GitHub shows `&#64;alice` as `@alice` and pings her, and reads `&#102;ixes #1`
as a closing keyword. It fetches every image a comment shows, through its
camo proxy but at the address as written: a secret in an image's URL reaches
that URL's host, whatever the sandbox could not send, as soon as anyone reads
the comment. An image is GitHub's own only on a host of GitHub's that serves
no one else's pages: `user.github.com` redirects to the user's Pages site,
and a Pages site to its custom domain, so a suffix is not enough.
"""

from __future__ import annotations

import html.entities
import re
import string
from urllib.parse import urlsplit

__all__ = ["decode_references", "github_image", "image_openers", "may_move_blocks"]

# A character reference as CommonMark reads one: decimal, hexadecimal, or named,
# always with its semicolon.
_REFERENCE = re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));")
# What mentions, closing keywords and issue references are made of. Only
# these are decoded: a reference to anything else is shown as that
# character and never read as markup, and decoding a `[`, a `*` or a line
# break would make markup of it (an image, say) or move a block.
_PLAIN = frozenset(string.ascii_letters + string.digits + "@#/.:-")


def _character(match: re.Match[str]) -> str:
    """The character a reference stands for; "" for one CommonMark leaves as written."""
    decimal, hexadecimal, name = match.groups()
    if name is not None:
        return html.entities.html5.get(f"{name};", "")
    point = int(decimal) if decimal is not None else int(hexadecimal, 16)
    # CommonMark shows U+FFFD for NUL and anything past Unicode.
    return chr(point) if 0 < point < 0x110000 else "\ufffd"


def decode_references(text: str) -> str:
    """`text` with each reference to a letter, a digit or one of `@#/.:-` written as
    that character, as GitHub will show it; every other reference as it was.

    A decoded character is never `&`, but it may complete a reference with the
    text around it (`&&#35;64;`, which GitHub shows as `&#64;`): decoding goes
    on until none is left, so the result shows `@` there. That is only ever
    more than GitHub would read, and no reference is left to decode later.
    """

    def decoded(match: re.Match[str]) -> str:
        char = _character(match)
        return char if len(char) == 1 and char in _PLAIN else match[0]

    while (shown := _REFERENCE.sub(decoded, text)) != text:
        text = shown  # shorter each time: this ends
    return text


# What a line's blocks are never made of: a decoded letter or `@` leaves every
# block where it was (a tag's name after a `<` is the neutraliser's `<` rule).
_INERT = frozenset(string.ascii_letters + "@")


def may_move_blocks(text: str) -> bool:
    """Whether `decode_references` writes in `text` a character that may start or
    shape a block: `#`, `-`, `.`, a digit (`&#45; a` is a list item once written `- a`)."""
    return any(
        char in _PLAIN and char not in _INERT for char in map(_character, _REFERENCE.finditer(text))
    )


# An inline image whose destination can be read off as written: alt text
# without brackets, the destination bare or in angle brackets, an optional title.
_INLINE_IMAGE = re.compile(
    r"!\[(?:[^\[\]\\\n]|\\.)*\]\(\s*(?:<([^<>\n]*)>|([^\s()<>]+))"
    r"""(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"""
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# GitHub's hosts for images: its own pages (attachments, avatars, a
# repository's files) and the githubusercontent.com hosts that serve files
# GitHub holds. Any other subdomain is one nobody listed here.
GITHUB_IMAGE_HOSTS = frozenset(
    {
        "github.com",
        "raw.githubusercontent.com",
        "user-images.githubusercontent.com",
        "private-user-images.githubusercontent.com",
        "avatars.githubusercontent.com",
        "camo.githubusercontent.com",
        "objects.githubusercontent.com",
    }
)
# What a browser strips or reads as a slash, so that what follows is not what
# it seems: a URL holding one is not read further.
_AMBIGUOUS = re.compile(r"[\x00-\x1f\x7f\\]")


def github_image(destination: str) -> bool:
    """Whether an image at `destination`, as written in Markdown, is fetched from GitHub itself.

    The destination is read as CommonMark does, references decoded. A relative
    address is a file of the repository's; an absolute one must be http(s)
    on one of `GITHUB_IMAGE_HOSTS`, with no user, password or port. A
    backslash escape, a control character or a backslash makes it foreign:
    browsers and CommonMark disagree on those, and a wrong "foreign" only
    shows the image as a link.
    """
    url = _REFERENCE.sub(lambda m: _character(m) or m[0], destination)
    if _AMBIGUOUS.search(url) or url != url.strip():
        return False
    if not _SCHEME.match(url):
        return not url.startswith("//")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme.lower() in ("http", "https")
        and "@" not in parts.netloc
        and port is None
        and parts.hostname in GITHUB_IMAGE_HOSTS
    )


def image_openers(text: str) -> list[int]:
    """Where in `text` a `![` may open an image fetched from another host than GitHub's.

    Every `![` is one, unless it opens an inline image whose destination is
    GitHub's own: a reference image (`![alt][label]`) or one whose text
    cannot be read off plainly counts as foreign, so no image slips by.
    """
    found = []
    start = text.find("![")
    while start != -1:
        image = _INLINE_IMAGE.match(text, start)
        destination = None if image is None else (image[1] or image[2] or "")
        if destination is None or not github_image(destination):
            found.append(start)
        start = text.find("![", start + 1)
    return found
