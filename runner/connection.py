"""What a service that cannot be reached says, and settings no request can use.

Pure but for `proxy_for`, which reads the environment's proxy variables.

Model providers (runner/llm) and GitHub (bot/github) alike: a connection
failure is one line naming the host, the cause and what to check:

    anthropic: cannot connect to 127.0.0.1:8080: connection refused
    (check ANTHROPIC_BASE_URL and the network)

Failing to connect (DNS, refused, timed out, TLS, a proxy) is retried a few
times within seconds (RetryPolicy's connect_*; each attempt bounded by
CONNECT_TIMEOUT); a stream that broke after connecting is retried like a 5xx.
A base URL that is not http(s) and a key that no HTTP header can carry fail
the same way every time: they are configuration errors, never retried, and
checked before the first call (`check_base_url`, `check_api_key`).
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import httpx2

from runner.errors import ConfigError
from runner.text import one_line

__all__ = [
    "CONNECT_TIMEOUT",
    "Endpoint",
    "Failure",
    "check_api_key",
    "check_base_url",
    "describe",
    "proxy_for",
    "request_url",
]

# Seconds one connection attempt (DNS, TCP, TLS) may take: the SDKs' own
# default is 5; three attempts and their waits then fit in 15 s.
CONNECT_TIMEOUT = 4.0

_DNS_NO_HOST = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
_UNREACHABLE = {errno.ENETUNREACH: "network unreachable", errno.EHOSTUNREACH: "host unreachable"}
_USERINFO = re.compile(r"//[^/@]*@")
# What httpx raises while it makes a connection (a timeout waiting for the
# pool counts: no connection was had). The providers' SDKs use httpx2,
# githubkit httpx: both families are read alike.
_CONNECTING = (
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
    httpx2.PoolTimeout,
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
)
_TIMEOUTS = (httpx2.ConnectTimeout, httpx2.PoolTimeout, httpx.ConnectTimeout, httpx.PoolTimeout)
_BAD_URL = (
    httpx2.UnsupportedProtocol,
    httpx2.InvalidURL,
    httpx.UnsupportedProtocol,
    httpx.InvalidURL,
)
_HEADER = (httpx2.LocalProtocolError, httpx.LocalProtocolError)
_PROXY = (httpx2.ProxyError, httpx.ProxyError)
_TRANSPORT = (httpx2.TransportError, httpx.TransportError)
URL = httpx2.URL | httpx.URL


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Who is being reached, and which settings move it: for the line's advice."""

    provider: str
    # The variable that sets the base URL ("" when none does).
    base_variable: str
    key_variable: str


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed request, as the adapters act on it."""

    line: str
    # Could not connect at all (the fast retries), rather than a broken stream.
    connect: bool
    # The same every time: a configuration error, not retried.
    config: bool = False


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error` and what it wraps, causes and contexts, each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def request_url(error: BaseException) -> URL | None:
    for link in _chain(error):
        try:
            request = getattr(link, "request", None)
        except RuntimeError:  # httpx2 raises when an error has no request
            continue
        url = getattr(request, "url", None)
        if isinstance(url, (httpx2.URL, httpx.URL)):
            return url
    return None


def _where(url: URL | None) -> str:
    if url is None or not url.host:
        return "the server"
    port = url.port or (443 if url.scheme == "https" else 80)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{host}:{port}"


def shown_url(url: str) -> str:
    """A URL fit for a message: no user or password, one line, not too long."""
    return one_line(_USERINFO.sub("//…@", url), 120)


def proxy_for(url: URL | None) -> str | None:
    """The proxy the environment sets for `url` (HTTPS_PROXY, ALL_PROXY, NO_PROXY)."""
    if url is None:
        return None
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


def _cause(error: BaseException) -> str | None:
    """What failed underneath, in a few words, when the chain says."""
    for link in _chain(error):
        if isinstance(link, socket.gaierror):
            if link.errno in _DNS_NO_HOST:
                return "DNS: no such host"
            if link.errno == socket.EAI_AGAIN:
                return "DNS lookup failed (offline?)"
            return f"DNS lookup failed ({one_line(link.strerror or link, 80)})"
        if isinstance(link, ssl.SSLCertVerificationError):
            return f"TLS certificate not trusted ({one_line(link.verify_message or link, 80)})"
        if isinstance(link, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        if isinstance(link, ConnectionResetError):
            return "connection reset"
        if isinstance(link, (TimeoutError, *_TIMEOUTS)):
            return "connection timed out"
        if isinstance(link, OSError) and link.errno in _UNREACHABLE:
            return _UNREACHABLE[link.errno]
    return None


def describe(endpoint: Endpoint, error: BaseException, *, proxy: str | None = None) -> Failure:
    """The line and the kind of a failed request that got no HTTP answer.

    `proxy` is the proxy the request went through (`proxy_for`). Never quotes
    the error's own text where that may carry a header (and so the key).
    """
    name = endpoint.provider
    url = request_url(error)
    links = list(_chain(error))
    if any(isinstance(link, _BAD_URL) for link in links):
        variable = endpoint.base_variable or "the base URL"
        shown = f": {shown_url(str(url))}" if url is not None else ""
        line = f"{name}: {variable} is not an http:// or https:// URL{shown}"
        return Failure(line, connect=False, config=True)
    if any(_is_header_error(link) for link in links):
        return Failure(_key_line(name, endpoint.key_variable), connect=False, config=True)
    if any(isinstance(link, _PROXY) for link in links):
        line = f"{name}: the proxy refused to connect to {_where(url)} (check HTTPS_PROXY)"
        return Failure(line, connect=True)
    cause = _cause(error)
    if not any(isinstance(link, _CONNECTING) for link in links):
        # Connected, then the stream broke: worth the longer retries.
        broken = next((type(link).__name__ for link in links if _is_transport(link)), "")
        why = cause or broken or "no reason given"
        line = f"{name}: the connection to {_where(url)} broke: {why} (check the network)"
        return Failure(line, connect=False)
    cause = cause or "connection failed"
    if proxy is not None:
        target = f"the proxy {_proxy_where(proxy)} for {_where(url)}"
        advice = "check HTTPS_PROXY and the network"
    else:
        target = _where(url)
        advice = f"check {endpoint.base_variable} and the network"
        if not endpoint.base_variable:
            advice = "check the network"
    return Failure(f"{name}: cannot connect to {target}: {cause} ({advice})", connect=True)


def _proxy_where(proxy: str) -> str:
    try:
        return _where(httpx2.URL(proxy))
    except (httpx2.InvalidURL, ValueError):
        return shown_url(proxy)


def _is_transport(error: BaseException) -> bool:
    return isinstance(error, _TRANSPORT)


def _is_header_error(error: BaseException) -> bool:
    # The HTTP layer refuses a header value with a line break, a NUL or a
    # space at an end; one beyond Latin-1 does not encode at all.
    local = isinstance(error, _HEADER)
    return (local and "header" in str(error).lower()) or isinstance(error, UnicodeEncodeError)


def _key_line(provider: str, variable: str) -> str:
    return (
        f"{provider}: {variable} has a character an API key cannot have (a line break "
        "or a space pasted with it?): set it again"
    )


def check_base_url(provider: str, variable: str, url: str | None) -> None:
    """Raise ConfigError unless `url` (when set) is an http:// or https:// URL with a host."""
    if not url:
        return
    problem = ""
    try:
        parsed = httpx2.URL(url)
    except (httpx2.InvalidURL, ValueError) as error:
        problem = one_line(error, 80)
    else:
        if parsed.scheme not in ("http", "https"):
            problem = "it must start with http:// or https://"
        elif not parsed.host:
            problem = "it has no host"
    if problem:
        shown = shown_url(url)
        raise ConfigError(
            f"{provider}: {variable} is not an http:// or https:// URL: {shown} ({problem})"
        )


def check_api_key(provider: str, variable: str, key: str | None) -> None:
    """Raise ConfigError when `key` has a character no HTTP header carries.

    API keys are printable ASCII without spaces; anything else is a paste
    gone wrong, which every request would fail on. The key is never shown.
    """
    if key and not all("!" <= character <= "~" for character in key):
        raise ConfigError(_key_line(provider, variable))
