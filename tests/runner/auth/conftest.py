"""The fake sign-in service, per test."""

from collections.abc import Iterator

import pytest

from tests.fakes.chatgpt_auth import FakeChatGPTAuth


@pytest.fixture
def fake_auth() -> Iterator[FakeChatGPTAuth]:
    with FakeChatGPTAuth() as server:
        yield server
