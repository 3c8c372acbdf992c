"""Images attached to a thread's posts: found in GitHub's rendering (never in the
Markdown), downloaded from the fake GitHub's signed addresses within bounds, no token."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.github.app import GitHubApp
from bot.github.attachments import (
    AttachmentLimits,
    Skipped,
    attachment_sources,
    image_type,
    web_origin,
)
from bot.github.client import Spacers
from tests.bot.github.test_client import REPO, FakeTime, _publisher, fake_time, github
from tests.fakes import FakeGitHub

__all__ = ["fake_time", "github"]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
GIF = b"GIF89a" + b"\x01" * 32
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 16
SIGNED = "https://private-user-images.githubusercontent.com/1234/567-ab12.png?jwt=eyJh.eyJi.c"


@pytest.fixture
async def app(github: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with GitHubApp(github.app_id, github.private_key_pem, github.base_url) as opened:
        yield opened


def test_the_web_host_goes_with_the_api_address() -> None:
    assert web_origin("https://api.github.com") == "https://github.com"
    assert web_origin("https://ghe.example/api/v3/") == "https://ghe.example"
    assert web_origin("http://127.0.0.1:8123") == "http://127.0.0.1:8123"


def test_only_githubs_attachment_addresses_in_img_elements_count() -> None:
    html = (
        f'<p><a href="{SIGNED}"><img src="{SIGNED}" alt="shot"></a></p>'
        '<p><img src="https://github.com/user-attachments/assets/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0">'
        '<img src="https://camo.githubusercontent.com/abc"><img src="https://evil.example/x.png">'
        '<img src="https://user:pw@github.com/user-attachments/assets/0b1c2d3e-4f50">'
        '<img src="https://private-user-images.githubusercontent.com/../x.png">'
        f'<code>{SIGNED}</code> <a href="https://github.com/user-attachments/assets/ffff0000">a</a>'
        f'<img src="{SIGNED}"></p>'
    )

    assert attachment_sources(html, "https://github.com") == [
        SIGNED,
        "https://github.com/user-attachments/assets/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
    ]
    # On another host, github.com's signed host is not an attachment.
    assert attachment_sources(html, "https://ghe.example") == []


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 8, "image/jpeg"),
        (GIF, "image/gif"),
        (WEBP, "image/webp"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
        (b"%PDF-1.7", None),
    ],
)
def test_the_type_is_what_the_bytes_say(data: bytes, media_type: str | None) -> None:
    assert image_type(data) == media_type


async def test_a_posts_images_come_from_its_signed_addresses_bounded_and_without_a_token(
    github: FakeGitHub, app: GitHubApp, fake_time: FakeTime
) -> None:
    shot, movie, svg, huge, sixth = (
        github.attachments.add(PNG),
        github.attachments.add(GIF, "image/gif"),
        github.attachments.add(b"<svg/>", "image/svg+xml"),
        github.attachments.add(PNG + b"\x00" * 2_000),
        github.attachments.add(WEBP, "image/webp"),
    )
    claimed = github.attachments.add(PNG)
    body = "\n\n".join(
        [
            *(f"![shot]({shot})", f"![movie]({movie})", f"![svg]({svg})", f"![huge]({huge})"),
            *(f"![again]({shot})", f"![sixth]({sixth})", f"![more]({sixth})"),
            *(f"Not an image: `{claimed}`, nor {claimed}", "![x](https://evil.example/a.png)"),
        ]
    )
    number = github.add_issue(REPO, "Misaligned", body)
    client = await _publisher(app, number, fake_time, Spacers(0.0))

    thread = await client.read_thread(pull_request=False)
    urls = client.attachments_in(thread.issue.body_html)
    got = await client.attached_images(urls, AttachmentLimits(count=4, bytes_each=1_000))

    assert len(urls) == 5  # the five attachments, each once, nothing else
    assert [(g.media_type, g.data) for g in got[:2] if not isinstance(g, Skipped)] == [
        ("image/png", PNG),
        ("image/gif", GIF),
    ]
    assert got[2:] == [
        Skipped("not a PNG, JPEG, GIF or WebP image"),
        Skipped("larger than 1,000 bytes"),
    ]
    fetched = github.attachments.requests
    assert len(fetched) == 4
    assert all(signed and authorization is None for _, signed, authorization in fetched)
    assert claimed.rsplit("/", 1)[-1] not in {asset for asset, _, _ in fetched}
