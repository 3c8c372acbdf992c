"""Signing out against the fake sign-in service: the file goes, the grant is revoked."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runner.auth import oauth
from runner.auth.credentials import credentials_from_tokens
from runner.auth.endpoints import Endpoints, endpoints
from runner.auth.errors import AuthError
from runner.auth.sign_out import SignedOut, sign_out
from runner.auth.storage import credentials_path, save_credentials
from tests.fakes.chatgpt_auth import CLIENT_ID, FakeChatGPTAuth


async def test_a_sign_out_revokes_the_refresh_token_and_deletes_the_file(
    fake_auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    stored = credentials_from_tokens(fake_auth.issue(), now=time.time())
    save_credentials(tmp_path, stored)

    done = await sign_out(tmp_path, endpoints(fake_auth.env))

    assert done == SignedOut(deleted=True, revoked=True)
    assert not credentials_path(tmp_path).exists()
    (revocation,) = fake_auth.revocations()
    assert revocation.content_type == "application/json"
    assert revocation.body == {
        "token": stored.refresh_token,
        "token_type_hint": "refresh_token",
        "client_id": CLIENT_ID,
    }
    # A copy of the file kept elsewhere is now worth nothing.
    assert stored.access_token not in fake_auth.live_access_tokens
    async with oauth.client() as http:
        with pytest.raises(AuthError, match="refresh_token_reused"):
            await oauth.refresh(http, endpoints(fake_auth.env), stored, now=time.time())


async def test_a_sign_out_that_cannot_reach_openai_still_deletes(tmp_path: Path) -> None:
    with FakeChatGPTAuth() as auth:
        save_credentials(tmp_path, credentials_from_tokens(auth.issue(), now=time.time()))

    done = await sign_out(tmp_path, Endpoints("http://127.0.0.1:9", "http://unused.invalid"))

    assert done.deleted
    assert not done.revoked
    assert done.problem.startswith("chatgpt sign-in: cannot reach 127.0.0.1 (")
    assert not credentials_path(tmp_path).exists()


async def test_nothing_stored_is_nothing_to_revoke(
    fake_auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    assert await sign_out(tmp_path, endpoints(fake_auth.env)) == SignedOut(deleted=False)
    assert not fake_auth.revocations()


async def test_a_file_not_ours_to_read_is_deleted_with_nothing_revoked(
    fake_auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    path = credentials_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    path.chmod(0o600)

    done = await sign_out(tmp_path, endpoints(fake_auth.env))

    assert done == SignedOut(deleted=True, problem="its file could not be read")
    assert not path.exists()
    assert not fake_auth.revocations()
