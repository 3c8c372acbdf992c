"""What the fake GitHub needs for attachments: the files users attached, and posts
rendered as GitHub renders them for `application/vnd.github.full+json`.

An uploaded image is named in Markdown by `https://github.com/user-attachments/assets/<uuid>`;
GitHub's `body_html` shows it as a signed, short-lived URL instead (on
github.com `private-user-images.githubusercontent.com/...?jwt=...`; here
`<fake>/user-attachments/assets/<uuid>?jwt=...`, the form a GitHub Enterprise
host's own address takes), which is the only one the fake serves. Any other
image is shown through GitHub's image proxy (camo), as GitHub does. Markdown is
rendered with markdown-it (CommonMark, raw HTML kept as GitHub's sanitiser
keeps `<img>`), so an address in a code span or block is text, not an image.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from html import escape, unescape

from markdown_it import MarkdownIt

__all__ = ["ASSETS_PREFIX", "Attachments"]

ASSETS_PREFIX = "https://github.com/user-attachments/assets/"
_IMG_SRC = re.compile(r'(<img\b[^>]*?\bsrc=")([^"]*)(")')
_MARKDOWN = MarkdownIt("commonmark")


@functools.lru_cache(maxsize=4096)
def _html(markdown: str) -> str:
    # A listing renders every comment of a thread again on each read, and a
    # worker reads its threads' comments over and over: the Markdown is parsed
    # once per text. What depends on the fake's state (attachments) is not cached.
    html: str = _MARKDOWN.render(markdown)
    return html


@dataclass(slots=True)
class _Asset:
    data: bytes
    media_type: str
    signature: str


@dataclass(slots=True)
class Attachments:
    """The attached files of one fake GitHub, and who fetched them."""

    origin: str = ""
    _assets: dict[str, _Asset] = field(default_factory=dict)
    # (asset id, whether the signature was right, the Authorization header sent)
    requests: list[tuple[str, bool, str | None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, data: bytes, media_type: str = "image/png") -> str:
        """Store an upload; the address its Markdown names it by."""
        asset = str(uuid.uuid4())
        with self._lock:
            self._assets[asset] = _Asset(data, media_type, secrets.token_urlsafe(24))
        return ASSETS_PREFIX + asset

    def serve(self, asset: str, jwt: str | None, authorization: str | None) -> _Asset | None:
        with self._lock:
            found = self._assets.get(asset)
            signed = found is not None and jwt == found.signature
            self.requests.append((asset, signed, authorization))
        return found if signed else None

    def render(self, markdown: str) -> str:
        """`markdown` as `body_html`: attachments signed, other images proxied."""
        return _IMG_SRC.sub(self._source, _html(markdown))

    def _source(self, match: re.Match[str]) -> str:
        src = unescape(match[2])
        with self._lock:
            asset = self._assets.get(src.removeprefix(ASSETS_PREFIX))
        if src.startswith(ASSETS_PREFIX) and asset is not None:
            shown = f"{self.origin}/user-attachments/assets/{src.removeprefix(ASSETS_PREFIX)}"
            shown += f"?jwt={asset.signature}"
        else:
            digest = hashlib.sha1(src.encode()).hexdigest()
            shown = f"https://camo.githubusercontent.com/{digest}"
        return f"{match[1]}{escape(shown)}{match[3]}"
