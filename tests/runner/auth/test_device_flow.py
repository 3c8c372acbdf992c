"""The device-code flow's pure decisions and the credentials' claims."""

from __future__ import annotations

import pytest

from runner.auth.credentials import (
    Credentials,
    account_id_of,
    credentials_from_tokens,
    needs_refresh,
)
from runner.auth.device_flow import (
    CLIENT_ID,
    DEFAULT_INTERVAL,
    Approved,
    Pending,
    SlowDown,
    exchange_form,
    parse_device_code,
    poll_outcome,
    token_error,
)
from runner.auth.errors import AuthError
from tests.fakes.chatgpt_auth import make_jwt

ACCOUNT = {"https://api.openai.com/auth": {"chatgpt_account_id": "acct-1"}}


def test_the_user_code_answer_takes_its_interval_from_a_string() -> None:
    code = parse_device_code(
        {"device_auth_id": "da_1", "user_code": "AB12-CD3", "interval": "7"}, "https://x/codex"
    )

    assert (code.user_code, code.device_auth_id, code.interval) == ("AB12-CD3", "da_1", 7.0)
    assert code.verification_url == "https://x/codex"


def test_an_unreadable_interval_falls_back_and_a_missing_code_is_one_line() -> None:
    code = parse_device_code({"device_auth_id": "d", "usercode": "U", "interval": "soon"}, "u")
    assert code.interval == DEFAULT_INTERVAL
    with pytest.raises(AuthError, match=r"^chatgpt sign-in: the device code answer lacks"):
        parse_device_code({"device_auth_id": "d"}, "u")


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (403, {"error": {"code": "deviceauth_authorization_pending"}}, Pending()),
        (404, None, Pending()),
        (400, {"error": "authorization_pending"}, Pending()),
        (400, {"error": "slow_down"}, SlowDown()),
        (429, None, SlowDown()),
        (200, {"authorization_code": "ac", "code_verifier": "v"}, Approved("ac", "v")),
    ],
)
def test_a_poll_answer_means_wait_slow_down_or_approved(
    status: int, body: object, outcome: object
) -> None:
    assert poll_outcome(status, body) == outcome


@pytest.mark.parametrize(
    ("status", "body", "line"),
    [
        (400, {"error": "expired_token"}, "the code expired before it was approved"),
        (410, None, "the code expired"),
        (400, {"error": "access_denied"}, "the request was denied"),
        (500, None, "polling failed with HTTP 500"),
        (200, {"authorization_code": "ac"}, "the approval lacks its authorization code"),
    ],
)
def test_a_poll_that_ends_the_sign_in_is_one_line(status: int, body: object, line: str) -> None:
    with pytest.raises(AuthError, match=f"^chatgpt sign-in: {line}") as caught:
        poll_outcome(status, body)
    assert "\n" not in str(caught.value)


def test_the_exchange_sends_the_verifier_and_the_codex_client() -> None:
    form = exchange_form(Approved("ac_1", "verifier"), "https://auth/deviceauth/callback")

    assert form == {
        "grant_type": "authorization_code",
        "code": "ac_1",
        "redirect_uri": "https://auth/deviceauth/callback",
        "client_id": CLIENT_ID,
        "code_verifier": "verifier",
    }


def test_a_refused_token_request_says_the_oauth_error_without_the_request() -> None:
    line = token_error(400, {"error": "invalid_grant", "error_description": "Bad\n code."})
    assert line == "400 invalid_grant: Bad code."
    assert token_error(502, None) == "502 http_error"


def test_the_account_id_comes_from_the_id_tokens_chatgpt_claim() -> None:
    assert account_id_of(make_jwt(ACCOUNT)) == "acct-1"
    with pytest.raises(AuthError, match="names no ChatGPT account"):
        account_id_of(make_jwt({"email": "a@b"}))
    with pytest.raises(AuthError, match="not a JWT"):
        account_id_of("opaque")


def test_expiry_comes_from_the_access_tokens_exp_else_expires_in() -> None:
    id_token = make_jwt(ACCOUNT)
    jwt_access = make_jwt({"exp": 5_000})
    made = credentials_from_tokens(
        {"access_token": jwt_access, "refresh_token": "r", "id_token": id_token, "expires_in": 9},
        now=1_000.0,
    )
    assert made.expires_at == 5_000.0
    opaque = credentials_from_tokens(
        {"access_token": "opaque", "refresh_token": "r", "id_token": id_token, "expires_in": 60},
        now=1_000.0,
    )
    assert opaque.expires_at == 1_060.0


def test_a_refresh_answer_keeps_the_tokens_it_leaves_out() -> None:
    previous = Credentials("a0", "r0", make_jwt(ACCOUNT), "acct-1", 10.0)

    fresh = credentials_from_tokens({"access_token": "a1"}, now=0.0, previous=previous)

    assert (fresh.access_token, fresh.refresh_token, fresh.id_token) == (
        "a1",
        "r0",
        previous.id_token,
    )
    with pytest.raises(AuthError, match="lacks a token"):
        credentials_from_tokens({"access_token": "a1"}, now=0.0)


def test_refresh_is_due_within_the_margin_and_never_without_an_expiry() -> None:
    soon = Credentials("a", "r", "i", "acct", expires_at=1_000.0)

    assert needs_refresh(soon, now=1_000.0 - 301) is False
    assert needs_refresh(soon, now=1_000.0 - 299) is True
    assert needs_refresh(Credentials("a", "r", "i", "acct"), now=1e12) is False


def test_tokens_stay_out_of_repr() -> None:
    shown = repr(Credentials("access-secret", "refresh-secret", "id-secret", "acct-1", 1.0))
    assert "secret" not in shown
    assert "acct-1" in shown
