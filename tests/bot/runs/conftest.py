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
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Playwright, async_playwright, expect

from tests.process_tree import children, descendants, kill, pipe_holders

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
# What of the driver's own log a warning of an end that did not come quotes.
LOG_LINES = 12


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail("no /usr/bin/chromium: run scripts/ensure-browser (scripts/test does)")
    log = tmp_path_factory.mktemp("playwright") / "driver.log"
    with _driver_logging(log):
        playwright = await async_playwright().start()
    try:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=BROWSER_ARGS
        )
        try:
            yield launched
        finally:
            await _bounded(launched.close(), "the browser's close", log)
    finally:
        await _bounded(
            playwright.stop(), "Playwright's stop", log, lambda: _stdin_state(playwright)
        )


@contextlib.contextmanager
def _driver_logging(log: Path) -> Iterator[None]:
    """The driver started within writes what it does with its processes to `log`
    (its environment is this process's, copied as it starts)."""
    saved = {name: os.environ.get(name) for name in ("DEBUG", "DEBUG_FILE")}
    os.environ.update(DEBUG="pw:browser", DEBUG_FILE=str(log))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def _bounded(
    ending: Coroutine[Any, Any, None],
    what: str,
    log: Path | None = None,
    state: Callable[[], str] = lambda: "",
) -> None:
    """End with `ending`, or kill Playwright's driver after END_SECONDS: a
    fresh-clone run once hung at its very end in the browser's close, its
    tests all passed, the driver alive and silent. The warning says what the
    driver still had running, which processes held its stdin open (it ends
    when that closes), the end of its log, and what `state` says."""
    try:
        await asyncio.wait_for(ending, END_SECONDS)
    except TimeoutError:
        drivers = _drivers()
        under = [found for driver in drivers for found in descendants(driver)]
        running = [f"{found.pid} {found.name}" for found in under]
        holders = [holder for driver in drivers for holder in pipe_holders(driver)]
        killed = kill(drivers)
        kill([found.pid for found in under])  # the browser has a process group of its own
        said = _last_lines(log) if log is not None else []
        warnings.warn(
            f"{what} took over {END_SECONDS}s: killed driver {killed};"
            f" it still ran {running or 'nothing'}; its stdin was open in {holders};"
            f" its log ended {said}{state()}",
            stacklevel=1,
        )


def _stdin_state(playwright: Playwright) -> str:
    """What asyncio's transport of the driver's stdin says of itself: this
    process was once seen still holding that pipe 30 s after the stop, which
    closes it. Playwright's own attributes, read for this report only."""
    try:
        writer = playwright.stop.__self__._client._transport._output  # type: ignore[attr-defined]
        pipe = writer.transport
        return (
            f"; its stdin's transport: closing {pipe.is_closing()},"
            f" {pipe.get_write_buffer_size()} bytes not written,"
            # asyncio drops the transport's loop once it has closed the pipe.
            f" its pipe closed {pipe._loop is None}"
        )
    except Exception as error:  # a report, whatever Playwright's insides are
        return f"; its stdin's transport: not found ({error!r})"


def _drivers() -> list[int]:
    """This process's Playwright driver children."""
    return [child.pid for child in children().get(os.getpid(), []) if b"run-driver" in child.argv]


def _last_lines(log: Path) -> list[str]:
    """The log's last lines, cut short, without chromium's complaints of no D-Bus (dozens)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line[:200] for line in lines if "dbus/" not in line][-LOG_LINES:]


@pytest_asyncio.fixture(loop_scope="session")
async def page(chromium: Browser) -> AsyncIterator[Page]:
    context = await chromium.new_context()
    context.set_default_timeout(WAIT_MS)
    try:
        yield await context.new_page()
    finally:
        await context.close()
