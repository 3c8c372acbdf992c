"""Images attached to an issue or comment: found in GitHub's rendering, downloaded bounded.

The sources are the `<img>` elements of the post's `body_html`, never URLs
in its Markdown: GitHub renders an attachment it stores as a signed URL
(`private-user-images.githubusercontent.com/...?jwt=...` on github.com), so a
text that names some other asset, or any other host, is not fetched. Only
GitHub's attachment addresses count: on github.com the signed host and
`github.com/user-attachments/assets/`, elsewhere (GitHub Enterprise, a test's
fake) `/user-attachments/assets/` on the web host of the API's address. No
token is sent: the signature is the permission, and the redirect GitHub
answers the plain form with goes to a storage host.

Each image is at most 5 MB, and only PNG, JPEG, GIF or WebP as its bytes say
(not its Content-Type); at most five per job, all within 30 s. What cannot be
had is skipped and said, never a reason to fail the job.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urlsplit

import httpx

__all__ = [
    "DEFAULT_LIMITS",
    "Attachment",
    "AttachmentLimits",
    "Skipped",
    "attachment_sources",
    "download_attachments",
    "image_type",
    "web_origin",
]

_SIGNED_HOST: Final = "private-user-images.githubusercontent.com"
_ASSETS: Final = "/user-attachments/assets/"
_MAGIC: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    count: int = 5
    bytes_each: int = 5 * 1024 * 1024
    seconds: float = 30.0


DEFAULT_LIMITS: Final = AttachmentLimits()


@dataclass(frozen=True, slots=True)
class Attachment:
    url: str = field(repr=False)  # signed: a credential while it lasts
    media_type: str
    data: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class Skipped:
    """An image not given to the model, and why, in a few words."""

    why: str


def web_origin(api_url: str) -> str:
    """The web host for an API address: github.com's for api.github.com, else its own."""
    parts = urlsplit(api_url.rstrip("/"))
    if parts.hostname == "api.github.com":
        return "https://github.com"
    return f"{parts.scheme}://{parts.netloc}"


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            src = dict(attrs).get("src")
            if src:
                self.sources.append(src)


def attachment_sources(body_html: str, origin: str) -> list[str]:
    """The attachment images `body_html` shows, in order, once each; others are not ours."""
    parser = _Images()
    parser.feed(body_html)
    parser.close()
    return list(dict.fromkeys(src for src in parser.sources if _is_attachment(src, origin)))


def _is_attachment(url: str, origin: str) -> bool:
    parts = urlsplit(url)
    if parts.username or parts.password:
        return False
    if origin == "https://github.com" and parts.scheme == "https" and parts.netloc == _SIGNED_HOST:
        return re.fullmatch(r"/\d+/[\w.-]+", parts.path) is not None
    here = f"{parts.scheme}://{parts.netloc}" == origin
    return here and re.fullmatch(re.escape(_ASSETS) + r"[0-9a-fA-F-]{8,64}", parts.path) is not None


def _size(count: int) -> str:
    return f"{count / 2**20:g} MB" if count >= 2**20 else f"{count:,} bytes"


def image_type(data: bytes) -> str | None:
    """The image's media type from its first bytes: PNG, JPEG, GIF or WebP, else None."""
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


async def download_attachments(
    urls: Sequence[str],
    *,
    limits: AttachmentLimits = DEFAULT_LIMITS,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Attachment | Skipped]:
    """Each of the first `limits.count` URLs downloaded, or why not; all within the time."""
    if not urls:
        # Most tasks show no image: no client, whose TLS context alone costs
        # tens of milliseconds of CPU to build.
        return []
    deadline = time.monotonic() + limits.seconds
    results: list[Attachment | Skipped] = []
    async with httpx.AsyncClient(
        follow_redirects=True,
        max_redirects=3,
        timeout=httpx.Timeout(limits.seconds),
        transport=transport,
    ) as client:
        for url in urls[: limits.count]:
            left = deadline - time.monotonic()
            if left <= 0:
                results.append(Skipped(f"not downloaded within {limits.seconds:g} s"))
                continue
            try:
                async with asyncio.timeout(left):
                    results.append(await _one(client, url, limits.bytes_each))
            except TimeoutError:
                results.append(Skipped(f"not downloaded within {limits.seconds:g} s"))
            except httpx.HTTPError as error:
                results.append(Skipped(f"could not be downloaded ({type(error).__name__})"))
    return results


async def _one(client: httpx.AsyncClient, url: str, cap: int) -> Attachment | Skipped:
    async with client.stream("GET", url) as response:
        if response.status_code != 200:
            return Skipped(f"GitHub answered {response.status_code}")
        if response.url.scheme != urlsplit(url).scheme:
            return Skipped("redirected to another scheme")
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) > cap:
                return Skipped(f"larger than {_size(cap)}")
    media_type = image_type(bytes(data))
    if media_type is None:
        return Skipped("not a PNG, JPEG, GIF or WebP image")
    return Attachment(url, media_type, bytes(data))
