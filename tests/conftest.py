"""Fixtures shared by the whole test suite."""

import signal
from collections.abc import Iterator

import pytest

from tests.fakes import FakeAnthropicAPI, openapi
from tests.fakes.gemini_api import FakeGemini
from tests.fakes.openai_responses import FakeOpenAIResponses

# The PostgreSQL fixtures: a cluster per test process, a database per test.
pytest_plugins = ["tests.postgres"]

# The files that take a worker longest (40 s or more of a full run's
# `--durations=0`, longest first). They run first: xdist's `--dist loadfile`
# hands files out in collection order (pytest_configure keeps it from
# reordering them), and a long file handed out last would keep one worker
# busy while the others sit idle. A file missing here costs
# only that; keep the list to the few that take longest.
LONGEST_FIRST = (
    "tests/hostile/test_outage.py",
    "tests/bot/test_multihost.py",
    "tests/hostile/test_service.py",
    "tests/runner/sandbox/test_preparing.py",
    "tests/bot/test_e2e.py",
    "tests/bot/action/test_run.py",
    "tests/bot/worker/test_loop.py",
    "tests/runner/test_job.py",
    "tests/bot/intake/test_serve_durability.py",
    "tests/bench/quality/test_check.py",
    "tests/runner/sandbox/test_docker.py",
    "tests/bot/test_e2e_providers.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C works in the processes the tests start, however the suite was started.

    A shell starts a background job (`./.ci/run &`) with SIGINT ignored, and
    an ignored signal stays ignored in every process started after: the
    tests of what Ctrl-C does to `neo` and the sandbox would wait in vain.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # xdist's loadfile hands files out by how many tests each has, most first,
    # unless told to keep the collection's order: then LONGEST_FIRST holds
    # (below). Without it a file of one long test went last and ran alone.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the files of LONGEST_FIRST first, in its order; the rest keep theirs."""
    rank = {path: number for number, path in enumerate(LONGEST_FIRST)}
    last = len(LONGEST_FIRST)
    # sorted is stable: the tests of one file keep their order.
    items[:] = sorted(items, key=lambda item: rank.get(item.nodeid.split("::")[0], last))


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
