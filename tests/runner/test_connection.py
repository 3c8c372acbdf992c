"""A provider that cannot be reached: one line naming host, cause and what to check, fast.

Every adapter, through its real SDK, against a closed port on loopback and a
host the resolver does not know (a stub `socket.getaddrinfo`: the test never
asks a real DNS server), with the waits recorded instead of slept: three
attempts, two short waits. How long that may take at most is the policy's
arithmetic (`RetryPolicy.connect_seconds`), not a clock. Settings no request
can use (a malformed base URL, one that is not http(s), a key with a line
break) are ConfigErrors before any attempt, and `neo run` exits 2 on them.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from runner.connection import (
    CONNECT_TIMEOUT,
    Endpoint,
    check_api_key,
    check_base_url,
    describe,
)
from runner.errors import ConfigError
from runner.llm.anthropic import AnthropicProvider
from runner.llm.chat_completions import CHAT_COMPLETIONS, ChatCompletionsProvider
from runner.llm.errors import ProviderConnectionError
from runner.llm.google import GoogleProvider
from runner.llm.openai_responses import OpenAIResponsesProvider
from runner.llm.openrouter import OPENROUTER
from runner.llm.provider import Provider, Retrying, close_provider
from runner.llm.registry import make_provider
from runner.llm.retry import RetryPolicy
from tests.runner.llm.streams import HELLO, OPENED, Sleeps, opened

ROOT = Path(__file__).resolve().parents[2]
NEO = Path(sys.executable).with_name("neo")
UNKNOWN_HOST = "api.nowhere.test"
OFFLINE_HOST = "api.offline.test"

# name → (the variable that moves its base URL, how to build it at `url`)
Make = Callable[[str, RetryPolicy, Sleeps], Provider]
ADAPTERS: dict[str, tuple[str, Make]] = {
    "anthropic": (
        "ANTHROPIC_BASE_URL",
        lambda url, retry, sleep: AnthropicProvider(
            "claude-sonnet-5-5", api_key="k", base_url=url, retry=retry, sleep=sleep
        ),
    ),
    "openai": (
        "OPENAI_BASE_URL",
        lambda url, retry, sleep: OpenAIResponsesProvider(
            "gpt-5", api_key="k", base_url=f"{url}/v1", retry=retry, sleep=sleep
        ),
    ),
    "chat-completions": (
        "OPENAI_BASE_URL",
        lambda url, retry, sleep: ChatCompletionsProvider(
            "m",
            dialect=CHAT_COMPLETIONS,
            api_key="k",
            base_url=f"{url}/v1",
            retry=retry,
            sleep=sleep,
        ),
    ),
    "openrouter": (
        "OPENROUTER_BASE_URL",
        lambda url, retry, sleep: ChatCompletionsProvider(
            "m", dialect=OPENROUTER, api_key="k", base_url=f"{url}/v1", retry=retry, sleep=sleep
        ),
    ),
    "google": (
        "GOOGLE_GEMINI_BASE_URL",
        lambda url, retry, sleep: GoogleProvider(
            "gemini-2.5-pro", api_key="k", base_url=url, retry=retry, sleep=sleep
        ),
    ),
}


@pytest.fixture(autouse=True)
async def _close_opened_providers() -> AsyncIterator[None]:
    yield
    while OPENED:
        await close_provider(OPENED.pop())


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The system resolver, except for two names: one no DNS server knows, and
    one asked of a machine that is offline."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name == UNKNOWN_HOST:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if name == OFFLINE_HOST:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


async def failure(provider: Provider) -> tuple[str, list[Retrying]]:
    """The one line a request ends with, and the retries announced on the way."""
    retries: list[Retrying] = []

    async def drain() -> None:
        async for event in opened(provider).stream(HELLO):
            if isinstance(event, Retrying):
                retries.append(event)

    with pytest.raises(ProviderConnectionError) as raised:
        await drain()
    return str(raised.value), retries


def test_a_call_that_never_connects_ends_within_fifteen_seconds() -> None:
    policy = RetryPolicy()

    # Three attempts of at most CONNECT_TIMEOUT each, and the two waits between.
    assert policy.connect_retries == 2
    assert CONNECT_TIMEOUT == 4.0
    assert policy.connect_seconds(CONNECT_TIMEOUT) == 3 * 4.0 + 0.5 + 1.0
    assert all(policy.connect_delay(n) <= 0.5 * 2 ** (n - 1) for n in (1, 2) for _ in range(50))
    assert policy.connect_delay(3) is None


@pytest.mark.parametrize("name", list(ADAPTERS))
async def test_a_closed_port_is_one_line_after_two_short_waits(name: str, closed_port: int) -> None:
    variable, make = ADAPTERS[name]
    sleeps = Sleeps()

    line, retries = await failure(make(f"http://127.0.0.1:{closed_port}", RetryPolicy(), sleeps))

    assert line == (
        f"{name}: cannot connect to 127.0.0.1:{closed_port}: connection refused"
        f" (check {variable} and the network)"
    )
    assert len(retries) == 2
    assert len(sleeps.delays) == 2
    assert sleeps.delays[0] <= 0.5
    assert sleeps.delays[1] <= 1.0


@pytest.mark.usefixtures("resolver")
@pytest.mark.parametrize("name", list(ADAPTERS))
@pytest.mark.parametrize(
    ("host", "cause"),
    [
        pytest.param(UNKNOWN_HOST, "DNS: no such host", id="unknown-host"),
        pytest.param(OFFLINE_HOST, "DNS lookup failed (offline?)", id="offline"),
    ],
)
async def test_an_unresolvable_host_is_one_line_after_two_short_waits(
    name: str, host: str, cause: str
) -> None:
    variable, make = ADAPTERS[name]
    sleeps = Sleeps()

    line, _ = await failure(make(f"https://{host}", RetryPolicy(), sleeps))

    assert (
        line == f"{name}: cannot connect to {host}:443: {cause} (check {variable} and the network)"
    )
    assert len(sleeps.delays) == 2


async def test_a_proxy_that_is_not_there_is_named(
    closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed_port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    _, make = ADAPTERS["anthropic"]

    line, _ = await failure(make("https://api.anthropic.com", RetryPolicy(), Sleeps()))

    assert line == (
        f"anthropic: cannot connect to the proxy 127.0.0.1:{closed_port} for"
        " api.anthropic.com:443: connection refused (check HTTPS_PROXY and the network)"
    )


# -- the line for each cause (pure) ------------------------------------------------------

ENDPOINT = Endpoint("anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
REQUEST = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")


def wrapped(cause: BaseException, outer: type[httpx2.TransportError]) -> BaseException:
    """`cause` as httpx2 raises it, inside `outer`, with the request."""
    try:
        try:
            raise cause
        except BaseException as inner:
            raise outer(str(inner) or type(inner).__name__, request=REQUEST) from inner
    except httpx2.TransportError as error:
        return error


def certificate_error() -> ssl.SSLCertVerificationError:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_message = "self-signed certificate in certificate chain"
    return error


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (
            wrapped(ConnectionRefusedError(111, "refused"), httpx2.ConnectError),
            "connection refused",
        ),
        (
            wrapped(socket.gaierror(socket.EAI_NONAME, "x"), httpx2.ConnectError),
            "DNS: no such host",
        ),
        (wrapped(TimeoutError(), httpx2.ConnectTimeout), "connection timed out"),
        (wrapped(ConnectionResetError(104, "reset"), httpx2.ConnectError), "connection reset"),
        (wrapped(OSError(101, "unreachable"), httpx2.ConnectError), "network unreachable"),
        (wrapped(ssl.SSLEOFError(8, "eof"), httpx2.ConnectError), "TLS handshake failed"),
        (
            wrapped(certificate_error(), httpx2.ConnectError),
            "TLS certificate not trusted (self-signed certificate in certificate chain)",
        ),
    ],
)
def test_each_cause_says_what_failed(error: BaseException, cause: str) -> None:
    failure = describe(ENDPOINT, error)

    assert failure.connect
    assert not failure.config
    assert failure.line == (
        f"anthropic: cannot connect to api.anthropic.com:443: {cause}"
        " (check ANTHROPIC_BASE_URL and the network)"
    )


def test_a_stream_that_broke_after_connecting_takes_the_long_retries() -> None:
    failure = describe(ENDPOINT, wrapped(ConnectionResetError(104, "x"), httpx2.ReadError))

    assert not failure.connect
    assert failure.line == (
        "anthropic: the connection to api.anthropic.com:443 broke: connection reset"
        " (check the network)"
    )


def test_a_header_the_key_broke_is_a_config_error_that_never_shows_the_key() -> None:
    error = wrapped(
        httpx2.LocalProtocolError("Illegal header value b'Bearer sk-ant-SECRET\\n'"),
        httpx2.LocalProtocolError,
    )

    failure = describe(ENDPOINT, error)

    assert failure.config
    assert "SECRET" not in failure.line
    assert failure.line.startswith("anthropic: ANTHROPIC_API_KEY has a character")


# -- settings no request can use -------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1", "Invalid port: ':1'"),
        ("localhost:8080", "it must start with http:// or https://"),
        ("ftp://models.example", "it must start with http:// or https://"),
        ("https://", "it has no host"),
    ],
)
def test_a_base_url_no_request_can_use_is_a_config_error(url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        check_base_url("anthropic", "ANTHROPIC_BASE_URL", url)

    assert str(raised.value) == (
        f"anthropic: ANTHROPIC_BASE_URL is not an http:// or https:// URL: {url} ({problem})"
    )


def test_a_password_in_a_bad_base_url_is_not_shown() -> None:
    with pytest.raises(ConfigError) as raised:
        check_base_url("anthropic", "ANTHROPIC_BASE_URL", "ftp://me:hunter2@proxy.example")

    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    "key", ["sk-ant-abc\n", "sk-ant abc", " sk-ant-abc", "sk-ant-\x00", "sk-ä"]
)
def test_a_key_no_header_can_carry_is_a_config_error(key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        check_api_key("anthropic", "ANTHROPIC_API_KEY", key)

    assert "sk-ant" not in str(raised.value)
    assert "\n" not in str(raised.value)


PROVIDER_SETTINGS = [
    pytest.param("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", id="anthropic"),
    pytest.param("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", id="openai"),
    pytest.param("chat-completions", "OPENAI_API_KEY", "OPENAI_BASE_URL", id="chat-completions"),
    pytest.param("openrouter", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL", id="openrouter"),
    pytest.param("google", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", id="google"),
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_", "OPENROUTER_", "GEMINI_", "GOOGLE_")):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.parametrize(("name", "key", "base"), PROVIDER_SETTINGS)
@pytest.mark.parametrize("url", ["http://[::1", "localhost:8080"])
def test_every_provider_refuses_a_bad_base_url_before_any_call(
    clean_env: pytest.MonkeyPatch, name: str, key: str, base: str, url: str
) -> None:
    clean_env.setenv(key, "k")
    clean_env.setenv(base, url)

    with pytest.raises(ConfigError) as raised:
        make_provider(name, "m")

    assert str(raised.value).startswith(f"{name}: {base} is not an http:// or https:// URL: ")


@pytest.mark.parametrize(("name", "key", "base"), PROVIDER_SETTINGS)
def test_every_provider_refuses_a_key_with_a_line_break_before_any_call(
    clean_env: pytest.MonkeyPatch, name: str, key: str, base: str
) -> None:
    clean_env.setenv(key, "sk-secret-123\n")

    with pytest.raises(ConfigError) as raised:
        make_provider(name, "m")

    assert str(raised.value).startswith(f"{name}: {key} has a character an API key cannot have")
    assert "secret" not in str(raised.value)


# -- neo run ------------------------------------------------------------------------------------


def neo_run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "NEO_"))}
    return subprocess.run(
        [str(NEO), "run", "--repo", str(tmp_path), "say hi"],
        cwd=ROOT,
        env={**clean, "NEO_HOME": str(tmp_path / "home"), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "line"),
    [
        pytest.param(
            {"ANTHROPIC_BASE_URL": "http://[::1"},
            "neo: error: anthropic: ANTHROPIC_BASE_URL is not an http:// or https:// URL:"
            " http://[::1 (Invalid port: ':1')",
            id="malformed-url",
        ),
        pytest.param(
            {"ANTHROPIC_BASE_URL": "localhost:8080"},
            "neo: error: anthropic: ANTHROPIC_BASE_URL is not an http:// or https:// URL:"
            " localhost:8080 (it must start with http:// or https://)",
            id="no-scheme",
        ),
        pytest.param(
            {"ANTHROPIC_API_KEY": "sk-ant-secret\n"},
            "neo: error: anthropic: ANTHROPIC_API_KEY has a character an API key cannot have"
            " (a line break or a space pasted with it?): set it again",
            id="key-with-a-line-break",
        ),
    ],
)
def test_neo_run_ends_a_setting_no_request_can_use_in_one_line_and_exit_2(
    tmp_path: Path, env: dict[str, str], line: str
) -> None:
    done = neo_run(tmp_path, {"ANTHROPIC_API_KEY": "sk-ant-k", **env})

    assert done.returncode == 2, done.stderr
    assert done.stderr == line + "\n"
    assert "secret" not in done.stdout + done.stderr


def test_neo_run_against_a_closed_port_ends_in_one_line(tmp_path: Path, closed_port: int) -> None:
    done = neo_run(
        tmp_path,
        {"ANTHROPIC_API_KEY": "sk-ant-k", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{closed_port}"},
    )

    assert done.returncode == 1, done.stderr
    lines = (done.stdout + done.stderr).strip().splitlines()
    error = (
        f"neo: error: anthropic: cannot connect to 127.0.0.1:{closed_port}: connection refused"
        " (check ANTHROPIC_BASE_URL and the network)"
    )
    assert [line for line in lines if "error" in line] == [error], lines
    assert sum(line.startswith("↻ retrying in ") for line in lines) == 2, lines
