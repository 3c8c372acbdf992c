"""Fixtures shared by the whole test suite."""

from collections.abc import Iterator

import pytest

from tests.fakes import FakeAnthropicAPI, openapi
from tests.fakes.gemini_api import FakeGemini
from tests.fakes.openai_responses import FakeOpenAIResponses

# The PostgreSQL fixtures: a cluster per test process, a database per test.
pytest_plugins = ["tests.postgres"]


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicAPI]:
    """A fake Anthropic Messages API on 127.0.0.1, with an empty script."""
    with FakeAnthropicAPI() as server:
        yield server


@pytest.fixture(autouse=True)
def _github_conformance() -> Iterator[None]:
    """Fail a test whose exchanges with the fake GitHub disagree with GitHub's description.

    Exchanges are checked after the test, so a violation fails the test that
    caused it (one line each) without changing what the fake answered.
    """
    yield
    problems = openapi.violations(openapi.drain())
    if problems:
        pytest.fail(
            "the fake GitHub's exchanges disagree with GitHub's OpenAPI description:\n"
            + "\n".join(dict.fromkeys(problems)),
            pytrace=False,
        )


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIResponses]:
    """A fake OpenAI Responses API on 127.0.0.1, with an empty script."""
    with FakeOpenAIResponses() as server:
        yield server


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    """A fake Gemini API on 127.0.0.1, with an empty script."""
    with FakeGemini() as server:
        yield server
