"""The fake GitHub checks App JWTs and token scopes the way GitHub does."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx
import jwt
import pytest
from jwt.api_jws import PyJWS

from tests.fakes import FakeGitHub, rsa_private_key_pem

DECODE = "A JSON web token could not be decoded"


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.install(7, "octo", ["hello", "other"])
    with fake:
        yield fake


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    # One client: each new one loads the CA bundle, which is most of a test's time.
    with httpx.Client() as client:
        yield client


@pytest.fixture(scope="module")
def other_key() -> str:
    return rsa_private_key_pem()


def _jwt(github: FakeGitHub, key: str | None = None, **claims: Any) -> str:
    now = int(time.time())
    payload: dict[str, Any] = {"iss": str(github.app_id), "iat": now - 60, "exp": now + 540}
    payload.update(claims)
    payload = {name: value for name, value in payload.items() if value is not None}
    # Signed as raw JSON: PyJWT's encoder refuses a numeric `iss`, GitHub does not.
    body = json.dumps(payload).encode()
    return PyJWS().encode(body, key or github.private_key_pem, algorithm="RS256")


def _get_app(http: httpx.Client, github: FakeGitHub, authorization: str | None) -> httpx.Response:
    headers = {"Authorization": authorization} if authorization else {}
    return http.get(f"{github.base_url}/app", headers=headers)


def test_a_valid_jwt_with_a_string_or_numeric_issuer_is_accepted(
    http: httpx.Client, github: FakeGitHub
) -> None:
    for issuer in (str(github.app_id), github.app_id):
        answer = _get_app(http, github, f"Bearer {_jwt(github, iss=issuer)}")
        assert answer.status_code == 200
        assert answer.json()["slug"] == "neo-test"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no header", "Requires authentication"),
        ("token scheme", DECODE),
        ("not a jwt", DECODE),
        ("hs256", DECODE),
        ("other key", DECODE),
        ("iss not a number", "'Issuer' claim ('iss') must be an Integer"),
        ("iss another app", "Integration not found"),
        (
            "iat in the future",
            "'Issued at' claim ('iat') must be an Integer representing the time that the "
            "assertion was issued",
        ),
        (
            "expired",
            "'Expiration time' claim ('exp') must be a numeric value representing the future "
            "time at which the assertion expires",
        ),
        (
            "no exp",
            "'Expiration time' claim ('exp') must be a numeric value representing the future "
            "time at which the assertion expires",
        ),
        ("lives too long", "'Expiration time' claim ('exp') is too far in the future"),
    ],
)
def test_a_bad_jwt_gets_githubs_401(
    http: httpx.Client, github: FakeGitHub, other_key: str, case: str, message: str
) -> None:
    now = int(time.time())
    make: dict[str, Callable[[], str | None]] = {
        "no header": lambda: None,
        "token scheme": lambda: f"token {_jwt(github)}",
        "not a jwt": lambda: "Bearer ghs_notajwt",
        "hs256": lambda: "Bearer " + jwt.encode({"iss": str(github.app_id)}, "k" * 32, "HS256"),
        "other key": lambda: f"Bearer {_jwt(github, other_key)}",
        "iss not a number": lambda: f"Bearer {_jwt(github, iss='neo')}",
        "iss another app": lambda: f"Bearer {_jwt(github, iss=github.app_id + 1)}",
        "iat in the future": lambda: f"Bearer {_jwt(github, iat=now + 120, exp=now + 300)}",
        "expired": lambda: f"Bearer {_jwt(github, iat=now - 600, exp=now - 1)}",
        "no exp": lambda: f"Bearer {_jwt(github, exp=None)}",
        "lives too long": lambda: f"Bearer {_jwt(github, iat=now - 60, exp=now + 541)}",
    }
    token = make[case]()  # only this case's key is loaded and signed with

    answer = _get_app(http, github, token)

    assert answer.status_code == 401
    assert answer.json() == {
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": "401",
    }
    assert github.requests[-1].auth == ("none" if token is None else "rejected")


def test_clock_skew_of_a_minute_is_allowed(http: httpx.Client, github: FakeGitHub) -> None:
    now = int(time.time())
    answer = _get_app(http, github, f"Bearer {_jwt(github, iat=now + 30, exp=now + 600)}")
    assert answer.status_code == 200


def test_a_token_opens_only_its_repositories_until_it_expires(
    http: httpx.Client, github: FakeGitHub
) -> None:
    jwt_header = {"Authorization": f"Bearer {_jwt(github)}"}
    minted = http.post(
        f"{github.base_url}/app/installations/7/access_tokens",
        headers=jwt_header,
        json={"repositories": ["hello"], "permissions": {"contents": "read"}},
    )
    assert minted.status_code == 201
    body = minted.json()
    assert body["permissions"] == {"contents": "read"}
    assert body["repository_selection"] == "selected"
    assert [repo["full_name"] for repo in body["repositories"]] == ["octo/hello"]
    auth = {"Authorization": f"token {body['token']}"}

    assert http.get(f"{github.base_url}/repos/octo/hello", headers=auth).status_code == 200
    assert http.get(f"{github.base_url}/repos/octo/other", headers=auth).status_code == 404
    assert http.get(f"{github.base_url}/repos/octo/hello", headers=jwt_header).status_code == 401

    github.token_lifetime = timedelta(seconds=-1)
    try:
        stale = http.post(
            f"{github.base_url}/app/installations/7/access_tokens", headers=jwt_header, json={}
        ).json()
    finally:
        github.token_lifetime = timedelta(hours=1)
    assert stale["repository_selection"] == "all"
    expired = {"Authorization": f"token {stale['token']}"}
    answer = http.get(f"{github.base_url}/repos/octo/hello", headers=expired)
    assert (answer.status_code, answer.json()["message"]) == (401, "Bad credentials")


def test_a_path_prefix_serves_nothing_outside_it(http: httpx.Client) -> None:
    with FakeGitHub(path_prefix="/api/v3") as github:
        root = github.base_url.removesuffix("/api/v3")
        header = {"Authorization": f"Bearer {_jwt(github)}"}
        assert http.get(f"{root}/app", headers=header).status_code == 404
        assert http.get(f"{github.base_url}/app", headers=header).status_code == 200
        assert [r.path for r in github.requests] == ["/app", "/api/v3/app"]


def test_a_pull_request_answers_its_diff_for_the_diff_media_type(
    http: httpx.Client, github: FakeGitHub
) -> None:
    minted = http.post(
        f"{github.base_url}/app/installations/7/access_tokens",
        headers={"Authorization": f"Bearer {_jwt(github)}"},
        json={"repositories": ["hello"]},
    ).json()
    auth = {"Authorization": f"token {minted['token']}"}
    diff = "diff --git a/é b/é\n@@ -1 +1 @@\n-a\n+b\n"
    number = github.add_pull("octo/hello", "T", diff=diff)
    url = f"{github.base_url}/repos/octo/hello/pulls/{number}"

    as_json = http.get(url, headers=auth)
    as_diff = http.get(url, headers={**auth, "Accept": "application/vnd.github.diff"})
    as_v3_diff = http.get(url, headers={**auth, "Accept": "application/vnd.github.v3.diff"})

    assert as_json.json()["number"] == number
    for answer in (as_diff, as_v3_diff):
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/vnd.github.diff")
        assert answer.content.decode() == diff
    github.set_pull_diff("octo/hello", number, None)
    refused = http.get(url, headers={**auth, "Accept": "application/vnd.github.diff"})
    assert refused.status_code == 406
    assert refused.json()["message"].startswith("Sorry, the diff exceeded the maximum")
