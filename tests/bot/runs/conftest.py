"""One headless Debian chromium for the whole session (scripts/ensure-browser installs it);
each test opens pages of its own.

Playwright's async API on pytest-asyncio's session loop: the sync API would keep
an event loop running in the test thread, and every async test after it in the
process would fail to start its own. Browser tests run on that loop:
`pytestmark = BROWSER_LOOP`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import warnings
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

CHROMIUM = Path("/usr/bin/chromium")
# Never a download: Debian's chromium, with nothing of its own on the network.
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# The mark of a browser test: it runs on the loop the browser was started on.
BROWSER_LOOP = pytest.mark.asyncio(loop_scope="session")
# What a page is waited for, at most: the suite shares two cores with much else.
WAIT_MS = 20_000
expect.set_options(timeout=WAIT_MS)


# How long the browser and Playwright's driver get to end after the last test.
END_SECONDS = 30


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: run scripts/ensure-browser (scripts/test does)")
    playwright = await async_playwright().start()
    try:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=BROWSER_ARGS
        )
        try:
            yield launched
        finally:
            await _bounded(launched.close(), "the browser's close")
    finally:
        await _bounded(playwright.stop(), "Playwright's stop")


async def _bounded(ending: Coroutine[Any, Any, None], what: str) -> None:
    """End with `ending`, or kill Playwright's driver after END_SECONDS: a
    fresh-clone run once hung at its very end in the browser's close, its
    tests all passed, the driver alive and silent."""
    try:
        await asyncio.wait_for(ending, END_SECONDS)
    except TimeoutError:
        killed = _kill_drivers()
        warnings.warn(f"{what} took over {END_SECONDS}s: killed driver {killed}", stacklevel=1)


def _kill_drivers() -> list[int]:
    """SIGKILL this process's Playwright driver children; their pids."""
    killed = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        # The parent's pid is the stat line's fourth field, after the name's ')'.
        parent = int(stat.rpartition(")")[2].split()[1])
        if parent == os.getpid() and b"run-driver" in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    return killed


@pytest_asyncio.fixture(loop_scope="session")
async def page(chromium: Browser) -> AsyncIterator[Page]:
    context = await chromium.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        yield await context.new_page()
    finally:
        await context.close()
