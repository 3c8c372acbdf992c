"""bench.tls: a client trusting the CA verifies the server's certificate for its name, strictly."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from bench.tls import Issued, issue

HOST = "index.bench"


@contextmanager
def tls_server(issued: Issued, directory: Path) -> Iterator[int]:
    """A loopback server presenting `issued`'s certificate that answers one
    connection with a line; its port."""
    (directory / "server.pem").write_bytes(issued.certificate)
    (directory / "server.key").write_bytes(issued.key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "server.pem", directory / "server.key")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        # A client that refuses the certificate ends the handshake: not the server's failure.
        with suppress(ssl.SSLError, OSError):
            raw, _ = listener.accept()
            with raw, context.wrap_socket(raw, server_side=True) as tls:
                tls.sendall(b"hello\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        thread.join(timeout=10)


def client_context(ca: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.decode())
    # What Python 3.13 sets by default, and what pip's newer versions verify with.
    context.verify_flags |= ssl.VERIFY_X509_STRICT
    return context


def fetch(port: int, context: ssl.SSLContext, name: str) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=name) as tls,
    ):
        return tls.recv(100)


def test_a_client_trusting_the_ca_verifies_the_servers_certificate(tmp_path: Path) -> None:
    issued = issue(HOST)
    with tls_server(issued, tmp_path) as port:
        assert fetch(port, client_context(issued.ca), HOST) == b"hello\n"


def test_the_certificate_is_for_its_name_only(tmp_path: Path) -> None:
    issued = issue(HOST)
    with tls_server(issued, tmp_path) as port, pytest.raises(ssl.SSLCertVerificationError):
        fetch(port, client_context(issued.ca), "other.bench")


def test_another_ca_is_not_trusted(tmp_path: Path) -> None:
    issued = issue(HOST)
    with tls_server(issued, tmp_path) as port, pytest.raises(ssl.SSLCertVerificationError):
        fetch(port, client_context(issue(HOST).ca), HOST)
