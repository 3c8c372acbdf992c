"""Sealed cookies: only this server's secret opens them, for their purpose, while fresh."""

from __future__ import annotations

from bot.runs.sealed import Sealer, derived_secret

SECRET = b"k" * 32


def test_a_sealed_object_opens_with_its_secret_and_purpose_only() -> None:
    now = [1000.0]
    sealer = Sealer(SECRET, clock=lambda: now[0])
    sealed = sealer.seal("session", {"login": "alice", "token": "ghu_secret"})

    assert "ghu_secret" not in sealed
    assert "alice" not in sealed
    assert sealer.open("session", sealed, max_age=60) == {"login": "alice", "token": "ghu_secret"}
    assert sealer.open("state", sealed, max_age=60) is None
    assert Sealer(b"x" * 32).open("session", sealed, max_age=60) is None
    tampered = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    assert sealer.open("session", tampered, max_age=60) is None
    assert sealer.open("session", "", max_age=60) is None
    assert sealer.open("session", "é" * 10, max_age=60) is None
    now[0] += 61
    assert sealer.open("session", sealed, max_age=60) is None


def test_a_mac_is_per_purpose_and_per_text() -> None:
    sealer = Sealer(SECRET)

    assert sealer.mac("csrf", "a") == sealer.mac("csrf", "a")
    assert sealer.mac("csrf", "a") != sealer.mac("csrf", "b")
    assert sealer.mac("csrf", "a") != sealer.mac("other", "a")


def test_the_derived_secret_changes_with_each_of_the_apps_secrets() -> None:
    base = derived_secret(b"pem", b"hook", b"client")

    assert base == derived_secret(b"pem", b"hook", b"client")
    assert len(base) == 32
    assert base != derived_secret(b"pem2", b"hook", b"client")
    assert base != derived_secret(b"pem", b"hook2", b"client")
    assert base != derived_secret(b"pem", b"hook", b"client2")
    assert base != derived_secret(b"pemhook", b"", b"client")
