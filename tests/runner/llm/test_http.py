"""Every provider's SDK client is built on the process's one TLS context.

Loading the CA bundle into a new context costs tens of milliseconds of CPU,
and a worker builds a provider for every job; so after the first provider,
building another loads no certificates at all.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import pytest

from runner.llm.anthropic import AnthropicProvider
from runner.llm.chat_completions import ChatCompletionsProvider
from runner.llm.google import GoogleProvider
from runner.llm.http import tls_context
from runner.llm.openai_responses import OpenAIResponsesProvider

BUILDERS: dict[str, Callable[[], object]] = {
    "anthropic": lambda: AnthropicProvider(api_key="sk-ant-test"),
    "openai": lambda: OpenAIResponsesProvider(api_key="sk-test"),
    "chat-completions": lambda: ChatCompletionsProvider(
        "some-model", api_key="sk-test", base_url="https://models.example/v1"
    ),
    "google": lambda: GoogleProvider(api_key="gemini-test"),
}


@pytest.fixture
def certificate_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each time any SSL context in this process loads trust anchors."""
    loads: list[str] = []
    for name in ("load_verify_locations", "load_default_certs", "set_default_verify_paths"):
        original = getattr(ssl.SSLContext, name)

        def counted(self: ssl.SSLContext, *args: Any, _o: Any = original, _n: str = name) -> Any:
            loads.append(_n)
            return _o(self, *args)

        monkeypatch.setattr(ssl.SSLContext, name, counted)
    return loads


@pytest.mark.parametrize("provider", sorted(BUILDERS))
def test_a_provider_loads_no_certificates_once_the_process_has_its_context(
    provider: str, certificate_loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    tls_context()
    certificate_loads.clear()
    BUILDERS[provider]()
    BUILDERS[provider]()
    assert certificate_loads == []


async def test_the_chat_completions_preflight_loads_no_certificates(
    certificate_loads: list[str], unused_tcp_port: int
) -> None:
    # Nothing listens there: the preflight's client is built, then refused.
    provider = ChatCompletionsProvider(
        "some-model", api_key="sk-test", base_url=f"http://127.0.0.1:{unused_tcp_port}/v1"
    )
    tls_context()
    certificate_loads.clear()
    await provider.prepare()
    await provider.aclose()
    assert certificate_loads == []
