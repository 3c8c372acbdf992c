"""A signed-in account's tokens kept fresh across processes: real Neo processes
refreshing from one `$NEO_HOME` against the fake sign-in service."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.auth.credentials import credentials_from_tokens
from runner.auth.endpoints import endpoints
from runner.auth.errors import AuthError
from runner.auth.lock import sign_in_lock
from runner.auth.storage import load_credentials, save_credentials
from runner.auth.tokens import ChatGPTTokens
from tests.fakes.chatgpt_auth import FakeChatGPTAuth

# One process: it signs a request once told to, and prints the bearer it used.
_REFRESHER = """
import asyncio, sys
from pathlib import Path
from runner.auth.endpoints import endpoints
from runner.auth.tokens import ChatGPTTokens

async def main() -> None:
    tokens = ChatGPTTokens(Path(sys.argv[1]), endpoints({"NEO_CHATGPT_AUTH_URL": sys.argv[2]}))
    print("ready", flush=True)
    sys.stdin.readline()
    headers = await tokens.headers()
    print(headers["Authorization"].removeprefix("Bearer "), flush=True)

asyncio.run(main())
"""


def signed_in(home: Path, auth: FakeChatGPTAuth, *, lifetime: float) -> None:
    save_credentials(home, credentials_from_tokens(auth.issue(lifetime=lifetime), now=time.time()))


def test_two_processes_refreshing_at_once_spend_the_refresh_token_once(
    fake_auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    # Both find the token two minutes from expiry, inside the refresh margin;
    # the service answers a refresh only once a second one came (or 1.5 s passed),
    # so two processes that both send one are both seen.
    signed_in(tmp_path, fake_auth, lifetime=120)
    fake_auth.hold_refreshes = 1.5
    argv = [sys.executable, "-c", _REFRESHER, str(tmp_path), fake_auth.url]
    processes = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = [process.communicate(timeout=60) for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()

    assert [process.returncode for process in processes] == [0, 0]
    stored = load_credentials(tmp_path)
    assert [out for out, _ in outputs] == [f"{stored.access_token}\n"] * 2
    assert fake_auth.refreshes() == 1
    assert stored.access_token in fake_auth.live_access_tokens


async def test_a_file_signed_in_to_another_account_since_ends_the_run_in_one_line(
    fake_auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    signed_in(tmp_path, fake_auth, lifetime=120)
    tokens = ChatGPTTokens(tmp_path, endpoints(fake_auth.env))
    fake_auth.account_id = "acct-someone-else"
    signed_in(tmp_path, fake_auth, lifetime=3600)

    with pytest.raises(AuthError) as caught:
        await tokens.headers()

    assert str(caught.value) == (
        f"chatgpt sign-in: {tmp_path}/auth/chatgpt.json is now signed in to another account"
        " (acct-someone-else, not acct-fake-0001); start the run again to use it"
    )
    assert fake_auth.refreshes() == 0
    assert load_credentials(tmp_path).account_id == "acct-someone-else"


async def test_a_refresh_waits_for_the_lock_another_process_holds(
    fake_auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    signed_in(tmp_path, fake_auth, lifetime=120)
    tokens = ChatGPTTokens(tmp_path, endpoints(fake_auth.env))
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(AuthError) as caught:
            async with sign_in_lock(tmp_path, timeout=0.2):
                pass
        assert str(caught.value) == (
            f"chatgpt sign-in: another Neo process has held {tmp_path}/auth/chatgpt.lock"
            " for 0.2 s; try again when it is done"
        )
        assert holder.stdin is not None
        holder.stdin.write("release\n")
        holder.stdin.flush()
        headers = await tokens.headers()
    finally:
        holder.kill()
        holder.wait()

    assert headers["Authorization"] == f"Bearer {load_credentials(tmp_path).access_token}"
    assert fake_auth.refreshes() == 1


# Another process holding the lock until told to let go.
_HOLDER = """
import asyncio, sys
from pathlib import Path
from runner.auth.lock import sign_in_lock

async def main() -> None:
    async with sign_in_lock(Path(sys.argv[1])):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

asyncio.run(main())
"""
