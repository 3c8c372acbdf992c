"""A wire-level fake of the GitHub REST API for a GitHub App, for tests.

githubkit talks to it over HTTP on 127.0.0.1 exactly as it talks to GitHub:

    with FakeGitHub() as github:
        github.install(7, "octo", ["hello"])
        app = GitHubApp(github.app_id, github.private_key_pem, github.base_url)
        ...
        assert github.token_requests[0].repositories == ("hello",)

App endpoints (`GET /app`, `POST /app/installations/{id}/access_tokens`) take
the App's JWT as `Authorization: Bearer <jwt>` and check it as GitHub does:
RS256 signed by the App's key, `iss` the App id (a string or a number), `iat`
not in the future (60 s of clock skew allowed), `exp` in the future and at most
ten minutes after `iat`. Anything else gets GitHub's 401 JSON error body.

Installation tokens (`ghs_...`, `Authorization: token ...` or `Bearer ...`)
open the repository endpoints, and only for the repositories the token was
scoped to (404 otherwise, as GitHub hides what a token cannot see):
`GET /repos/{owner}/{repo}` and
`GET /repos/{owner}/{repo}/collaborators/{username}/permission`, and what a
job publishes, held in memory per repository:

- issues: `GET .../issues/{number}` (seed with `add_issue`; pull requests share
  the numbering);
- issue comments: list (`per_page`, `page`, a `Link: rel="next"` header),
  create, get, update. Ids only increase; comments made with an installation
  token are by the App's bot user, `bot_login` (`<slug>[bot]`), and only those
  can be edited. Seed others' with `add_comment`, inspect with `comments()`;
- reactions on issue comments, review comments and issues: 201, or 200 when
  the bot already reacted so; `reactions()`;
- pulls: list (`state`, `head=owner:branch`, `base`), create (422 when an open
  PR has that head and base, its detail in `errors[].message` as GitHub puts
  it; 422 for a draft on a repository marked with `refuse_drafts`), get,
  update; `pulls()`; seed one with `add_pull`, close it merged with
  `merge_pull`. `GET .../pulls/{number}` with
  `Accept: application/vnd.github.diff`
  answers the diff given to `add_pull` (or `set_pull_diff`) as text, or GitHub's
  406 for a diff too large when that is None;
- review comments (`add_review_comment`, with path, lines and diff hunk) and
  reviews (`add_review`): `GET .../pulls/comments/{id}` and
  `GET .../pulls/{number}/reviews/{review_id}/comments`;
- replies in a review thread (`POST .../pulls/{number}/comments/{id}/replies`,
  `thread_replies()`);
- `POST /graphql`: a pull request's review threads and `resolveReviewThread`,
  nothing else (see "GraphQL" below; `resolved_threads()`);
- contents: `GET .../contents/{path}?ref=` (base64, 404 when missing, a list for
  a directory); `put_file`, `set_default_branch` (also what `GET /repos/...`
  says).

Writes check the token's permissions (403 "Resource not accessible by
integration"). `fail_next(method, template, status, headers=..., message=...)`
answers the next matching requests with an error: a 403 secondary rate limit
with `retry-after`, a 502. More endpoints are one `add_route` away.

With `path_prefix="/api/v3"` everything is served under that prefix, as GitHub
Enterprise Server does, and nothing outside it.

Every request, answered or refused, is appended to `requests`; token requests
are also parsed into `token_requests`, and the tokens issued into `tokens`.
Each exchange is also handed to `tests/fakes/openapi.py`, which checks it
against GitHub's OpenAPI description after the test.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import json
import re
import secrets
import string
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeAlias

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes import openapi
from tests.fakes.github_attachments import Attachments
from tests.fakes.github_oauth import FakeOAuth
from tests.fakes.threaded import Served

__all__ = [
    "ALL_JOB_PERMISSIONS",
    "RESOLVE_THREAD_MUTATION",
    "REVIEW_THREADS_QUERY",
    "Call",
    "FakeGitHub",
    "FakeInstallation",
    "GitHubRequest",
    "IssuedToken",
    "RawBody",
    "TokenRequest",
    "error_json",
    "repository_json",
    "rsa_private_key_pem",
    "user_json",
]

AuthKind: TypeAlias = Literal["none", "jwt", "installation", "user", "rejected"]
# Who a route is for: the App (JWT), an installation token, a user token, either token.
RouteAuth: TypeAlias = Literal["app", "installation", "user", "token"]
# A handler answers (status, JSON body) or (status, JSON body, extra headers).
Handler: TypeAlias = "Callable[[Call], tuple[int, Any] | tuple[int, Any, Mapping[str, str]]]"

DOCS_URL = "https://docs.github.com/rest"
CLOCK_SKEW = 60  # seconds GitHub tolerates between the App's clock and its own
MAX_JWT_LIFETIME = 600  # `exp - iat`, seconds

# What an installation is granted unless a test says otherwise: what a job needs.
ALL_JOB_PERMISSIONS: Mapping[str, str] = {
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "metadata": "read",
    # A CI repair's reads: check runs and annotations, Actions logs.
    "checks": "read",
    "actions": "read",
}

_LEVELS = {"read": 1, "write": 2, "admin": 3}
# The collaborator endpoint's legacy `permission` for each role.
_LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


# --- keys ------------------------------------------------------------------------


def rsa_private_key_pem(bits: int = 2048) -> str:
    """A fresh RSA private key in PEM (PKCS#1, as GitHub issues them)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


@functools.cache
def _shared_key() -> str:
    # One key per test process: generating RSA keys is the slow part of a fixture.
    return rsa_private_key_pem()


@functools.cache
def _public_key_pem(private_key_pem: str) -> str:
    """The public half of `private_key_pem`, in PEM (SubjectPublicKeyInfo).

    Loading an RSA private key checks it (about a tenth of a second of CPU),
    and most fakes of a process share one key: it is done once per key.
    """
    key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


# --- what the fake records -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GitHubRequest:
    """One HTTP request as the fake saw and answered it."""

    method: str
    path: str  # as sent, prefix included
    route: str  # the path with the prefix removed
    auth: AuthKind  # "rejected": credentials were present and refused
    status: int
    body: Any  # the parsed JSON body, or None
    client_port: int | None  # which connection carried it
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names


@dataclass(frozen=True, slots=True)
class TokenRequest:
    """A POST /app/installations/{id}/access_tokens that passed the JWT check."""

    installation_id: int
    repositories: tuple[str, ...] | None
    repository_ids: tuple[int, ...] | None
    permissions: Mapping[str, str] | None
    claims: Mapping[str, Any]  # the verified JWT claims


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str = field(repr=False)
    installation_id: int
    expires_at: datetime
    permissions: Mapping[str, str]
    repositories: tuple[str, ...]  # full names, "owner/name"


@dataclass
class FakeInstallation:
    id: int
    account: str
    repositories: list[str]  # names under `account`
    permissions: dict[str, str]


@dataclass(frozen=True, slots=True)
class Call:
    """What a route handler gets: the request, already authenticated."""

    method: str
    route: str
    params: Mapping[str, str]  # the `{name}` parts of the route pattern
    body: Any
    token: IssuedToken | None  # for installation routes
    claims: Mapping[str, Any] | None  # for App routes
    query: Mapping[str, str] = field(default_factory=dict)  # the query string
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    user: str | None = None  # the login a user token acts for


@dataclass(frozen=True, slots=True)
class RawBody:
    """A handler's answer that is not JSON: `text` with `media_type`."""

    text: str
    media_type: str


@dataclass(frozen=True, slots=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    auth: RouteAuth
    handler: Handler


class _Refusal(Exception):
    def __init__(
        self, status: int, message: str, errors: list[dict[str, str]] | list[str] | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        # A validation error's details, as GitHub lists them: objects, or for
        # some endpoints (reviews) plain strings.
        self.errors = errors


def _invalid(resource: str, message: str) -> _Refusal:
    """GitHub's 422: "Validation Failed" on top, what failed in `errors[].message`."""
    return _Refusal(
        422, "Validation Failed", [{"resource": resource, "code": "custom", "message": message}]
    )


# --- wire shapes -----------------------------------------------------------------


def error_json(status: int, message: str) -> dict[str, Any]:
    """GitHub's JSON error body."""
    return {"message": message, "documentation_url": DOCS_URL, "status": str(status)}


def user_json(login: str, user_id: int, *, kind: str = "User", base: str = "") -> dict[str, Any]:
    """A simple-user object as GitHub sends it."""
    api = f"{base}/users/{login}"
    return {
        "login": login,
        "id": user_id,
        "node_id": f"U_{user_id}",
        "avatar_url": f"https://avatars.example.com/u/{user_id}",
        "gravatar_id": "",
        "url": api,
        "html_url": f"https://github.example.com/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": kind,
        "site_admin": False,
    }


_REPO_URLS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def repository_json(
    full_name: str,
    repo_id: int,
    *,
    base: str = "",
    default_branch: str = "main",
    private: bool = True,
) -> dict[str, Any]:
    """A full repository object as GitHub sends it (every field githubkit requires)."""
    owner, name = full_name.split("/", 1)
    api = f"{base}/repos/{full_name}"
    html = f"https://github.example.com/{full_name}"
    stamp = "2024-01-01T00:00:00Z"
    repo: dict[str, Any] = {
        "id": repo_id,
        "node_id": f"R_{repo_id}",
        "name": name,
        "full_name": full_name,
        "owner": user_json(owner, repo_id * 10, kind="Organization", base=base),
        "private": private,
        "html_url": html,
        "description": None,
        "fork": False,
        "url": api,
        "git_url": f"git://github.example.com/{full_name}.git",
        "ssh_url": f"git@github.example.com:{full_name}.git",
        "clone_url": f"{html}.git",
        "svn_url": html,
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        "license": None,
        "forks": 0,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers": 0,
        "watchers_count": 0,
        "size": 1,
        "default_branch": default_branch,
        "open_issues": 0,
        "open_issues_count": 0,
        "has_issues": True,
        "has_projects": False,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "has_downloads": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if private else "public",
        "pushed_at": stamp,
        "created_at": stamp,
        "updated_at": stamp,
        "subscribers_count": 1,
        "network_count": 0,
    }
    repo.update({key: api + suffix for key, suffix in _REPO_URLS.items()})
    return repo


@functools.cache
def _pattern(template: str) -> re.Pattern[str]:
    """`/repos/{owner}/{repo}` → a regex with one named group per `{name}`.

    `{name:path}` matches across slashes, for file paths.
    """
    parts = re.split(r"\{(\w+(?::path)?)\}", template)
    regex = "".join(
        (
            f"(?P<{part.removesuffix(':path')}>.+)"
            if part.endswith(":path")
            else f"(?P<{part}>[^/]+)"
        )
        if i % 2
        else re.escape(part)
        for i, part in enumerate(parts)
    )
    return re.compile(f"^{regex}$")


def _random_token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "ghs_" + "".join(secrets.choice(alphabet) for _ in range(36))


# --- the server ------------------------------------------------------------------


class FakeGitHub(Served):
    """A GitHub App's view of the REST API, served on 127.0.0.1; a context manager.

    `private_key_pem` is the App's key (one is generated when none is given);
    `token_lifetime` is how long issued installation tokens live (GitHub: 1 h);
    `path_prefix` serves the API under a prefix (GHES: "/api/v3").
    """

    _label = "the fake GitHub API"

    def __init__(
        self,
        *,
        app_id: int = 4242,
        slug: str = "neo-test",
        private_key_pem: str | None = None,
        path_prefix: str = "",
        token_lifetime: timedelta = timedelta(hours=1),
    ) -> None:
        self.app_id = app_id
        self.slug = slug
        self.private_key_pem = private_key_pem or _shared_key()
        self.path_prefix = path_prefix.rstrip("/")
        self.token_lifetime = token_lifetime
        self.public_key_pem = _public_key_pem(self.private_key_pem)
        self.installations: dict[int, FakeInstallation] = {}
        self.collaborators: dict[tuple[str, str], str] = {}  # (repo, login) → role
        self._repo_ids: dict[str, int] = {}
        self._requests: list[GitHubRequest] = []
        self._token_requests: list[TokenRequest] = []
        self._tokens: dict[str, IssuedToken] = {}
        self._routes: list[_Route] = []
        self._lock = threading.Lock()
        # The App's OAuth client and web flow (tests/fakes/github_oauth.py).
        self.oauth = FakeOAuth(client_id=f"Iv1.{app_id:016x}")
        self._public: set[str] = set()
        self._app = Starlette(
            routes=[
                # GitHub's web host: signing in with the App's OAuth client.
                Route("/login/oauth/authorize", self.oauth.authorize),
                Route("/login/oauth/access_token", self.oauth.access_token, methods=["POST"]),
                # Log downloads: another host on GitHub, no API and no token there.
                Route("/_downloads/{token}", self._download),
                # Attached files, at the signed addresses body_html gives (no API, no token).
                Route("/user-attachments/assets/{asset}", self._attachment),
                Route("/{path:path}", self._endpoint, methods=_METHODS),
            ]
        )
        self._serve(self._app, "fake-github")
        self.add_route("GET", "/app", self._get_app, auth="app")
        self.add_route(
            "POST",
            "/app/installations/{installation_id}/access_tokens",
            self._create_token,
            auth="app",
        )
        self.add_route("GET", "/repos/{owner}/{repo}", self._get_repo, auth="token")
        self.add_route("GET", "/user", self._get_user, auth="user")
        self.add_route(
            "GET", "/repos/{owner}/{repo}/installation", self._get_repo_installation, auth="app"
        )
        self.add_route(
            "GET",
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            self._get_permission,
        )
        self._repos: dict[str, _RepoState] = {}
        self._failures: list[_Failure] = []
        self._next_id = 1
        self._user_ids: dict[str, int] = {}
        repo = "/repos/{owner}/{repo}"
        routes: list[tuple[str, str, Handler]] = [
            ("GET", "/issues/{number}", self._get_issue),
            ("GET", "/issues/{number}/comments", self._list_comments),
            ("POST", "/issues/{number}/comments", self._create_comment),
            ("GET", "/issues/comments/{comment_id}", self._get_comment),
            ("PATCH", "/issues/comments/{comment_id}", self._update_comment),
            ("POST", "/issues/comments/{comment_id}/reactions", self._react_comment),
            ("POST", "/pulls/comments/{comment_id}/reactions", self._react_review_comment),
            ("POST", "/issues/{number}/reactions", self._react_issue),
            ("GET", "/pulls", self._list_pulls),
            ("POST", "/pulls", self._create_pull),
            ("GET", "/pulls/{number}", self._get_pull),
            ("PATCH", "/pulls/{number}", self._update_pull),
            ("GET", "/pulls/comments/{comment_id}", self._get_review_comment),
            ("GET", "/pulls/{number}/comments", self._list_pull_review_comments),
            ("GET", "/pulls/{number}/reviews", self._list_reviews),
            ("POST", "/pulls/{number}/reviews", self._create_review),
            (
                "GET",
                "/pulls/{number}/reviews/{review_id}/comments",
                self._list_review_comments,
            ),
            ("GET", "/contents/{path:path}", self._get_contents),
        ]
        for method, template, handler in routes:
            self.add_route(method, repo + template, handler)
        self._add_schedule_routes()
        self.add_route(
            "POST", repo + "/pulls/{number}/comments/{comment_id}/replies", self._reply_in_thread
        )
        self._ci: dict[str, _CiState] = {}
        self._downloads: dict[str, tuple[bytes, str]] = {}
        self.attachments = Attachments()
        self._download_requests: list[tuple[str, str | None]] = []
        self._add_check_routes()
        self.add_route("POST", "/graphql", self._graphql)

    # -- configuration --

    def install(
        self,
        installation_id: int,
        account: str,
        repositories: Sequence[str] = ("hello",),
        *,
        permissions: Mapping[str, str] = ALL_JOB_PERMISSIONS,
    ) -> FakeInstallation:
        """Install the App on `account` for `repositories` (names, not full names)."""
        installation = FakeInstallation(
            installation_id, account, list(repositories), dict(permissions)
        )
        with self._lock:
            self.installations[installation_id] = installation
            for name in repositories:
                self._repo_id(f"{account}/{name}")
        return installation

    def set_permission(self, repository: str, login: str, role: str) -> None:
        """`login`'s role on `repository` ("owner/name"): admin, maintain, write, triage, read."""
        with self._lock:
            self.collaborators[(repository.lower(), login.lower())] = role

    def set_public(self, repository: str, public: bool = True) -> None:
        """Make `repository` ("owner/name") public (or private again: the default)."""
        with self._lock:
            (self._public.add if public else self._public.discard)(repository.lower())

    def revoke(self, token: str) -> None:
        """Invalidate an issued token, as reinstalling the App does."""
        with self._lock:
            self._tokens.pop(token, None)

    def add_route(
        self,
        method: str,
        template: str,
        handler: Handler,
        *,
        auth: RouteAuth = "installation",
    ) -> None:
        """Serve `method template` (e.g. "/repos/{owner}/{repo}/issues") with `handler`.

        Installation routes whose template has `{owner}` and `{repo}` answer 404
        unless the token was scoped to that repository.
        """
        with self._lock:
            self._routes.append(_Route(method, _pattern(template), auth, handler))

    def refuse_drafts(self, repository: str) -> None:
        """Answer a draft pull request for `repository` with 422, as a free private one."""
        with self._lock:
            self._repo(repository).drafts_allowed = False

    def set_default_branch(self, repository: str, branch: str) -> None:
        with self._lock:
            self._repo(repository).default_branch = branch

    def put_file(self, repository: str, path: str, text: str, ref: str | None = None) -> None:
        """Store `text` at `path` on `ref` (the default branch when None)."""
        with self._lock:
            state = self._repo(repository)
            state.files[(ref or state.default_branch, path.strip("/"))] = text.encode()

    def add_issue(
        self, repository: str, title: str = "An issue", body: str = "", *, user: str = "alice"
    ) -> int:
        """Open an issue by `user`; return its number."""
        with self._lock:
            state = self._repo(repository)
            number = state.next_number
            state.next_number += 1
            stamp = _stamp()
            state.issues[number] = {
                "number": number,
                "title": title,
                "body": body,
                "user": user,
                "created_at": stamp,
                "updated_at": stamp,
            }
        return number

    def add_comment(self, repository: str, number: int, body: str, *, user: str = "alice") -> int:
        """A comment by `user` on issue or pull request `number`; return its id."""
        with self._lock:
            return int(self._new_comment(self._repo(repository), number, body, user)["id"])

    def add_pull(
        self,
        repository: str,
        title: str = "A pull request",
        body: str = "",
        *,
        head: str = "feature",
        base: str = "main",
        user: str = "alice",
        head_repository: str | None = None,
        draft: bool = False,
        diff: str | None = "",
    ) -> int:
        """Open a pull request by `user` from `head` (a branch of `head_repository`,
        default `repository` itself: a fork's when another) into `base`; its number.

        `diff` is what `GET .../pulls/{number}` answers for the diff media type;
        None: GitHub's refusal of a diff too large.
        """
        with self._lock:
            state = self._repo(repository)
            number = state.next_number
            state.next_number += 1
            stamp = _stamp()
            state.issues[number] = {
                "number": number,
                "title": title,
                "body": body,
                "user": user,
                "created_at": stamp,
                "updated_at": stamp,
            }
            state.pulls[number] = {
                "number": number,
                "title": title,
                "body": body,
                "head": head,
                "head_repo": head_repository or state.full_name,
                "base": base,
                "draft": draft,
                "state": "open",
                "user": user,
                "maintainer_can_modify": False,
                "created_at": stamp,
                "updated_at": stamp,
                "diff": diff,
            }
        return number

    def merge_pull(
        self, repository: str, number: int, *, base_sha: str, head_sha: str, merge_sha: str
    ) -> None:
        """Close pull request `number` as merged: from `base_sha` to `head_sha`, as `merge_sha`."""
        with self._lock:
            pull = self._repo(repository).pulls[number]
            pull.update(
                state="closed",
                base_sha=base_sha,
                head_sha=head_sha,
                merge_commit_sha=merge_sha,
                merged_at=_stamp(),
                updated_at=_stamp(),
            )

    def set_pull_diff(self, repository: str, number: int, diff: str | None) -> None:
        """What the diff media type of pull request `number` answers from now on."""
        with self._lock:
            self._repo(repository).pulls[number]["diff"] = diff

    def add_review(
        self, repository: str, number: int, body: str = "", *, user: str = "alice"
    ) -> int:
        """A submitted review by `user` on pull request `number`; return its id."""
        with self._lock:
            state = self._repo(repository)
            review_id = self._take_id()
            state.reviews[review_id] = {
                "id": review_id,
                "pull_number": number,
                "body": body,
                "user": user,
            }
        return review_id

    def add_review_comment(
        self,
        repository: str,
        number: int,
        body: str,
        *,
        user: str = "alice",
        path: str = "README.md",
        line: int | None = 1,
        start_line: int | None = None,
        side: str = "RIGHT",
        diff_hunk: str = "@@ -1 +1 @@\n-old\n+new",
        review_id: int | None = None,
        in_reply_to: int | None = None,
    ) -> int:
        """A review comment by `user` on `path` of pull request `number`, ending at
        `line` (a multi-line one starts at `start_line`), in `review_id` (a review
        of its own when None, as GitHub makes for a single comment); its id.
        `in_reply_to` makes it a reply in that comment's thread."""
        with self._lock:
            state = self._repo(repository)
            if review_id is None:
                review_id = self._take_id()
                state.reviews[review_id] = {
                    "id": review_id,
                    "pull_number": number,
                    "body": "",
                    "user": user,
                }
            comment_id = self._take_id()
            stamp = _stamp()
            state.review_comments[comment_id] = {
                "id": comment_id,
                "pull_number": number,
                "review_id": review_id,
                "body": body,
                "user": user,
                "path": path,
                "line": line,
                "start_line": start_line,
                "side": side,
                "diff_hunk": diff_hunk,
                "created_at": stamp,
                "updated_at": stamp,
                "in_reply_to": in_reply_to,
                "anchor": self._head_line(state, number, path, line),
            }
        return comment_id

    def fail_next(
        self,
        method: str,
        path_pattern: str,
        status: int,
        *,
        headers: Mapping[str, str] | None = None,
        message: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` requests matching `method path_pattern` with an error.

        `path_pattern` is a route template as for `add_route`, e.g.
        "/repos/{owner}/{repo}/issues/{number}/comments". The request is
        authenticated first, as GitHub does; the error body is GitHub's JSON,
        with `message` or a default for the status (a 403's default is the
        secondary rate limit's).
        """
        with self._lock:
            self._failures.append(
                _Failure(
                    method.upper(),
                    _pattern(path_pattern),
                    status,
                    dict(headers or {}),
                    message or _DEFAULT_MESSAGES.get(status, "Server Error"),
                    times,
                )
            )

    # -- inspection --

    def comments(self, repository: str, number: int | None = None) -> list[dict[str, Any]]:
        """Issue comments on `repository` (on `number` only, if given), as GitHub sends them."""
        with self._lock:
            state = self._repo(repository)
            return [
                self._comment_json(state, c)
                for c in sorted(state.comments.values(), key=lambda c: int(c["id"]))
                if number is None or c["number"] == number
            ]

    def pulls(self, repository: str) -> list[dict[str, Any]]:
        """Pull requests on `repository`, oldest first, as GitHub sends them."""
        with self._lock:
            state = self._repo(repository)
            return [self._pull_json(state, p) for p in sorted(state.pulls.values(), key=_number)]

    def reactions(self, repository: str) -> list[dict[str, Any]]:
        """Reactions created: `subject` ("issue_comment", "review_comment", "issue"),
        `subject_id`, `content`, `user` (login)."""
        with self._lock:
            return copy.deepcopy(self._repo(repository).reactions)

    @property
    def base_url(self) -> str:
        """The API URL to give the client (NEO_GITHUB_API_URL), prefix included."""
        return f"{self.origin}{self.path_prefix}"

    @property
    def requests(self) -> list[GitHubRequest]:
        """A snapshot of every request so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def token_requests(self) -> list[TokenRequest]:
        with self._lock:
            return list(self._token_requests)

    @property
    def tokens(self) -> list[IssuedToken]:
        """Tokens issued and not revoked, oldest first."""
        with self._lock:
            return list(self._tokens.values())

    @property
    def open_connections(self) -> int:
        """Client connections the server holds open right now."""
        return len(self._serving.connections)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._token_requests.clear()

    # -- the HTTP side --

    async def _endpoint(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = request.url.path
        route = path[len(self.path_prefix) :] if path.startswith(self.path_prefix) else None
        auth: AuthKind = "none"
        try:
            if route is None or not route.startswith("/"):
                raise _Refusal(404, "Not Found")
            matched = self._match(request.method, route)
            if matched is None:
                raise _Refusal(404, "Not Found")
            spec, params = matched
            header = request.headers.get("authorization")
            auth = "rejected" if header else "none"
            token: IssuedToken | None = None
            claims: Mapping[str, Any] | None = None
            user: str | None = None
            if spec.auth == "app":
                claims = self._verify_jwt(header)
                auth = "jwt"
            elif spec.auth == "user" or (
                spec.auth == "token" and (header or "").partition(" ")[2].startswith("ghu_")
            ):
                user = self._verify_user(header)
                auth = "user"
            else:
                token = self._verify_token(header)
                auth = "installation"
                _check_scope(token, params)
            call = Call(
                request.method,
                route,
                params,
                body,
                token,
                claims,
                dict(request.query_params),
                {name.lower(): value for name, value in request.headers.items()},
                user,
            )
            extra: Mapping[str, str] = {}
            payload: Any
            failure = self._take_failure(request.method, route)
            if failure is not None:
                status, payload = failure.status, error_json(failure.status, failure.message)
                extra = failure.headers
            else:
                answer = spec.handler(call)
                status, payload = answer[0], answer[1]
                extra = answer[2] if len(answer) == 3 else {}
        except _Refusal as refusal:
            status, payload = refusal.status, error_json(refusal.status, refusal.message)
            if refusal.errors is not None:
                payload["errors"] = refusal.errors
            extra = {}
        client = request.client
        self._record(
            GitHubRequest(
                request.method,
                path,
                route or path,
                auth,
                status,
                body,
                client.port if client else None,
                {name.lower(): value for name, value in request.headers.items()},
            )
        )
        response = _response(status, payload, extra)
        if route is not None:
            # Outside the GHES prefix is not the API: nothing there to check.
            openapi.record(
                openapi.Exchange(
                    request.method,
                    route,
                    tuple(request.query_params.multi_items()),
                    request.headers.get("accept", ""),
                    request.headers.get("content-type", ""),
                    raw,
                    status,
                    response.headers.get("content-type", ""),
                    bytes(response.body),
                )
            )
        return response

    def _record(self, request: GitHubRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _match(self, method: str, route: str) -> tuple[_Route, dict[str, str]] | None:
        with self._lock:
            routes = list(self._routes)
        # Later routes win, so a test can override a built-in one.
        for spec in reversed(routes):
            if spec.method == method and (found := spec.pattern.match(route)):
                return spec, found.groupdict()
        return None

    def _verify_jwt(self, header: str | None) -> Mapping[str, Any]:
        """The claims of a valid App JWT, or the 401 GitHub would answer."""
        if header is None:
            raise _Refusal(401, "Requires authentication")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value:
            raise _Refusal(401, "A JSON web token could not be decoded")
        try:
            if jwt.get_unverified_header(value).get("alg") != "RS256":
                raise _Refusal(401, "A JSON web token could not be decoded")
            unverified = jwt.decode(value, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise _Refusal(401, "A JSON web token could not be decoded") from None
        # GitHub finds the App by `iss` first, then checks the signature with its key.
        issuer = unverified.get("iss")
        if not re.fullmatch(r"\d+", str(issuer)) or isinstance(issuer, bool):
            raise _Refusal(401, "'Issuer' claim ('iss') must be an Integer")
        if int(str(issuer)) != self.app_id:
            raise _Refusal(401, "Integration not found")
        try:
            claims: dict[str, Any] = jwt.decode(
                value,
                self.public_key_pem,
                algorithms=["RS256"],
                options={
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "verify_aud": False,
                    "verify_iss": False,
                },
            )
        except jwt.PyJWTError:
            raise _Refusal(401, "A JSON web token could not be decoded") from None
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int | float) or isinstance(iat, bool) or iat > now + CLOCK_SKEW:
            raise _Refusal(
                401,
                "'Issued at' claim ('iat') must be an Integer representing the time "
                "that the assertion was issued",
            )
        if not isinstance(exp, int | float) or isinstance(exp, bool) or exp <= now:
            raise _Refusal(
                401,
                "'Expiration time' claim ('exp') must be a numeric value representing "
                "the future time at which the assertion expires",
            )
        if exp - iat > MAX_JWT_LIFETIME:
            raise _Refusal(401, "'Expiration time' claim ('exp') is too far in the future")
        return claims

    def _verify_token(self, header: str | None) -> IssuedToken:
        if header is None:
            raise _Refusal(401, "Requires authentication")
        scheme, _, value = header.partition(" ")
        with self._lock:
            token = self._tokens.get(value) if scheme.lower() in ("token", "bearer") else None
        if token is None or token.expires_at <= datetime.now(UTC):
            raise _Refusal(401, "Bad credentials")
        return token

    def _verify_user(self, header: str | None) -> str:
        if header is None:
            raise _Refusal(401, "Requires authentication")
        scheme, _, value = header.partition(" ")
        login = self.oauth.user_of(value) if scheme.lower() in ("token", "bearer") else None
        if login is None:
            raise _Refusal(401, "Bad credentials")
        return login

    def _repo_id(self, full_name: str) -> int:
        # Caller holds the lock.
        return self._repo_ids.setdefault(full_name.lower(), 1000 + len(self._repo_ids))

    def _full_name(self, full_name: str) -> str:
        """The configured spelling of a repository's full name."""
        for installation in self.installations.values():
            for name in installation.repositories:
                if f"{installation.account}/{name}".lower() == full_name.lower():
                    return f"{installation.account}/{name}"
        return full_name

    # -- handlers --

    def _get_app(self, call: Call) -> tuple[int, Any]:
        stamp = "2024-01-01T00:00:00Z"
        return 200, {
            "id": self.app_id,
            "slug": self.slug,
            "client_id": f"Iv1.{self.app_id:016x}",
            "node_id": f"A_{self.app_id}",
            "owner": user_json("octo", 1, kind="Organization", base=self._base()),
            "name": self.slug.replace("-", " ").title(),
            "description": "A fake GitHub App",
            "external_url": "https://neo.example.com",
            "html_url": f"https://github.example.com/apps/{self.slug}",
            "created_at": stamp,
            "updated_at": stamp,
            "permissions": dict(ALL_JOB_PERMISSIONS),
            "events": ["issue_comment", "issues", "pull_request_review_comment"],
            "installations_count": len(self.installations),
        }

    def _create_token(self, call: Call) -> tuple[int, Any]:
        assert call.claims is not None
        body = call.body if call.body is not None else {}
        try:
            installation_id = int(call.params["installation_id"])
        except ValueError:
            raise _Refusal(404, "Not Found") from None
        if not isinstance(body, dict):
            raise _Refusal(400, "Problems parsing JSON")
        repositories, repository_ids = body.get("repositories"), body.get("repository_ids")
        permissions = body.get("permissions")
        if (
            (repositories is not None and not _all(repositories, str))
            or (repository_ids is not None and not _all(repository_ids, int))
            or (permissions is not None and not isinstance(permissions, dict))
        ):
            raise _Refusal(422, "Invalid request.")
        with self._lock:
            self._token_requests.append(
                TokenRequest(
                    installation_id,
                    tuple(repositories) if repositories is not None else None,
                    tuple(repository_ids) if repository_ids is not None else None,
                    dict(permissions) if permissions is not None else None,
                    dict(call.claims),
                )
            )
            installation = self.installations.get(installation_id)
        if installation is None:
            raise _Refusal(404, "Not Found")
        granted = dict(installation.permissions)
        if permissions is not None:
            for name, level in permissions.items():
                have = _LEVELS.get(granted.get(name, ""), 0)
                if _LEVELS.get(level, 99) > have:
                    raise _Refusal(
                        422, "The permissions requested are not granted to this installation."
                    )
            granted = dict(permissions)
        names = {
            f"{installation.account}/{name}".lower(): name for name in installation.repositories
        }
        with self._lock:
            by_id = {self._repo_id(full): full for full in names}
        selected: list[str] = []
        for name in repositories or []:
            full = f"{installation.account}/{name}".lower()
            if full not in names:
                raise _Refusal(
                    422,
                    "There is at least one repository that does not exist or is not "
                    "accessible to the parent installation.",
                )
            selected.append(f"{installation.account}/{names[full]}")
        for repo_id in repository_ids or []:
            if repo_id not in by_id:
                raise _Refusal(
                    422,
                    "There is at least one repository that does not exist or is not "
                    "accessible to the parent installation.",
                )
            selected.append(f"{installation.account}/{names[by_id[repo_id]]}")
        scoped = repositories is not None or repository_ids is not None
        if not scoped:
            selected = [f"{installation.account}/{name}" for name in installation.repositories]
        # GitHub's timestamps have whole seconds.
        expires = (datetime.now(UTC) + self.token_lifetime).replace(microsecond=0)
        token = IssuedToken(
            _random_token(), installation_id, expires, granted, tuple(dict.fromkeys(selected))
        )
        with self._lock:
            self._tokens[token.token] = token
            repos = [
                repository_json(full, self._repo_id(full), base=self._base())
                for full in token.repositories
            ]
        answer: dict[str, Any] = {
            "token": token.token,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": granted,
            "repository_selection": "selected" if scoped else "all",
        }
        if scoped:
            answer["repositories"] = repos
        return 201, answer

    def _get_repo(self, call: Call) -> tuple[int, Any]:
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        with self._lock:
            repo_id = self._repo_id(full)
            branch = self._repo(full).default_branch
            private = full.lower() not in self._public
            role = self.collaborators.get((full.lower(), (call.user or "").lower()), "none")
        answer = repository_json(
            full, repo_id, base=self._base(), default_branch=branch, private=private
        )
        if call.user is not None:
            # A user's token sees what the App is installed on and the user may see.
            if not self._installed(full) or (private and role == "none"):
                raise _Refusal(404, "Not Found")
            if role == "none":
                role = "read"  # a public repository: anyone reads it
            answer["permissions"] = {
                "admin": role == "admin",
                "maintain": role in ("admin", "maintain"),
                "push": role in ("admin", "maintain", "write"),
                "triage": role in ("admin", "maintain", "write", "triage"),
                "pull": True,
            }
        return 200, answer

    def _installed(self, full: str) -> bool:
        return any(
            f"{i.account}/{name}".lower() == full.lower()
            for i in self.installations.values()
            for name in i.repositories
        )

    def _get_repo_installation(self, call: Call) -> tuple[int, Any]:
        full = f"{call.params['owner']}/{call.params['repo']}".lower()
        with self._lock:
            for installation in self.installations.values():
                names = {f"{installation.account}/{n}".lower() for n in installation.repositories}
                if full in names:
                    return 200, self._installation_json(installation)
        raise _Refusal(404, "Not Found")

    def _get_user(self, call: Call) -> tuple[int, Any]:
        assert call.user is not None
        with self._lock:
            user = self._user(call.user)
        stamp = "2024-01-01T00:00:00Z"
        user.update(
            {
                "name": None,
                "company": None,
                "blog": "",
                "location": None,
                "email": None,
                "hireable": None,
                "bio": None,
                "public_repos": 0,
                "public_gists": 0,
                "followers": 0,
                "following": 0,
                "created_at": stamp,
                "updated_at": stamp,
                "user_view_type": "public",
            }
        )
        return 200, user

    def _get_permission(self, call: Call) -> tuple[int, Any]:
        full = f"{call.params['owner']}/{call.params['repo']}".lower()
        login = call.params["username"]
        with self._lock:
            role = self.collaborators.get((full, login.lower()))
        if role is None:
            # GitHub answers 404 for a login that is not a user at all; an
            # unknown login here is a user without access.
            role = "none"
        user = user_json(login, 5000 + len(login), base=self._base())
        legacy = _LEGACY_PERMISSION.get(role, "none")
        user["permissions"] = {
            "admin": legacy == "admin",
            "maintain": role in ("admin", "maintain"),
            "push": legacy in ("admin", "write"),
            "triage": role in ("admin", "maintain", "write", "triage"),
            "pull": legacy != "none",
        }
        user["role_name"] = role
        return 200, {"permission": legacy, "role_name": role, "user": user}

    # -- issues, comments, reactions, pulls, contents --

    def _repo(self, repository: str) -> _RepoState:
        # Caller holds the lock.
        key = repository.lower()
        if key not in self._repos:
            self._repos[key] = _RepoState(full_name=self._full_name(repository))
        return self._repos[key]

    def _take_id(self) -> int:
        # Caller holds the lock. One counter: ids only ever increase.
        value = self._next_id
        self._next_id += 1
        return value

    def _user(self, login: str) -> dict[str, Any]:
        # Caller holds the lock.
        user_id = self._user_ids.setdefault(login.lower(), 9000 + len(self._user_ids))
        kind = "Bot" if login.endswith("[bot]") else "User"
        return user_json(login, user_id, kind=kind, base=self._base())

    @property
    def bot_login(self) -> str:
        """The App's bot user: what comments made with an installation token show."""
        return f"{self.slug}[bot]"

    def _association(self, repository: str, login: str) -> str:
        # Caller holds the lock.
        if login.lower() == repository.split("/", 1)[0].lower():
            return "OWNER"
        return (
            "COLLABORATOR" if (repository.lower(), login.lower()) in self.collaborators else "NONE"
        )

    def _take_failure(self, method: str, route: str) -> _Failure | None:
        with self._lock:
            for failure in self._failures:
                if failure.method == method and failure.pattern.match(route):
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                    return failure
        return None

    def _state(self, call: Call) -> tuple[str, _RepoState]:
        # Caller holds the lock.
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        return full, self._repo(full)

    def _new_comment(self, state: _RepoState, number: int, body: str, user: str) -> dict[str, Any]:
        # Caller holds the lock.
        if number not in state.issues:
            raise _Refusal(404, "Not Found")
        stamp = _stamp()
        comment: dict[str, Any] = {
            "id": self._take_id(),
            "number": number,
            "body": body,
            "user": user,
            "created_at": stamp,
            "updated_at": stamp,
        }
        state.comments[int(comment["id"])] = comment
        return comment

    def _comment_json(
        self, state: _RepoState, comment: Mapping[str, Any], *, rendered: bool = False
    ) -> dict[str, Any]:
        # Caller holds the lock.
        full = state.full_name
        api, html = f"{self._base()}/repos/{full}", f"https://github.example.com/{full}"
        number, comment_id = comment["number"], comment["id"]
        return {
            "id": comment_id,
            "node_id": f"IC_{comment_id}",
            "url": f"{api}/issues/comments/{comment_id}",
            "html_url": f"{html}/issues/{number}#issuecomment-{comment_id}",
            "issue_url": f"{api}/issues/{number}",
            "body": comment["body"],
            **self._rendered(comment["body"], rendered),
            "user": self._user(comment["user"]),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "author_association": self._association(full, comment["user"]),
            "performed_via_github_app": None,
        }

    def _issue_json(
        self, state: _RepoState, issue: Mapping[str, Any], *, rendered: bool = False
    ) -> dict[str, Any]:
        # Caller holds the lock.
        full = state.full_name
        api, html = f"{self._base()}/repos/{full}", f"https://github.example.com/{full}"
        number = issue["number"]
        answer: dict[str, Any] = {
            "id": 700000 + number,
            "node_id": f"I_{number}",
            "url": f"{api}/issues/{number}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{number}/labels{{/name}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "events_url": f"{api}/issues/{number}/events",
            "html_url": f"{html}/issues/{number}",
            "number": number,
            "state": issue.get("state", "open"),
            "title": issue["title"],
            "body": issue["body"],
            **self._rendered(issue["body"], rendered),
            "user": self._user(issue["user"]),
            "labels": [],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "comments": sum(1 for c in state.comments.values() if c["number"] == number),
            "closed_at": None,
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "author_association": self._association(full, issue["user"]),
        }
        if number in state.pulls:
            answer["pull_request"] = {
                "url": f"{api}/pulls/{number}",
                "html_url": f"{html}/pull/{number}",
                "diff_url": f"{html}/pull/{number}.diff",
                "patch_url": f"{html}/pull/{number}.patch",
            }
        return answer

    def _branch_json(self, full: str, ref: str) -> dict[str, Any]:
        # Caller holds the lock.
        owner = full.split("/", 1)[0]
        return {
            "label": f"{owner}:{ref}",
            "ref": ref,
            "sha": hashlib.sha1(f"{full}:{ref}".encode()).hexdigest(),
            "user": user_json(
                owner, self._repo_id(full) * 10, kind="Organization", base=self._base()
            ),
            "repo": repository_json(full, self._repo_id(full), base=self._base()),
        }

    def _pull_json(self, state: _RepoState, pull: Mapping[str, Any]) -> dict[str, Any]:
        # Caller holds the lock.
        full = state.full_name
        api, html = f"{self._base()}/repos/{full}", f"https://github.example.com/{full}"
        number = pull["number"]
        links = {
            "self": f"{api}/pulls/{number}",
            "html": f"{html}/pull/{number}",
            "issue": f"{api}/issues/{number}",
            "comments": f"{api}/issues/{number}/comments",
            "review_comments": f"{api}/pulls/{number}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{api}/pulls/{number}/commits",
            "statuses": f"{api}/statuses/{number}",
        }
        closed = pull["state"] == "closed"
        return {
            "url": links["self"],
            "id": 800000 + number,
            "node_id": f"PR_{number}",
            "html_url": links["html"],
            "diff_url": f"{html}/pull/{number}.diff",
            "patch_url": f"{html}/pull/{number}.patch",
            "issue_url": links["issue"],
            "commits_url": links["commits"],
            "review_comments_url": links["review_comments"],
            "review_comment_url": links["review_comment"],
            "comments_url": links["comments"],
            "statuses_url": links["statuses"],
            "number": number,
            "state": pull["state"],
            "locked": False,
            "title": pull["title"],
            "user": self._user(pull["user"]),
            "body": pull["body"],
            "labels": [],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": pull["created_at"],
            "updated_at": pull["updated_at"],
            "closed_at": pull["updated_at"] if closed else None,
            "merged_at": pull.get("merged_at"),
            "merge_commit_sha": pull.get("merge_commit_sha"),
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": {
                **self._branch_json(pull["head_repo"], pull["head"]),
                **({"sha": pull["head_sha"]} if pull.get("head_sha") else {}),
            },
            "base": {
                **self._branch_json(full, pull["base"]),
                **({"sha": pull["base_sha"]} if pull.get("base_sha") else {}),
            },
            "_links": {name: {"href": href} for name, href in links.items()},
            "author_association": self._association(full, pull["user"]),
            "auto_merge": None,
            "draft": pull["draft"],
            "merged": pull.get("merged_at") is not None,
            "mergeable": None,
            "rebaseable": None,
            "mergeable_state": "unknown",
            "merged_by": None,
            "comments": sum(1 for c in state.comments.values() if c["number"] == number),
            "review_comments": sum(
                1 for c in state.review_comments.values() if c["pull_number"] == number
            ),
            "maintainer_can_modify": pull["maintainer_can_modify"],
            "commits": 1,
            "additions": 1,
            "deletions": 0,
            "changed_files": 1,
        }

    def _writer(self, call: Call) -> str:
        """The login a write with this token shows: the App's bot user."""
        return self.bot_login

    def _get_issue(self, call: Call) -> tuple[int, Any]:
        number = _int(call.params["number"])
        with self._lock:
            _, state = self._state(call)
            issue = state.issues.get(number)
            if issue is None:
                raise _Refusal(404, "Not Found")
            return 200, self._issue_json(state, issue, rendered=_full(call))

    def _list_comments(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        number = _int(call.params["number"])
        per_page = min(max(_int(call.query.get("per_page", "30"), 422), 1), 100)
        page = max(_int(call.query.get("page", "1"), 422), 1)
        with self._lock:
            full, state = self._state(call)
            if number not in state.issues:
                raise _Refusal(404, "Not Found")
            every = sorted(
                (c for c in state.comments.values() if c["number"] == number),
                key=lambda c: int(c["id"]),
            )
            chosen = every[(page - 1) * per_page : page * per_page]
            answer = [self._comment_json(state, c, rendered=_full(call)) for c in chosen]
            url = f"{self._base()}/repos/{full}/issues/{number}/comments"
        headers = {}
        if page * per_page < len(every):
            headers["Link"] = f'<{url}?per_page={per_page}&page={page + 1}>; rel="next"'
        return 200, answer, headers

    def _create_comment(self, call: Call) -> tuple[int, Any]:
        _need(call, "issues", "pull_requests")
        number = _int(call.params["number"])
        body = _field(call, "body", str)
        with self._lock:
            _, state = self._state(call)
            comment = self._new_comment(state, number, body, self._writer(call))
            return 201, self._comment_json(state, comment)

    def _get_comment(self, call: Call) -> tuple[int, Any]:
        comment_id = _int(call.params["comment_id"])
        with self._lock:
            _, state = self._state(call)
            comment = state.comments.get(comment_id)
            if comment is None:
                raise _Refusal(404, "Not Found")
            return 200, self._comment_json(state, comment)

    def _update_comment(self, call: Call) -> tuple[int, Any]:
        _need(call, "issues", "pull_requests")
        comment_id = _int(call.params["comment_id"])
        body = _field(call, "body", str)
        with self._lock:
            _, state = self._state(call)
            comment = state.comments.get(comment_id)
            if comment is None:
                raise _Refusal(404, "Not Found")
            if comment["user"] != self._writer(call):
                raise _Refusal(403, "Resource not accessible by integration")
            comment["body"] = body
            comment["updated_at"] = _stamp()
            return 200, self._comment_json(state, comment)

    def _react(self, call: Call, subject: str, subject_id: int, exists: bool) -> tuple[int, Any]:
        content = _field(call, "content", str)
        if content not in _REACTIONS:
            raise _Refusal(422, "Validation Failed")
        if not exists:
            raise _Refusal(404, "Not Found")
        login = self._writer(call)
        with self._lock:
            _, state = self._state(call)
            for reaction in state.reactions:
                same = (reaction["subject"], reaction["subject_id"], reaction["content"])
                if same == (subject, subject_id, content) and reaction["user"] == login:
                    return 200, self._reaction_json(reaction)  # GitHub: already there
            reaction = {
                "id": self._take_id(),
                "subject": subject,
                "subject_id": subject_id,
                "content": content,
                "user": login,
                "created_at": _stamp(),
            }
            state.reactions.append(reaction)
            return 201, self._reaction_json(reaction)

    def _reaction_json(self, reaction: Mapping[str, Any]) -> dict[str, Any]:
        # Caller holds the lock.
        return {
            "id": reaction["id"],
            "node_id": f"REA_{reaction['id']}",
            "user": self._user(reaction["user"]),
            "content": reaction["content"],
            "created_at": reaction["created_at"],
        }

    def _react_comment(self, call: Call) -> tuple[int, Any]:
        _need(call, "issues", "pull_requests")
        comment_id = _int(call.params["comment_id"])
        with self._lock:
            exists = comment_id in self._state(call)[1].comments
        return self._react(call, "issue_comment", comment_id, exists)

    def _react_review_comment(self, call: Call) -> tuple[int, Any]:
        _need(call, "pull_requests")
        comment_id = _int(call.params["comment_id"])
        with self._lock:
            exists = comment_id in self._state(call)[1].review_comments
        return self._react(call, "review_comment", comment_id, exists)

    def _react_issue(self, call: Call) -> tuple[int, Any]:
        _need(call, "issues", "pull_requests")
        number = _int(call.params["number"])
        with self._lock:
            exists = number in self._state(call)[1].issues
        return self._react(call, "issue", number, exists)

    def _list_pulls(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        wanted_state = call.query.get("state", "open")
        head, base = call.query.get("head"), call.query.get("base")
        with self._lock:
            full, state = self._state(call)
            chosen = []
            # GitHub's default order: newest first.
            for pull in sorted(state.pulls.values(), key=_number, reverse=True):
                if wanted_state != "all" and pull["state"] != wanted_state:
                    continue
                if head is not None:
                    owner, _, branch = head.rpartition(":")
                    head_owner = pull["head_repo"].split("/", 1)[0]
                    if branch != pull["head"] or (owner and owner.lower() != head_owner.lower()):
                        continue
                if base is not None and base != pull["base"]:
                    continue
                chosen.append(self._pull_json(state, pull))
        return _page(call, chosen, f"{self._base()}/repos/{full}/pulls")

    def _create_pull(self, call: Call) -> tuple[int, Any]:
        _need(call, "pull_requests")
        title = _field(call, "title", str)
        head = _field(call, "head", str)
        base = _field(call, "base", str)
        body = call.body.get("body") or ""
        draft = bool(call.body.get("draft", False))
        with self._lock:
            full, state = self._state(call)
            owner, _, branch = head.rpartition(":")
            head_repo = f"{owner}/{full.split('/', 1)[1]}" if owner else full
            if head_repo.lower() == full.lower() and branch == base:
                raise _Refusal(422, "Validation Failed")
            for pull in state.pulls.values():
                if (
                    pull["state"] == "open"
                    and pull["head"] == branch
                    and pull["head_repo"].lower() == head_repo.lower()
                    and pull["base"] == base
                ):
                    label = f"{head_repo.split('/', 1)[0]}:{branch}"
                    raise _invalid("PullRequest", f"A pull request already exists for {label}.")
            if draft and not state.drafts_allowed:
                # What GitHub answers for a private repository on a free plan.
                raise _Refusal(422, "Draft pull requests are not supported in this repository.")
            number = state.next_number
            state.next_number += 1
            stamp = _stamp()
            login = self._writer(call)
            state.issues[number] = {
                "number": number,
                "title": title,
                "body": body,
                "user": login,
                "created_at": stamp,
                "updated_at": stamp,
            }
            pull = {
                "number": number,
                "title": title,
                "body": body,
                "head": branch,
                "head_repo": head_repo,
                "base": base,
                "draft": draft,
                "state": "open",
                "user": login,
                "maintainer_can_modify": bool(call.body.get("maintainer_can_modify", False)),
                "created_at": stamp,
                "updated_at": stamp,
            }
            state.pulls[number] = pull
            return 201, self._pull_json(state, pull)

    def _get_pull(self, call: Call) -> tuple[int, Any]:
        number = _int(call.params["number"])
        with self._lock:
            _, state = self._state(call)
            pull = state.pulls.get(number)
            if pull is None:
                raise _Refusal(404, "Not Found")
            if _DIFF_MEDIA_TYPE.search(call.headers.get("accept", "")):
                diff = pull.get("diff", "")
                if diff is None:
                    raise _Refusal(406, _DIFF_TOO_LARGE)
                return 200, RawBody(diff, "application/vnd.github.diff")
            return 200, self._pull_json(state, pull)

    def _get_review_comment(self, call: Call) -> tuple[int, Any]:
        comment_id = _int(call.params["comment_id"])
        with self._lock:
            _, state = self._state(call)
            comment = state.review_comments.get(comment_id)
            if comment is None:
                raise _Refusal(404, "Not Found")
            return 200, self._review_comment_json(state, comment)

    def _list_review_comments(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        number = _int(call.params["number"])
        review_id = _int(call.params["review_id"])
        with self._lock:
            full, state = self._state(call)
            review = state.reviews.get(review_id)
            if review is None or review["pull_number"] != number:
                raise _Refusal(404, "Not Found")
            listed = [
                self._review_comment_json(state, c)
                for c in sorted(state.review_comments.values(), key=lambda c: int(c["id"]))
                if c["review_id"] == review_id
            ]
        url = f"{self._base()}/repos/{full}/pulls/{number}/reviews/{review_id}/comments"
        return _page(call, listed, url)

    def _list_pull_review_comments(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        number = _int(call.params["number"])
        with self._lock:
            full, state = self._state(call)
            if number not in state.pulls:
                raise _Refusal(404, "Not Found")
            listed = [
                self._review_comment_json(state, c)
                for c in sorted(state.review_comments.values(), key=lambda c: int(c["id"]))
                if c["pull_number"] == number
            ]
        return _page(call, listed, f"{self._base()}/repos/{full}/pulls/{number}/comments")

    def _list_reviews(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        number = _int(call.params["number"])
        with self._lock:
            full, state = self._state(call)
            if number not in state.pulls:
                raise _Refusal(404, "Not Found")
            listed = [
                self._review_json(state, r)
                for r in sorted(state.reviews.values(), key=lambda r: int(r["id"]))
                if r["pull_number"] == number
            ]
        return _page(call, listed, f"{self._base()}/repos/{full}/pulls/{number}/reviews")

    def _create_review(self, call: Call) -> tuple[int, Any]:
        """A submitted review with its inline comments, all or nothing as on GitHub:
        a comment on a line outside the pull request's diff refuses the whole review."""
        _need(call, "pull_requests")
        number = _int(call.params["number"])
        if not isinstance(call.body, dict):
            raise _Refusal(400, "Problems parsing JSON")
        event = call.body.get("event")
        body = call.body.get("body", "")
        comments = call.body.get("comments", [])
        if event in ("COMMENT", "REQUEST_CHANGES") and not body and not comments:
            raise _Refusal(422, "Unprocessable Entity", ["Body is required"])
        with self._lock:
            _, state = self._state(call)
            pull = state.pulls.get(number)
            if pull is None:
                raise _Refusal(404, "Not Found")
            lines = _diff_lines(pull.get("diff") or "")
            for comment in comments:
                side = comment.get("side", "RIGHT")
                first = comment.get("start_line", comment["line"])
                start_side = comment.get("start_side", side)
                wanted = {
                    (comment["path"], start_side, first),
                    (comment["path"], side, comment["line"]),
                }
                if not wanted <= lines:
                    # GitHub's words for a line that is not in the diff.
                    raise _Refusal(
                        422,
                        "Unprocessable Entity",
                        ["Pull request review thread line must be part of the diff"],
                    )
            review_id = self._take_id()
            state.reviews[review_id] = {
                "id": review_id,
                "pull_number": number,
                "body": body,
                "user": self._writer(call),
                "state": {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(
                    str(event), "COMMENTED" if event else "PENDING"
                ),
            }
            stamp = _stamp()
            for comment in comments:
                comment_id = self._take_id()
                start = comment.get("start_line")
                state.review_comments[comment_id] = {
                    "id": comment_id,
                    "pull_number": number,
                    "review_id": review_id,
                    "body": comment["body"],
                    "user": self._writer(call),
                    "path": comment["path"],
                    "line": comment["line"],
                    "start_line": start,
                    "side": comment.get("side", "RIGHT"),
                    "diff_hunk": "@@ -1 +1 @@",
                    "created_at": stamp,
                    "updated_at": stamp,
                    "in_reply_to": None,
                    "anchor": self._head_line(state, number, comment["path"], comment["line"]),
                }
            return 200, self._review_json(state, state.reviews[review_id])

    def reviews(self, repository: str, number: int) -> list[dict[str, Any]]:
        """The reviews of pull request `number`, oldest first, each with its inline comments."""
        with self._lock:
            state = self._repo(repository)
            found = []
            for review in sorted(state.reviews.values(), key=lambda r: int(r["id"])):
                if review["pull_number"] != number:
                    continue
                inline = [
                    dict(c)
                    for c in sorted(state.review_comments.values(), key=lambda c: int(c["id"]))
                    if c["review_id"] == review["id"]
                ]
                found.append({**review, "comments": inline})
            return found

    def _review_json(self, state: _RepoState, review: Mapping[str, Any]) -> dict[str, Any]:
        # Caller holds the lock.
        full, number = state.full_name, review["pull_number"]
        api, html = f"{self._base()}/repos/{full}", f"https://github.example.com/{full}"
        url = f"{html}/pull/{number}#pullrequestreview-{review['id']}"
        return {
            "id": review["id"],
            "node_id": f"PRR_{review['id']}",
            "user": self._user(review["user"]),
            "body": review["body"],
            "state": review.get("state", "COMMENTED"),
            "html_url": url,
            "pull_request_url": f"{api}/pulls/{number}",
            "_links": {"html": {"href": url}, "pull_request": {"href": f"{api}/pulls/{number}"}},
            "submitted_at": _stamp(),
            "commit_id": hashlib.sha1(f"{full}:{number}".encode()).hexdigest(),
            "author_association": self._association(full, review["user"]),
        }

    def _review_comment_json(self, state: _RepoState, comment: Mapping[str, Any]) -> Any:
        # Caller holds the lock. Both the single comment's shape and the one a
        # review's list has (which requires the positions in the diff).
        full = state.full_name
        api, html = f"{self._base()}/repos/{full}", f"https://github.example.com/{full}"
        number, comment_id = comment["pull_number"], comment["id"]
        sha = hashlib.sha1(f"{full}:{number}".encode()).hexdigest()
        links = {
            "self": {"href": f"{api}/pulls/comments/{comment_id}"},
            "html": {"href": f"{html}/pull/{number}#discussion_r{comment_id}"},
            "pull_request": {"href": f"{api}/pulls/{number}"},
        }
        multi = comment["start_line"] is not None
        return {
            "url": links["self"]["href"],
            "pull_request_review_id": comment["review_id"],
            "id": comment_id,
            "node_id": f"PRRC_{comment_id}",
            "diff_hunk": comment["diff_hunk"],
            "path": comment["path"],
            "position": 1,
            "original_position": 1,
            "commit_id": sha,
            "original_commit_id": sha,
            "user": self._user(comment["user"]),
            "body": comment["body"],
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "html_url": links["html"]["href"],
            "pull_request_url": links["pull_request"]["href"],
            "author_association": self._association(full, comment["user"]),
            "_links": links,
            "start_line": comment["start_line"],
            "original_start_line": comment["start_line"],
            "start_side": comment["side"] if multi else None,
            "line": comment["line"],
            "original_line": comment["line"],
            "side": comment["side"],
            "subject_type": "line",
            # GitHub leaves the key out of a comment that starts its thread.
            **(
                {} if comment["in_reply_to"] is None else {"in_reply_to_id": comment["in_reply_to"]}
            ),
        }

    def _reply_in_thread(self, call: Call) -> tuple[int, Any]:
        """A reply in the thread of review comment `comment_id` (a reply's own thread, as
        GitHub threads a reply to a reply), in a review of its own like a single comment."""
        _need(call, "pull_requests")
        number = _int(call.params["number"])
        comment_id = _int(call.params["comment_id"])
        body = _field(call, "body", str)
        with self._lock:
            _, state = self._state(call)
            target = state.review_comments.get(comment_id)
            if target is None or target["pull_number"] != number:
                raise _Refusal(404, "Not Found")
            top = target["in_reply_to"] or comment_id
            review_id = self._take_id()
            user = self._writer(call)
            state.reviews[review_id] = {
                "id": review_id,
                "pull_number": number,
                "body": "",
                "user": user,
                "state": "COMMENTED",
            }
            reply_id = self._take_id()
            stamp = _stamp()
            state.review_comments[reply_id] = {
                **target,
                "id": reply_id,
                "review_id": review_id,
                "body": body,
                "user": user,
                "created_at": stamp,
                "updated_at": stamp,
                "in_reply_to": top,
            }
            return 201, self._review_comment_json(state, state.review_comments[reply_id])

    def thread_replies(self, repository: str, comment_id: int) -> list[dict[str, Any]]:
        """The replies in the review thread that starts with `comment_id`, oldest first."""
        with self._lock:
            comments = self._repo(repository).review_comments.values()
            found = [dict(c) for c in comments if c["in_reply_to"] == comment_id]
        return sorted(found, key=lambda c: int(c["id"]))

    def _update_pull(self, call: Call) -> tuple[int, Any]:
        _need(call, "pull_requests")
        number = _int(call.params["number"])
        if not isinstance(call.body, dict):
            raise _Refusal(400, "Problems parsing JSON")
        with self._lock:
            _, state = self._state(call)
            pull = state.pulls.get(number)
            if pull is None:
                raise _Refusal(404, "Not Found")
            for name in ("title", "body", "base"):
                if isinstance(call.body.get(name), str):
                    pull[name] = call.body[name]
            if call.body.get("state") in ("open", "closed"):
                pull["state"] = call.body["state"]
            pull["updated_at"] = _stamp()
            issue = state.issues[number]
            issue.update(title=pull["title"], body=pull["body"], updated_at=pull["updated_at"])
            return 200, self._pull_json(state, pull)

    def _get_contents(self, call: Call) -> tuple[int, Any]:
        _need(call, "contents", level="read")
        path = call.params["path"].strip("/")
        with self._lock:
            full, state = self._state(call)
            ref = call.query.get("ref") or state.default_branch
            data = state.files.get((ref, path))
            api = f"{self._base()}/repos/{full}"
            if data is not None:
                return 200, _content_json(api, full, ref, path, data)
            inside = sorted(
                (p, d) for (r, p), d in state.files.items() if r == ref and p.startswith(path + "/")
            )
        if not inside:
            raise _Refusal(404, "Not Found")
        entries: dict[str, dict[str, Any]] = {}
        for file_path, file_data in inside:
            rest = file_path[len(path) + 1 :]
            name, _, deeper = rest.partition("/")
            item = _content_json(api, full, ref, f"{path}/{name}", file_data)
            item.pop("content")
            item.pop("encoding")
            if deeper:
                item.update(type="dir", size=0, download_url=None)
            entries.setdefault(name, item)
        return 200, list(entries.values())

    # -- GraphQL: a pull request's review threads, and resolving one --
    #
    # `POST /graphql` answers exactly two documents (compared with whitespace
    # normalised): `REVIEW_THREADS_QUERY` with `owner`, `name`, `number`, `after`, and
    # `RESOLVE_THREAD_MUTATION` with `threadId`; anything else gets GitHub's
    # GraphQL error shape (200, `errors`, no `data`). A thread is a top-level
    # review comment and its replies (`in_reply_to`); its id is `PRRT_<comment
    # id>`. It is outdated when the pull request's head (the files `put_file`
    # holds at its head branch) no longer has, at the comment's line, the text
    # that line had when the comment was made; an outdated comment's `line` is
    # null, as on GitHub. A Bot's GraphQL login has no `[bot]` suffix.

    def _head_line(self, state: _RepoState, number: int, path: str, line: int | None) -> Any:
        # Caller holds the lock. The text of `line` of `path` at the pull's head, or None.
        pull = state.pulls.get(number)
        data = state.files.get((pull["head"], path)) if pull is not None else None
        if data is None or line is None:
            return None
        lines = data.decode("utf-8", errors="replace").splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None

    def resolved_threads(self, repository: str) -> set[str]:
        """The ids of the review threads resolved so far."""
        with self._lock:
            return set(self._repo(repository).resolved)

    def _graphql(self, call: Call) -> tuple[int, Any]:
        body = call.body if isinstance(call.body, dict) else {}
        query = _normalised(str(body.get("query", "")))
        variables = body.get("variables") or {}
        if not isinstance(variables, dict):
            variables = {}
        if query == _normalised(REVIEW_THREADS_QUERY):
            return 200, self._review_threads(call, variables)
        if query == _normalised(RESOLVE_THREAD_MUTATION):
            try:
                _need(call, "pull_requests")
            except _Refusal as refusal:
                return 200, _graphql_error(refusal.message, "FORBIDDEN", ["resolveReviewThread"])
            return 200, self._resolve_thread(call, variables)
        return 200, _graphql_error(
            "This fake answers only the review threads query and the resolveReviewThread mutation"
        )

    def _graphql_repo(self, call: Call, owner: object, name: object) -> _RepoState | None:
        # Caller holds the lock. What the token cannot see does not exist, as on GitHub.
        full = f"{owner}/{name}".lower()
        assert call.token is not None
        if full not in (r.lower() for r in call.token.repositories):
            return None
        return next((s for s in self._repos.values() if s.full_name.lower() == full), None)

    def _review_threads(self, call: Call, variables: Mapping[str, Any]) -> Any:
        owner, name, number = variables.get("owner"), variables.get("name"), variables.get("number")
        with self._lock:
            state = self._graphql_repo(call, owner, name)
            if state is None:
                return _graphql_error(
                    f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                    "NOT_FOUND",
                    ["repository"],
                )
            if not isinstance(number, int) or number not in state.pulls:
                return {
                    "data": {"repository": {"pullRequest": None}},
                    **_graphql_error(
                        f"Could not resolve to a PullRequest with the number of {number}.",
                        "NOT_FOUND",
                        ["repository", "pullRequest"],
                    ),
                }
            comments = sorted(
                (c for c in state.review_comments.values() if c["pull_number"] == number),
                key=lambda c: int(c["id"]),
            )
            tops = [c for c in comments if c.get("in_reply_to") is None]
            # GitHub's cursors are opaque; this fake's is the index of the next thread.
            after = variables.get("after")
            start = int(after) if isinstance(after, str) and after.isdigit() else 0
            page = tops[start : start + _THREADS_PER_PAGE]
            more = start + _THREADS_PER_PAGE < len(tops)
            nodes = []
            for top in page:
                outdated = top["line"] is not None and top.get("anchor") != self._head_line(
                    state, number, top["path"], top["line"]
                )
                login = str(top["user"]).removesuffix("[bot]")
                nodes.append(
                    {
                        "id": f"PRRT_{top['id']}",
                        "isResolved": f"PRRT_{top['id']}" in state.resolved,
                        "isOutdated": outdated,
                        "comments": {
                            "nodes": [
                                {
                                    "databaseId": top["id"],
                                    "author": {"login": login},
                                    "body": top["body"],
                                    "path": top["path"],
                                    "line": None if outdated else top["line"],
                                }
                            ]
                        },
                    }
                )
        info = {"hasNextPage": more, "endCursor": str(start + len(page)) if page else None}
        pull = {"reviewThreads": {"pageInfo": info, "nodes": nodes}}
        return {"data": {"repository": {"pullRequest": pull}}}

    def _resolve_thread(self, call: Call, variables: Mapping[str, Any]) -> Any:
        thread_id = str(variables.get("threadId", ""))
        with self._lock:
            for state in self._repos.values():
                top = _int_or_none(thread_id.removeprefix("PRRT_"))
                comment = state.review_comments.get(top) if top is not None else None
                if (
                    thread_id.startswith("PRRT_")
                    and comment is not None
                    and comment.get("in_reply_to") is None
                    and self._graphql_repo(call, *state.full_name.split("/")) is not None
                ):
                    state.resolved.add(thread_id)
                    thread = {"id": thread_id, "isResolved": True}
                    return {"data": {"resolveReviewThread": {"thread": thread}}}
        return {
            "data": {"resolveReviewThread": None},
            **_graphql_error(
                f"Could not resolve to a node with the global id of '{thread_id}'",
                "NOT_FOUND",
                ["resolveReviewThread"],
            ),
        }

    def _base(self) -> str:
        return self.base_url if self._serving.port is not None else ""

    # -- schedules (bot/intake/scheduler.py): listing installations, conditional contents --
    #
    # `GET /app/installations` (the App's JWT) and `GET /installation/repositories`
    # (an installation token: the repositories it was scoped to) page with
    # `per_page` and `page` and a `Link: rel="next"` header, as GitHub does.
    # `suspend` and `archive` mark what the listings say. Contents answers carry
    # an ETag, and a request whose `If-None-Match` names the current one gets a
    # 304 with no body; `requests` shows which were answered so.

    def _add_schedule_routes(self) -> None:
        self._suspended: set[int] = set()
        self._archived: set[str] = set()
        self.add_route("GET", "/app/installations", self._list_installations, auth="app")
        self.add_route("GET", "/installation/repositories", self._list_installation_repos)
        # Later routes win: this one wraps the plain contents handler.
        self.add_route(
            "GET", "/repos/{owner}/{repo}/contents/{path:path}", self._get_contents_conditional
        )

    def suspend(self, installation_id: int) -> None:
        """Suspend an installation: listed with `suspended_at`, as GitHub lists it."""
        with self._lock:
            self._suspended.add(installation_id)

    def archive(self, repository: str) -> None:
        """Mark `repository` ("owner/name") archived in the installation's listing."""
        with self._lock:
            self._archived.add(repository.lower())

    def _installation_json(self, installation: FakeInstallation) -> dict[str, Any]:
        # Caller holds the lock.
        stamp = "2024-01-01T00:00:00Z"
        suspended = installation.id in self._suspended
        base = self._base()
        account_id = self._repo_id(installation.account) * 10
        return {
            "id": installation.id,
            "account": user_json(installation.account, account_id, kind="Organization", base=base),
            "repository_selection": "selected",
            "access_tokens_url": f"{base}/app/installations/{installation.id}/access_tokens",
            "repositories_url": f"{base}/installation/repositories",
            "html_url": f"https://github.example.com/settings/installations/{installation.id}",
            "app_id": self.app_id,
            "target_id": account_id,
            "target_type": "Organization",
            "permissions": dict(installation.permissions),
            "events": ["issue_comment", "issues", "pull_request_review_comment"],
            "created_at": stamp,
            "updated_at": stamp,
            "single_file_name": None,
            "app_slug": self.slug,
            "suspended_by": user_json("octo-admin", 2, base=base) if suspended else None,
            "suspended_at": stamp if suspended else None,
        }

    def _list_installations(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        with self._lock:
            every = [
                self._installation_json(i)
                for i in sorted(self.installations.values(), key=lambda i: i.id)
            ]
        return _page(call, every, f"{self._base()}/app/installations")

    def _list_installation_repos(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        assert call.token is not None
        with self._lock:
            installation = self.installations.get(call.token.installation_id)
            # What the installation can see now, within the token's scope.
            current = (
                set()
                if installation is None
                else {f"{installation.account}/{n}".lower() for n in installation.repositories}
            )
            repos = []
            for full in call.token.repositories:
                if full.lower() not in current:
                    continue
                repo = repository_json(
                    full,
                    self._repo_id(full),
                    base=self._base(),
                    default_branch=self._repo(full).default_branch,
                )
                repo["archived"] = full.lower() in self._archived
                repos.append(repo)
        status, chosen, headers = _page(call, repos, f"{self._base()}/installation/repositories")
        answer = {"total_count": len(repos), "repository_selection": "all", "repositories": chosen}
        return status, answer, headers

    def _get_contents_conditional(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        status, answer = self._get_contents(call)
        digest = hashlib.sha1(json.dumps(answer, sort_keys=True).encode()).hexdigest()
        etag = f'W/"{digest}"'
        wanted = {tag.strip() for tag in call.headers.get("if-none-match", "").split(",")}
        if etag in wanted or "*" in wanted:
            return 304, None, {"ETag": etag}
        return status, answer, {"ETag": etag}

    # -- checks, commits and Actions logs (CI repair) --

    def _add_check_routes(self) -> None:
        repo = "/repos/{owner}/{repo}"
        self.add_route("GET", repo + "/commits/{ref}", self._get_commit)
        self.add_route("GET", repo + "/commits/{ref}/check-runs", self._list_check_runs)
        self.add_route(
            "GET", repo + "/check-runs/{check_run_id}/annotations", self._list_annotations
        )
        self.add_route("GET", repo + "/actions/jobs/{job_id}/logs", self._job_logs)
        self.add_route("GET", repo + "/actions/runs/{run_id}/logs", self._run_logs)

    def edit_pull(self, repository: str, number: int, **fields: Any) -> None:
        """Edit pull request `number` as a maintainer would on the web (its `body`, `title`)."""
        with self._lock:
            self._repo(repository).pulls[number].update(fields)

    def set_pull_head(self, repository: str, number: int, sha: str) -> None:
        """Pull request `number`'s head commit from now on (a push to its branch)."""
        with self._lock:
            self._repo(repository).pulls[number]["head_sha"] = sha

    def add_commit(
        self,
        repository: str,
        sha: str,
        message: str,
        *,
        author: str | None,
        committer: str | None = None,
        author_email: str = "",
        committer_email: str = "",
    ) -> None:
        """Commit `sha` as `GET .../commits/{sha}` answers it: `author`/`committer` are the
        accounts GitHub linked by email (None: none), the emails git's own fields."""
        with self._lock:
            self._ci_state(repository).commits[sha] = {
                "sha": sha,
                "message": message,
                "author": author,
                "committer": author if committer is None else committer,
                "author_email": author_email or f"{author or 'someone'}@example.com",
                "committer_email": committer_email or author_email or "x@example.com",
            }

    def add_check_run(
        self,
        repository: str,
        head_sha: str,
        name: str,
        conclusion: str,
        *,
        output: Mapping[str, str] | None = None,
        annotations: Sequence[Mapping[str, Any]] = (),
        log: bytes | None = None,
        app: str = "github-actions",
    ) -> int:
        """A completed check run on `head_sha`; `log` is its Actions job's log. Its id."""
        with self._lock:
            run_id = self._take_id()
            self._ci_state(repository).check_runs[run_id] = {
                "id": run_id,
                "head_sha": head_sha,
                "name": name,
                "conclusion": conclusion,
                "output": dict(output or {}),
                "annotations": [dict(a) for a in annotations],
                "log": log,
                "app": app,
            }
        return run_id

    def set_run_logs(self, repository: str, run_id: int, archive: bytes) -> None:
        """What `GET .../actions/runs/{run_id}/logs` downloads: a ZIP, as GitHub's."""
        with self._lock:
            self._ci_state(repository).run_logs[run_id] = archive

    @property
    def download_requests(self) -> list[tuple[str, str | None]]:
        """Each log download: its path and the Authorization header it came with."""
        with self._lock:
            return list(self._download_requests)

    def _ci_state(self, repository: str) -> _CiState:
        # Caller holds the lock.
        return self._ci.setdefault(repository.lower(), _CiState())

    def _get_commit(self, call: Call) -> tuple[int, Any]:
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        api, html = f"{self._base()}/repos/{full}", f"https://github.example.com/{full}"
        _need(call, "contents", level="read")
        with self._lock:
            commit = self._ci_state(full).commits.get(call.params["ref"])
            if commit is None:
                raise _Refusal(422, f"No commit found for SHA: {call.params['ref']}")
            sha = commit["sha"]

            def person(login: str | None) -> Any:
                return None if login is None else self._user(login)

            def git_person(login: str | None, email: str) -> dict[str, str]:
                return {"name": login or "someone", "email": email, "date": _stamp()}

            tree = hashlib.sha1(f"tree:{sha}".encode()).hexdigest()
            return 200, {
                "url": f"{api}/commits/{sha}",
                "sha": sha,
                "node_id": f"C_{sha[:12]}",
                "html_url": f"{html}/commit/{sha}",
                "comments_url": f"{api}/commits/{sha}/comments",
                "commit": {
                    "url": f"{api}/git/commits/{sha}",
                    "author": git_person(commit["author"], commit["author_email"]),
                    "committer": git_person(commit["committer"], commit["committer_email"]),
                    "message": commit["message"],
                    "comment_count": 0,
                    "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
                },
                "author": person(commit["author"]),
                "committer": person(commit["committer"]),
                "parents": [],
                "stats": {"additions": 1, "deletions": 0, "total": 1},
                "files": [],
            }

    def _app_json(self, slug: str) -> dict[str, Any]:
        # Caller holds the lock.
        stamp = "2020-01-01T00:00:00Z"
        app_id = 15368 if slug == "github-actions" else self.app_id
        return {
            "id": app_id,
            "slug": slug,
            "node_id": f"A_{app_id}",
            "owner": user_json("github", 9919, kind="Organization", base=self._base()),
            "name": "GitHub Actions" if slug == "github-actions" else slug,
            "description": "",
            "external_url": "https://github.example.com",
            "html_url": f"https://github.example.com/apps/{slug}",
            "created_at": stamp,
            "updated_at": stamp,
            "permissions": {"checks": "write", "metadata": "read"},
            "events": [],
        }

    def _check_run_json(self, full: str, run: Mapping[str, Any]) -> dict[str, Any]:
        # Caller holds the lock.
        api = f"{self._base()}/repos/{full}"
        output = run["output"]
        run_id = run["id"]
        return {
            "id": run_id,
            "node_id": f"CR_{run_id}",
            "head_sha": run["head_sha"],
            "external_id": "",
            "url": f"{api}/check-runs/{run_id}",
            "html_url": f"https://github.example.com/{full}/runs/{run_id}",
            "details_url": f"https://github.example.com/{full}/actions/runs/1/job/{run_id}",
            "status": "completed",
            "conclusion": run["conclusion"],
            "started_at": "2020-01-01T00:00:00Z",
            "completed_at": "2020-01-01T00:01:00Z",
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": len(run["annotations"]),
                "annotations_url": f"{api}/check-runs/{run_id}/annotations",
            },
            "name": run["name"],
            "check_suite": {"id": 1},
            "app": self._app_json(run["app"]),
            "pull_requests": [],
        }

    def _list_check_runs(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        status = call.query.get("status")
        _need(call, "checks", level="read")
        with self._lock:
            runs = [
                self._check_run_json(full, run)
                for run in self._ci_state(full).check_runs.values()
                if run["head_sha"] == call.params["ref"] and status in (None, "completed")
            ]
        _, page, headers = _page(call, runs, f"{self._base()}{call.route}")
        return 200, {"total_count": len(runs), "check_runs": page}, headers

    def _list_annotations(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        blob = f"https://github.example.com/{full}/blob"
        _need(call, "checks", level="read")
        with self._lock:
            run = self._ci_state(full).check_runs.get(_int(call.params["check_run_id"]))
            if run is None:
                raise _Refusal(404, "Not Found")
            items = [
                {
                    "path": a.get("path", "README.md"),
                    "blob_href": f"{blob}/{run['head_sha']}/{a.get('path', 'README.md')}",
                    "start_line": a.get("start_line", 1),
                    "end_line": a.get("end_line", a.get("start_line", 1)),
                    "start_column": None,
                    "end_column": None,
                    "annotation_level": a.get("annotation_level", "failure"),
                    "title": a.get("title", ""),
                    "message": a.get("message", ""),
                    "raw_details": None,
                }
                for a in run["annotations"]
            ]
        return _page(call, items, f"{self._base()}{call.route}")

    def _offer_download(self, data: bytes, media_type: str) -> str:
        # Caller holds the lock. A short-lived URL on another path, as GitHub's are.
        token = secrets.token_urlsafe(16)
        self._downloads[token] = (data, media_type)
        return f"{self.origin}/_downloads/{token}"

    def _job_logs(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        _need(call, "actions", level="read")
        with self._lock:
            run = self._ci_state(full).check_runs.get(_int(call.params["job_id"]))
            if run is None or run["log"] is None:
                raise _Refusal(404, "Not Found")
            location = self._offer_download(run["log"], "text/plain")
        return 302, None, {"Location": location}

    def _run_logs(self, call: Call) -> tuple[int, Any, Mapping[str, str]]:
        full = self._full_name(f"{call.params['owner']}/{call.params['repo']}")
        _need(call, "actions", level="read")
        with self._lock:
            archive = self._ci_state(full).run_logs.get(_int(call.params["run_id"]))
            if archive is None:
                raise _Refusal(404, "Not Found")
            location = self._offer_download(archive, "application/zip")
        return 302, None, {"Location": location}

    def _rendered(self, body: str, html: bool) -> dict[str, str]:
        if not html:
            return {}
        self.attachments.origin = self.origin
        return {"body_html": self.attachments.render(body)}

    async def _attachment(self, request: Request) -> Response:
        asset = self.attachments.serve(
            request.path_params["asset"],
            request.query_params.get("jwt"),
            request.headers.get("authorization"),
        )
        if asset is None:
            return Response(b"Not Found", status_code=404)
        return Response(asset.data, media_type=asset.media_type)

    async def _download(self, request: Request) -> Response:
        token = request.path_params["token"]
        with self._lock:
            self._download_requests.append((request.url.path, request.headers.get("authorization")))
            found = self._downloads.get(token)
        if found is None:
            return Response(b"expired", status_code=404)
        data, media_type = found
        return Response(data, media_type=media_type)


def _full(call: Call) -> bool:
    """Whether the call asked for posts with their rendering (`body_html`)."""
    accept = call.headers.get("accept", "")
    return "full+json" in accept or "html+json" in accept


def _response(status: int, payload: Any, extra: Mapping[str, str]) -> Response:
    headers = {"X-GitHub-Media-Type": "github.v3; format=json", **extra}
    if status in (204, 302, 304):
        return Response(status_code=status, headers=headers)
    if isinstance(payload, RawBody):
        headers["X-GitHub-Media-Type"] = "github.v3; param=diff"
        return Response(
            payload.text.encode(),
            status_code=status,
            headers=headers,
            media_type=f"{payload.media_type}; charset=utf-8",
        )
    return JSONResponse(payload, status_code=status, headers=headers)


def _page(call: Call, items: list[Any], url: str) -> tuple[int, list[Any], Mapping[str, str]]:
    """One page of `items` for `per_page` and `page`, with GitHub's `Link` to the next."""
    per_page = min(max(_int(call.query.get("per_page", "30"), 422), 1), 100)
    page = max(_int(call.query.get("page", "1"), 422), 1)
    headers = {}
    if page * per_page < len(items):
        headers["Link"] = f'<{url}?per_page={per_page}&page={page + 1}>; rel="next"'
    return 200, items[(page - 1) * per_page : page * per_page], headers


def _check_scope(token: IssuedToken, params: Mapping[str, str]) -> None:
    """404, as GitHub answers, for a repository the token was not scoped to."""
    if "owner" in params and "repo" in params:
        wanted = f"{params['owner']}/{params['repo']}".lower()
        if wanted not in (name.lower() for name in token.repositories):
            raise _Refusal(404, "Not Found")


def _all(values: object, kind: type) -> bool:
    return isinstance(values, list) and all(
        isinstance(value, kind) and not isinstance(value, bool) for value in values
    )


_DEFAULT_MESSAGES = {
    403: "You have exceeded a secondary rate limit. Please wait a few minutes before you "
    "try again. If you reach out to GitHub Support for help, please include the request ID.",
    404: "Not Found",
    422: "Validation Failed",
    429: "You have exceeded a secondary rate limit. Please wait a few minutes before you "
    "try again.",
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
}
# `application/vnd.github.diff`, also in its `.v3.diff` spelling.
_DIFF_MEDIA_TYPE = re.compile(r"application/vnd\.github(?:\.v3)?\.diff\b")
_DIFF_TOO_LARGE = "Sorry, the diff exceeded the maximum number of lines (20000)"
_REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


@dataclass
class _Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    headers: Mapping[str, str]
    message: str
    remaining: int


@dataclass
class _RepoState:
    """One repository's issues, comments, pulls, reactions and files, in memory."""

    full_name: str = ""
    default_branch: str = "main"
    next_number: int = 1  # issues and pull requests share their numbers, as on GitHub
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    review_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: dict[int, dict[str, Any]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (ref, path) → bytes
    drafts_allowed: bool = True  # False: a private repository on a free plan
    resolved: set[str] = field(default_factory=set)  # review thread ids


@dataclass
class _CiState:
    """One repository's commits, check runs and workflow runs' logs, in memory."""

    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    run_logs: dict[int, bytes] = field(default_factory=dict)


# The two GraphQL documents the fake answers (whitespace aside), with variables.
# The threads query's page is `first: 100`; `after` is the cursor it last answered.
_THREADS_PER_PAGE = 100
REVIEW_THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated
          comments(first: 1) { nodes { databaseId author { login } body path line } }
        }
      }
    }
  }
}
"""
RESOLVE_THREAD_MUTATION = """
mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}
"""


def _normalised(document: str) -> str:
    """`document` with no whitespace but what separates two names."""
    spaced = re.sub(r"\s+", " ", document).strip()
    return re.sub(r" ?([{}():,!$\[\]]) ?", r"\1", spaced)


def _graphql_error(
    message: str, kind: str | None = None, path: list[str] | None = None
) -> dict[str, Any]:
    """GitHub's GraphQL error answer: HTTP 200, an `errors` list."""
    error: dict[str, Any] = {"message": message, "locations": [{"line": 1, "column": 1}]}
    if kind is not None:
        error["type"] = kind
    if path is not None:
        error["path"] = path
    return {"errors": [error]}


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def _diff_lines(diff: str) -> set[tuple[str, str, int]]:
    """(path, side, line) of every line in `diff`'s hunks: where GitHub takes a comment."""
    lines: set[tuple[str, str, int]] = set()
    path = ""
    old = new = 0
    for raw in diff.split("\n"):
        if raw.startswith("diff --git "):
            path = raw.rsplit(" b/", 1)[-1]
            old = new = -1
        elif (header := _HUNK_HEADER.match(raw)) is not None:
            old, new = int(header[1]), int(header[2])
        elif old < 0:  # the file header, before its first hunk
            continue
        elif raw.startswith("+"):
            lines.add((path, "RIGHT", new))
            new += 1
        elif raw.startswith("-"):
            lines.add((path, "LEFT", old))
            old += 1
        elif raw.startswith(" "):
            lines.update({(path, "RIGHT", new), (path, "LEFT", old)})
            old, new = old + 1, new + 1
    return lines


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(item: Mapping[str, Any]) -> int:
    return int(item["number"])


def _int(value: str, status: int = 404) -> int:
    try:
        return int(value)
    except ValueError:
        raise _Refusal(status, "Not Found" if status == 404 else "Validation Failed") from None


def _field(call: Call, name: str, kind: type) -> Any:
    if not isinstance(call.body, dict):
        raise _Refusal(400, "Problems parsing JSON")
    value = call.body.get(name)
    if not isinstance(value, kind):
        raise _Refusal(422, "Invalid request.")
    return value


def _need(call: Call, *names: str, level: str = "write") -> None:
    """403, as GitHub answers, unless the token grants one of `names` at `level`."""
    granted = call.token.permissions if call.token is not None else {}
    if not any(_LEVELS.get(granted.get(name, ""), 0) >= _LEVELS[level] for name in names):
        raise _Refusal(403, "Resource not accessible by integration")


def _content_json(api: str, full: str, ref: str, path: str, data: bytes) -> dict[str, Any]:
    """A contents API file object; `content` is base64 in 60-character lines, as GitHub's."""
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    encoded = base64.b64encode(data).decode()
    lines = [encoded[i : i + 60] for i in range(0, len(encoded), 60)]
    url = f"{api}/contents/{path}?ref={ref}"
    html = f"https://github.example.com/{full}/blob/{ref}/{path}"
    git = f"{api}/git/blobs/{sha}"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(data),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": "".join(line + "\n" for line in lines),
        "sha": sha,
        "url": url,
        "git_url": git,
        "html_url": html,
        "download_url": f"https://raw.example.com/{full}/{ref}/{path}",
        "_links": {"self": url, "git": git, "html": html},
    }
