"""The pure parts of signing in and of access: `next`, the bounded cache, asking GitHub once."""

from __future__ import annotations

import asyncio

import pytest

from bot.github.oauth import UserToken
from bot.github.visibility import Visibility
from bot.runs.access import Gate, Viewer, access_to
from bot.runs.auth import safe_next
from bot.runs.ttl_cache import TtlCache


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("/runs/7", "/runs/7"),
        ("/runs?repo=octo/hello&state=running", "/runs?repo=octo/hello&state=running"),
        ("/runs/7#events", "/runs/7"),
        (None, "/runs"),
        ("", "/runs"),
        ("runs/7", "/runs"),
        ("//evil.example", "/runs"),
        ("///evil.example", "/runs"),
        ("/\\evil.example", "/runs"),
        ("/\\/evil.example", "/runs"),
        ("https://evil.example/runs", "/runs"),
        ("javascript:alert(1)", "/runs"),
        ("/runs\n/x", "/runs"),
        ("/runs\t", "/runs"),
        ("/ runs", "/runs"),
        ("/" + "a" * 3000, "/runs"),
    ],
)
def test_next_is_only_ever_a_path_of_this_site(given: str | None, kept: str) -> None:
    assert safe_next(given) == kept


def test_the_cache_never_holds_more_than_its_size_and_forgets_after_its_ttl() -> None:
    now = [0.0]
    cache: TtlCache[str, int] = TtlCache(ttl=60, size=3, clock=lambda: now[0])
    for number in range(10):
        cache.put(f"k{number}", number)
        assert len(cache) <= 3
    assert cache.get("k0") is None
    assert cache.get("k7") == 7
    cache.put("k10", 10)  # k8, the least recently used, goes
    assert cache.get("k8") is None
    assert cache.get("k7") == 7
    now[0] = 60
    assert cache.get("k7") is None
    assert len(cache) == 2


class _Writers:
    def __init__(self) -> None:
        self.asked: list[tuple[int, str, str]] = []

    async def may_act(self, installation_id: int, repository: str, login: str) -> bool:
        self.asked.append((installation_id, repository, login))
        await asyncio.sleep(0)
        return login == "writer"


async def test_many_requests_ask_github_once_a_minute_within_a_bounded_cache() -> None:
    now = [0.0]
    asked: list[str] = []

    async def visibility(repository: str, installation_id: int | None) -> Visibility | None:
        asked.append(repository)
        await asyncio.sleep(0)
        return Visibility(7, private=False)

    writers = _Writers()
    gate = Gate(visibility, writers, None, size=2, clock=lambda: now[0])
    writer = Viewer("writer", token=UserToken("t", None), gate=gate)
    answers = await asyncio.gather(*(access_to(writer, "octo/a") for _ in range(20)))
    assert {(a.read, a.write) for a in answers} == {(True, True)}
    assert asked == ["octo/a"]
    assert writers.asked == [(7, "octo/a", "writer")]

    for name in ("octo/b", "octo/c", "octo/d"):
        await access_to(writer, name)
    assert len(gate.visibilities) <= 2
    assert len(gate.accesses) <= 2

    now[0] = 61
    await access_to(writer, "octo/d")
    assert asked[-1] == "octo/d"
    assert len(asked) == 5


async def test_a_viewer_made_without_a_gate_sees_nothing() -> None:
    access = await access_to(Viewer("alice"), "octo/hello")

    assert (access.read, access.write) == (False, False)


async def test_a_visitor_who_leaves_does_not_cancel_the_question_others_wait_on() -> None:
    release = asyncio.Event()
    asked: list[str] = []

    async def visibility(repository: str, installation_id: int | None) -> Visibility | None:
        asked.append(repository)
        await release.wait()
        return Visibility(7, private=False)

    gate = Gate(visibility, _Writers(), None)
    anonymous = Viewer(None, gate=gate)
    leaving = asyncio.create_task(access_to(anonymous, "octo/a"))
    staying = asyncio.create_task(access_to(anonymous, "octo/a"))
    await asyncio.sleep(0)
    leaving.cancel()
    await asyncio.sleep(0)
    release.set()

    access = await staying
    assert (access.read, access.write) == (True, False)
    assert leaving.cancelled()
    assert asked == ["octo/a"]
