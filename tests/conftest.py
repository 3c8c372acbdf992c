"""Fixtures shared by the whole test suite."""

from collections.abc import Iterator

import pytest

from tests.fakes import FakeAnthropicAPI


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicAPI]:
    """A fake Anthropic Messages API on 127.0.0.1, with an empty script."""
    with FakeAnthropicAPI() as server:
        yield server
