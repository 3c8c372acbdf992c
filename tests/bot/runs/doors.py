"""A table's door for the pages' own behaviours (what a reader, a writer, a stranger and
an anonymous visitor get): the viewer is a cookie, access a table. GitHub's door
(bot/runs/door.py, sign-in through OAuth) is tested in test_door.py, test_served.py
and, with the pages in Debian's chromium, test_page_serve.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bot.runs.pages import Access

VIEWER_COOKIE = "neo_test_viewer"


@dataclass
class TableDoor:
    public: set[str] = field(default_factory=set)
    readers: set[str] = field(default_factory=set)
    writers: set[str] = field(default_factory=set)

    async def viewer(self, request: Request) -> str | None:
        return request.cookies.get(VIEWER_COOKIE) or None

    async def access(self, request: Request, viewer: str | None, repository: str) -> Access:
        write = viewer in self.writers
        return Access(
            read=write or viewer in self.readers or repository in self.public, write=write
        )

    def sign_in(self, request: Request) -> Response:
        return RedirectResponse("/auth/github/login?next=" + quote(request.url.path), 303)

    def csrf_token(self, request: Request) -> str:
        return "csrf-" + (request.cookies.get(VIEWER_COOKIE) or "")

    def csrf_ok(self, request: Request, form: Mapping[str, str]) -> bool:
        return form.get("csrf") == self.csrf_token(request)
