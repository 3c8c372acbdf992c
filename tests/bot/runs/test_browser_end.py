"""The browser fixture's end is bounded: a driver that does not answer is killed."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

from tests.bot.runs import conftest


async def test_an_end_that_never_comes_kills_the_driver_and_says_what_it_ran(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(conftest, "END_SECONDS", 0.2)
    log = tmp_path / "driver.log"
    with conftest._driver_logging(log):
        playwright = await async_playwright().start()
    assert "DEBUG_FILE" not in os.environ
    browser = await playwright.chromium.launch(
        executable_path=str(conftest.CHROMIUM), args=conftest.BROWSER_ARGS
    )

    # Playwright's insides as the report reads them, found.
    assert conftest._stdin_state(playwright) == (
        "; its stdin's transport: closing False, 0 bytes not written, its pipe closed False"
    )

    with pytest.warns(UserWarning, match=r"the end took over 0.2s: killed driver \[\d+\]") as said:
        await conftest._bounded(asyncio.sleep(3600), "the end", log)

    message = str(said[0].message)
    killed = re.search(r"killed driver \[(\d+)\]; it still ran \[(.*?)\]; its stdin ", message)
    assert killed is not None
    ran = [int(entry.split()[0].strip("'")) for entry in killed[2].split(",")]
    assert "chromium" in killed[2]
    assert "<launched> pid=" in message
    # This process had not closed the driver's stdin: it is named holding it.
    assert re.search(
        rf"its stdin was open in \['{os.getpid()} [^']+ \d+ w \(this process\)'\]", message
    )
    for pid in [int(killed[1]), *ran]:
        assert await _ends(pid), f"{pid} is still running"
    await conftest._bounded(browser.close(), "the browser's close")  # ends, or warns
    await conftest._bounded(playwright.stop(), "Playwright's stop")


async def _ends(pid: int) -> bool:
    """Whether `pid` is gone (or a zombie) within 5 s."""
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}") or "Z" in _state(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"
