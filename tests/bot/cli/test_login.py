"""`neo login chatgpt`, `neo logout` and `neo run --openai-auth subscription`: the
installed console script against the fake sign-in service and Codex backend."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.main import main
from runner.auth.storage import credentials_path, load_credentials
from tests.fakes.chatgpt_auth import EXPIRED, PENDING, FakeChatGPTAuth
from tests.fakes.openai_responses import FakeOpenAIResponses, Reply, function_call, message

NEO = Path(sys.executable).with_name("neo")


@pytest.fixture
def auth() -> Iterator[FakeChatGPTAuth]:
    with FakeChatGPTAuth(account_id="acct-cli-42") as server:
        yield server


@pytest.fixture
def backend(auth: FakeChatGPTAuth) -> Iterator[FakeOpenAIResponses]:
    with FakeOpenAIResponses(chatgpt=auth) as server:
        yield server


def neo(home: Path, extra_env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **extra_env, "NEO_HOME": str(home)}
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run(
        [str(NEO), *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_login_shows_the_page_and_code_then_stores_owner_only(
    auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    auth.script_polls(PENDING, PENDING)

    done = neo(tmp_path, auth.env, "login", "chatgpt")

    assert done.returncode == 0, done.stderr
    assert f"open {auth.url}/codex/device" in done.stdout
    polled = auth.polls()[0].body["user_code"]
    assert f"enter the code {polled} " in done.stdout
    assert "Signed in to ChatGPT (account acct-cli-42)" in done.stdout
    assert len(auth.polls()) == 3
    stored = load_credentials(tmp_path)
    for secret in stored.secrets:
        assert secret not in done.stdout + done.stderr
    path = credentials_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_expired_code_is_one_line_and_stores_nothing(
    auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    auth.script_polls(PENDING, EXPIRED)

    done = neo(tmp_path, auth.env, "login", "chatgpt")

    assert done.returncode == 1
    assert done.stderr == (
        "neo: error: chatgpt sign-in: the code expired before it was approved "
        "(run `neo login chatgpt`)\n"
    )
    assert not credentials_path(tmp_path).exists()


def test_login_names_only_what_it_knows(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["login", "claude"])

    assert caught.value.code == 2
    assert "invalid choice: 'claude'" in capsys.readouterr().err


def test_logout_revokes_the_sign_in_and_says_whether_there_were_credentials(
    auth: FakeChatGPTAuth,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert neo(tmp_path, auth.env, "login", "chatgpt").returncode == 0
    stored = load_credentials(tmp_path)
    monkeypatch.setenv("NEO_HOME", str(tmp_path))
    monkeypatch.setenv("NEO_CHATGPT_AUTH_URL", auth.url)

    assert main(["logout"]) == 0
    assert capsys.readouterr().out == (
        f"Signed out of ChatGPT: revoked the sign-in and deleted {credentials_path(tmp_path)}\n"
    )
    assert not credentials_path(tmp_path).exists()
    assert [r.body["token"] for r in auth.revocations()] == [stored.refresh_token]
    assert stored.access_token not in auth.live_access_tokens

    assert main(["logout", "chatgpt"]) == 0
    assert capsys.readouterr().out == (
        "Not signed in to ChatGPT: there were no stored credentials\n"
    )
    assert len(auth.revocations()) == 1


def test_logout_offline_still_deletes_and_warns_in_one_line(
    auth: FakeChatGPTAuth, tmp_path: Path
) -> None:
    assert neo(tmp_path, auth.env, "login", "chatgpt").returncode == 0
    stored = load_credentials(tmp_path)

    done = neo(tmp_path, {"NEO_CHATGPT_AUTH_URL": "http://127.0.0.1:9"}, "logout")

    assert done.returncode == 0
    assert done.stdout == f"Signed out of ChatGPT: deleted {credentials_path(tmp_path)}\n"
    assert done.stderr.startswith(
        "neo: warning: the sign-in was not revoked (chatgpt sign-in: cannot reach 127.0.0.1 ("
    )
    assert done.stderr.endswith("); its tokens stay valid until they lapse\n")
    assert done.stderr.count("\n") == 1
    for secret in stored.secrets:
        assert secret not in done.stdout + done.stderr
    assert not credentials_path(tmp_path).exists()


def test_run_with_the_subscription_drives_tools_end_to_end(
    auth: FakeChatGPTAuth, backend: FakeOpenAIResponses, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greeting.txt").write_text("hello world\n")
    # With Neo's debug log on: not even that shows a token.
    env = {**auth.env, **backend.env, "NEO_DEBUG": "1"}
    assert neo(home, env, "login", "chatgpt").returncode == 0
    backend.script(
        Reply([function_call("call_1", "read_file", {"path": "greeting.txt"})]),
        Reply([message("It says hello world.")]),
    )

    done = neo(
        home,
        env,
        "run",
        "--provider",
        "openai",
        "--openai-auth",
        "subscription",
        "--output-format",
        "json",
        "--repo",
        str(repo),
        "read greeting.txt",
    )

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["is_error"] is False
    assert result["result"] == "It says hello world."
    assert result["num_turns"] == 2
    assert result["stop_reason"] == "end_turn"
    assert len(backend.requests) == 2
    token = load_credentials(home).access_token
    assert all(r.headers["authorization"] == f"Bearer {token}" for r in backend.requests)
    assert all(r.headers["chatgpt-account-id"] == "acct-cli-42" for r in backend.requests)
    outputs = [i for i in backend.requests[1].body["input"] if i["type"] == "function_call_output"]
    assert "hello world" in outputs[0]["output"]
    assert token not in done.stdout + done.stderr

    # Resumed without the flag, the session signs in as it did.
    backend.script(Reply([message("You asked me to read greeting.txt.")]))
    again = neo(
        home,
        env,
        "run",
        "--output-format",
        "json",
        "--resume",
        result["session_id"],
        "what did I ask?",
    )

    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.strip().splitlines()[-1])["is_error"] is False
    assert len(backend.requests) == 3
    assert backend.requests[2].headers["authorization"] == f"Bearer {token}"


def test_run_without_signing_in_is_one_line_exit_2(
    auth: FakeChatGPTAuth, backend: FakeOpenAIResponses, tmp_path: Path
) -> None:
    done = neo(
        tmp_path,
        {**auth.env, **backend.env},
        "run",
        "--provider",
        "openai",
        "--openai-auth",
        "subscription",
        "hello",
    )

    assert done.returncode == 2
    assert done.stderr == "neo: error: not signed in to ChatGPT (run `neo login chatgpt`)\n"
    assert not backend.requests
