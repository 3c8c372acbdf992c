"""The browser fixture's end is bounded: a driver that does not answer is killed."""

from __future__ import annotations

import asyncio
import os

import pytest
from playwright.async_api import async_playwright

from tests.bot.runs import conftest


async def test_an_end_that_never_comes_kills_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "END_SECONDS", 0.2)
    playwright = await async_playwright().start()

    with pytest.warns(UserWarning, match=r"the end took over 0.2s: killed driver \[\d+\]") as said:
        await conftest._bounded(asyncio.sleep(3600), "the end")

    (pid,) = [int(n) for n in str(said[0].message).rpartition("[")[2].strip("]").split(",")]
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or "Z" in _state(pid):
            break
        await asyncio.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in _state(pid)
    await conftest._bounded(playwright.stop(), "Playwright's stop")  # ends, or warns


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"
