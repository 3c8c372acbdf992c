"""The HTTP client each provider gives its SDK: the SDK's own, one TLS context per process.

Left to itself, an SDK client builds a new `ssl.SSLContext` and loads the CA
bundle into it, tens of milliseconds of CPU; a worker builds a provider for
every job. The context holds nothing but the verify locations and defaults
`httpx2` would give each client (`SSL_CERT_FILE`/`SSL_CERT_DIR`, else the
system's), read once per process; an `SSLContext` is safe to share between
clients, event loops and threads.
"""

from __future__ import annotations

import functools
import ssl

import httpx2

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's TLS context for model providers, as httpx2 builds it by default."""
    return httpx2.create_ssl_context()
