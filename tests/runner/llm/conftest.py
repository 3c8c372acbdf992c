from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from runner.llm.provider import close_provider
from tests.runner.llm.streams import OPENED


@pytest.fixture(autouse=True)
async def _close_opened_providers() -> AsyncIterator[None]:
    yield
    while OPENED:
        await close_provider(OPENED.pop())
