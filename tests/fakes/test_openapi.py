"""The OpenAPI check catches what GitHub's description rejects, on both sides of the wire."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.fakes import FakeGitHub, openapi
from tests.fakes.github_api import Call

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module")
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.install(7, "octo", ["hello"])
    with fake:
        yield fake


@pytest.fixture
def http(github: FakeGitHub) -> Iterator[httpx.Client]:
    now = int(time.time())
    app_jwt = jwt.encode(
        {"iss": str(github.app_id), "iat": now - 60, "exp": now + 540},
        github.private_key_pem,
        algorithm="RS256",
    )
    with httpx.Client(base_url=github.base_url) as client:
        minted = client.post(
            "/app/installations/7/access_tokens", headers={"Authorization": f"Bearer {app_jwt}"}
        ).json()
        client.headers["Authorization"] = f"token {minted['token']}"
        openapi.drain()  # the token's exchange conforms; each test checks its own
        yield client


def _violations() -> list[str]:
    return openapi.violations(openapi.drain())


def test_conforming_exchanges_have_no_violations(github: FakeGitHub, http: httpx.Client) -> None:
    number = github.add_issue("octo/hello", "Fix it")
    http.get(f"/repos/octo/hello/issues/{number}").raise_for_status()
    http.post(f"/repos/octo/hello/issues/{number}/comments", json={"body": "On it."})
    http.get(f"/repos/octo/hello/issues/{number}/comments", params={"per_page": 100})
    http.get("/repos/octo/hello/contents/missing.md", params={"ref": "main"})

    assert _violations() == []


def _broken_issue(call: Call) -> tuple[int, Any]:
    return 200, {"number": "one", "state": "open", "created_at": "yesterday", "url": "/x"}


def test_a_wrong_response_from_the_fake_is_a_violation(
    github: FakeGitHub, http: httpx.Client
) -> None:
    github.add_route("GET", "/repos/{owner}/{repo}/issues/{number}", _broken_issue)
    try:
        http.get("/repos/octo/hello/issues/1")
    finally:
        github._routes.pop()

    problems = _violations()
    where = "GET /repos/{owner}/{repo}/issues/{issue_number} (issues/get) → 200: response body"
    assert f"{where} at $.number: 'one' is not of type 'integer'" in problems
    assert f"{where} at $: 'title' is a required property" in problems
    assert f"{where} at $.created_at: 'yesterday' is not a 'date-time'" in problems
    assert f"{where} at $.url: '/x' is not a 'uri'" in problems


@pytest.mark.parametrize(
    ("send", "expected"),
    [
        (
            lambda http: http.post(
                "/repos/octo/hello/pulls", json={"title": "T", "head": "b", "base": 9}
            ),
            "POST /repos/{owner}/{repo}/pulls (pulls/create) → 422: request body at $.base: "
            "9 is not of type 'string'",
        ),
        (
            lambda http: http.post(
                "/repos/octo/hello/pulls",
                json={"title": "T", "head": "b", "base": "main", "drafted": True},
            ),
            "POST /repos/{owner}/{repo}/pulls (pulls/create) → 201: request body field "
            "'drafted' is not documented",
        ),
        (
            lambda http: http.get("/repos/octo/hello/pulls", params={"state": "merged"}),
            "GET /repos/{owner}/{repo}/pulls (pulls/list) → 200: request query parameter "
            "'state'='merged': 'merged' is not one of ['open', 'closed', 'all']",
        ),
        (
            lambda http: http.get("/repos/octo/hello/pulls", params={"sha": "abc"}),
            "GET /repos/{owner}/{repo}/pulls (pulls/list) → 200: request query parameter "
            "'sha' is not documented",
        ),
        (
            lambda http: http.get("/repos/octo/hello/issues/999", params={"per_page": "many"}),
            "GET /repos/{owner}/{repo}/issues/{issue_number} (issues/get) → 404: request query "
            "parameter 'per_page' is not documented",
        ),
        (
            lambda http: http.patch("/repos/octo/hello/issues/comments/1"),
            "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id} (issues/update-comment) "
            "→ 400: request has no body; one is required",
        ),
        (
            lambda http: http.get("/repos/octo/hello/frobnicate"),
            "GET /repos/octo/hello/frobnicate: no such operation in GitHub's API",
        ),
    ],
    ids=[
        "body",
        "unknown-field",
        "enum",
        "unknown-query",
        "undocumented-query",
        "missing-body",
        "operation",
    ],
)
def test_a_request_github_rejects_is_a_violation(
    http: httpx.Client, send: Any, expected: str
) -> None:
    send(http)

    assert expected in _violations()


def test_a_status_github_does_not_answer_there_is_a_violation(
    github: FakeGitHub, http: httpx.Client
) -> None:
    github.fail_next("GET", "/repos/{owner}/{repo}", 418)
    github.fail_next("GET", "/repos/{owner}/{repo}", 502)  # any operation may see an outage
    http.get("/repos/octo/hello")
    http.get("/repos/octo/hello")

    assert _violations() == [
        "GET /repos/{owner}/{repo} (repos/get) → 418: response status 418 is not documented "
        "(only 200, 301, 403, 404)"
    ]


def _document(schema: dict[str, Any]) -> dict[str, Any]:
    """A one-operation description whose 200 answers `schema`."""
    json_200 = {"application/json": {"schema": schema}}
    return {
        "paths": {"/thing": {"get": {"responses": {"200": {"content": json_200}}}}},
        "components": {
            "schemas": {"name": {"type": "string"}, "pair": {"allOf": [{"type": "object"}]}}
        },
    }


@pytest.mark.parametrize(
    ("schema", "body", "conforms"),
    [
        ({"type": "string", "nullable": True}, b"null", True),
        ({"type": "string"}, b"null", False),
        ({"type": "string", "enum": ["a"], "nullable": True}, b"null", True),
        ({"type": "string", "enum": ["a"], "nullable": True}, b'"b"', False),
        ({"$ref": "#/components/schemas/name", "nullable": True}, b"null", True),
        ({"$ref": "#/components/schemas/name", "nullable": True}, b"3", False),
        ({"allOf": [{"$ref": "#/components/schemas/pair"}], "nullable": True}, b"null", True),
        ({"allOf": [{"$ref": "#/components/schemas/pair"}]}, b"null", False),
        # A property that is *named* nullable is a property, not the keyword.
        ({"type": "object", "properties": {"nullable": {"type": "integer"}}}, b"{}", True),
    ],
)
def test_openapi_nullable_reads_as_a_null_type(
    schema: dict[str, Any], body: bytes, conforms: bool
) -> None:
    exchange = openapi.Exchange(
        "GET", "/thing", (), "", "", b"", 200, "application/json; charset=utf-8", body
    )
    problems = list(openapi.Description(_document(schema)).check(exchange))

    assert (problems == []) == conforms, problems


def test_what_conformed_once_is_still_checked_where_it_no_longer_does() -> None:
    # The check remembers values that conformed to a `$ref`; never one that did not.
    schema = {"type": "array", "items": {"$ref": "#/components/schemas/name"}}
    api = openapi.Description(_document(schema))

    def problems(body: bytes) -> list[str]:
        exchange = openapi.Exchange("GET", "/thing", (), "", "", b"", 200, "application/json", body)
        return list(api.check(exchange))

    wrong = "GET /thing (None) → 200: response body at $[1]: 3 is not of type 'string'"
    assert problems(b'["a", "b"]') == []
    assert problems(b'["a", 3]') == [wrong]
    assert problems(b'["a", 3]') == [wrong]
    assert problems(b'["a", "b", "a"]') == []


def test_a_test_whose_fake_answers_wrong_fails_with_one_line_per_violation(
    tmp_path: Path,
) -> None:
    # The suite's conftest hook, run on a test that serves a wrong answer.
    (tmp_path / "test_wrong.py").write_text(
        textwrap.dedent(
            """
            import time

            import httpx
            import jwt

            from tests.fakes import FakeGitHub

            def test_it() -> None:
                with FakeGitHub() as github:
                    github.add_route("GET", "/app", lambda call: (200, {"id": "x"}), auth="app")
                    now = int(time.time())
                    claims = {"iss": str(github.app_id), "iat": now - 60, "exp": now + 540}
                    token = jwt.encode(claims, github.private_key_pem, algorithm="RS256")
                    auth = {"Authorization": f"Bearer {token}"}
                    assert httpx.get(f"{github.base_url}/app", headers=auth).status_code == 200
            """
        )
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.conftest",
            f"--rootdir={tmp_path}",
            str(tmp_path / "test_wrong.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed, 1 error" in run.stdout, run.stdout
    prefix = "GET /app (apps/get-authenticated) → 200: response body at $"
    lines = [line for line in run.stdout.splitlines() if line.startswith(prefix)]
    assert f"{prefix}.id: 'x' is not of type 'integer'" in lines, run.stdout
