"""The ChatGPT subscription provider: the real `openai` SDK against the fake
Codex backend, signed in through the fake sign-in service."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.auth import oauth
from runner.auth.credentials import credentials_from_tokens
from runner.auth.endpoints import endpoints
from runner.auth.errors import AuthError, NotSignedIn
from runner.auth.storage import load_credentials, save_credentials
from runner.errors import ConfigError
from runner.llm.chatgpt import chatgpt_provider
from runner.llm.errors import ProviderHTTPError
from runner.llm.openai_responses import OpenAIResponsesProvider
from runner.llm.pricing import PricedProvider
from runner.llm.provider import Completed
from runner.llm.registry import make_provider
from runner.llm.retry import RetryPolicy
from runner.llm.types import TOOL_USE, Message, Request, SystemPrompt, Text, ToolSpec
from tests.fakes.chatgpt_auth import FakeChatGPTAuth
from tests.fakes.openai_responses import (
    ErrorReply,
    FakeOpenAIResponses,
    Reply,
    Usage,
    function_call,
    message,
)
from tests.runner.llm.streams import collect, opened
from tests.small_disk import fill, small_disk

HELLO = Request(
    messages=(Message("user", (Text("hello"),)),),
    system=SystemPrompt(("You are Neo.",)),
    tools=(ToolSpec("bash", "Run a command.", {"type": "object", "properties": {}}),),
)


@pytest.fixture
def auth() -> Iterator[FakeChatGPTAuth]:
    with FakeChatGPTAuth() as server:
        yield server


@pytest.fixture
def backend(auth: FakeChatGPTAuth) -> Iterator[FakeOpenAIResponses]:
    with FakeOpenAIResponses(chatgpt=auth) as server:
        yield server


@pytest.fixture
def home(tmp_path: Path, auth: FakeChatGPTAuth) -> Path:
    """A Neo home signed in an hour ago, its token good for another hour."""
    save_credentials(tmp_path, credentials_from_tokens(auth.issue(), now=time.time()))
    return tmp_path


def subscription(home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses) -> Any:
    made = chatgpt_provider(
        None,
        home=home,
        env={**auth.env, **backend.env},
        retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02),
    )
    opened(made)
    return made


def refreshes(auth: FakeChatGPTAuth) -> int:
    return sum(1 for r in auth.requests if r.body.get("grant_type") == "refresh_token")


async def test_a_call_is_signed_as_the_account_and_shaped_for_the_backend(
    home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    backend.script(
        Reply(
            [message("Listing."), function_call("call_1", "bash", {"command": "ls"})],
            usage=Usage(1_000, 30, cached_tokens=400),
        )
    )

    events = await collect(subscription(home, auth, backend), HELLO)

    done = events[-1]
    assert isinstance(done, Completed)
    assert done.response.stop_reason == TOOL_USE
    assert done.response.text == "Listing."
    assert done.response.usage.input_tokens == 600
    assert done.response.usage.cache_read_input_tokens == 400
    sent = backend.requests[0]
    stored = load_credentials(home)
    assert sent.path == "/backend-api/codex/responses"
    assert sent.headers["authorization"] == f"Bearer {stored.access_token}"
    assert sent.headers["chatgpt-account-id"] == "acct-fake-0001"
    assert sent.headers["openai-beta"] == "responses=experimental"
    assert "max_output_tokens" not in sent.body
    assert sent.body["store"] is False
    assert sent.body["stream"] is True
    assert sent.body["instructions"] == "You are Neo."
    assert refreshes(auth) == 0


async def test_a_token_about_to_expire_is_refreshed_first_and_stored(
    tmp_path: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    # Two minutes left: inside the five-minute margin.
    old = credentials_from_tokens(auth.issue(lifetime=120), now=time.time())
    save_credentials(tmp_path, old)
    backend.script(Reply([message("one")]), Reply([message("two")]))
    provider = subscription(tmp_path, auth, backend)

    await collect(provider, HELLO)
    await collect(provider, HELLO)

    assert refreshes(auth) == 1
    stored = load_credentials(tmp_path)
    assert stored.refresh_token != old.refresh_token
    sent = [r.headers["authorization"] for r in backend.requests]
    assert sent == [f"Bearer {stored.access_token}"] * 2


async def test_a_refused_token_is_refreshed_once_and_the_call_goes_through(
    home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    auth.revoke(load_credentials(home).access_token)
    backend.script(Reply([message("after the refresh")]))

    events = await collect(subscription(home, auth, backend), HELLO)

    assert isinstance(events[-1], Completed)
    assert events[-1].response.text == "after the refresh"
    assert refreshes(auth) == 1
    assert [r.headers["authorization"] for r in backend.requests][-1] == (
        f"Bearer {load_credentials(home).access_token}"
    )


async def test_a_401_after_the_refresh_is_one_line_naming_the_login(
    home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    auth.revoke(load_credentials(home).access_token)
    auth.revoke_new = True

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(subscription(home, auth, backend), HELLO)

    line = str(caught.value)
    assert line == (
        "openai 401 token_expired: Provided authentication token is expired. Please try "
        "signing in again. (run `neo login chatgpt`)"
    )
    assert refreshes(auth) == 1
    assert len(backend.requests) == 2


async def test_a_refresh_the_service_refuses_is_one_line(
    home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    stored = load_credentials(home)
    auth.revoke(stored.access_token)
    # Another client spent the refresh token and kept what it got.
    async with oauth.client() as http:
        await oauth.refresh(http, endpoints(auth.env), stored, now=time.time())

    with pytest.raises(AuthError) as caught:
        await collect(subscription(home, auth, backend), HELLO)

    assert str(caught.value) == (
        "chatgpt sign-in: token refresh refused: 400 refresh_token_reused: Your refresh "
        "token has already been used. (run `neo login chatgpt`)"
    )
    assert stored.refresh_token not in str(caught.value)


async def test_tokens_another_process_refreshed_are_used_without_refreshing_again(
    home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    provider = subscription(home, auth, backend)
    stale = load_credentials(home)
    auth.revoke(stale.access_token)
    async with oauth.client() as http:
        fresh = await oauth.refresh(http, endpoints(auth.env), stale, now=time.time())
    save_credentials(home, fresh)
    backend.script(Reply([message("shared")]))

    events = await collect(provider, HELLO)

    assert isinstance(events[-1], Completed)
    assert refreshes(auth) == 1  # the other process's only
    assert backend.requests[-1].headers["authorization"] == f"Bearer {fresh.access_token}"


def test_the_registry_builds_it_only_when_signed_in(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NEO_HOME", str(tmp_path / "nobody"))
    with pytest.raises(
        NotSignedIn, match=r"^not signed in to ChatGPT \(run `neo login chatgpt`\)$"
    ):
        make_provider("openai", openai_auth="subscription")

    monkeypatch.setenv("NEO_HOME", str(home))
    made = make_provider("openai", "gpt-5-codex", openai_auth="subscription")
    assert isinstance(made, PricedProvider)
    assert isinstance(made.inner, OpenAIResponsesProvider)
    opened(made.inner)
    assert made.model == "gpt-5-codex"

    with pytest.raises(ConfigError, match="unknown openai_auth 'oauth'"):
        make_provider("openai", openai_auth="oauth")


async def test_a_token_quoted_back_in_an_error_stays_out_of_the_line(
    home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    token = load_credentials(home).access_token
    backend.script(ErrorReply(400, "invalid_request", f"bad request for token {token}"))

    with pytest.raises(ProviderHTTPError) as caught:
        await collect(subscription(home, auth, backend), HELLO)

    assert str(caught.value) == "openai 400 invalid_request: bad request for token eyJ…"


@pytest.fixture
def full_home(tmp_path: Path) -> Iterator[Path]:
    """A Neo home on a 64 KiB tmpfs: a full disk, for real, once `fill` is called."""
    with small_disk(tmp_path / "full-home") as home:
        yield home


async def test_refreshed_tokens_that_cannot_be_stored_are_one_line(
    full_home: Path, auth: FakeChatGPTAuth, backend: FakeOpenAIResponses
) -> None:
    save_credentials(full_home, credentials_from_tokens(auth.issue(lifetime=60), now=time.time()))
    provider = subscription(full_home, auth, backend)
    fill(full_home)

    with pytest.raises(AuthError) as caught:
        await collect(provider, HELLO)

    assert str(caught.value) == (
        "chatgpt sign-in: cannot store the refreshed tokens (No space left on device); "
        "run `neo login chatgpt` once it can be written"
    )
    assert refreshes(auth) == 1
    assert not backend.requests
