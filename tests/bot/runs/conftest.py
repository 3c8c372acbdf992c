"""One headless Debian chromium for the whole session (scripts/ensure-browser installs it);
each test opens pages of its own.

Playwright's async API on pytest-asyncio's session loop: the sync API would keep
an event loop running in the test thread, and every async test after it in the
process would fail to start its own. Browser tests run on that loop:
`pytestmark = BROWSER_LOOP`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

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


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: run scripts/ensure-browser (scripts/test does)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=BROWSER_ARGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(chromium: Browser) -> AsyncIterator[Page]:
    context = await chromium.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        yield await context.new_page()
    finally:
        await context.close()
