"""`neo run` end to end: the real CLI, the real SDK, the fake Messages API (and
the fake Chat Completions server for `--provider chat-completions`).

Most tests call `main()` in-process; those about the installed console
script and signals run it as a subprocess.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from runner.session import SessionStore
from tests.bot.cli.console import NEO, console_env, neo
from tests.fakes import ErrorReply, FakeAnthropicAPI, Reply, Stall, text, tool_use
from tests.fakes.anthropic_api import Usage as WireUsage
from tests.fakes.chat_completions import FakeChatCompletions, ModelInfo, OllamaModel, call
from tests.fakes.chat_completions import Reply as ChatReply
from tests.fakes.openai_responses import FakeOpenAIResponses, custom_tool_call, message
from tests.fakes.openai_responses import Reply as OpenAIReply
from tests.neo_cli import loaded_by
from tests.small_disk import fill, small_disk


@pytest.fixture
def env(
    fake_anthropic: FakeAnthropicAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    values = {**fake_anthropic.env, "NEO_HOME": str(home)}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    status = main(["run", "--output-format", "json", *argv])
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    return status, json.loads(lines[-1]), captured.err


def tool_result_text(fake: FakeAnthropicAPI, request: int) -> str:
    last = fake.requests[request].body["messages"][-1]["content"]
    result = next(b for b in last if b["type"] == "tool_result")
    return "".join(part["text"] for part in result.get("content", []))


def test_json_run_drives_tools_in_the_tree(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        seen = body["messages"][-1]["content"][0]["content"][0]["text"]
        return Reply([text(f"The file says: {seen}")])

    fake_anthropic.script(
        Reply(
            [
                tool_use("toolu_1", "read_file", {"path": "greeting.txt"}),
                tool_use("toolu_2", "write_file", {"path": "out/new.txt", "content": "made\n"}),
            ],
            "tool_use",
        ),
        answer,
    )

    status, result, err = run_json(capsys, "--repo", str(repo), "read greeting.txt")

    assert status == 0, err
    assert (repo / "out" / "new.txt").read_text() == "made\n"
    assert result["type"] == "result"
    assert result["is_error"] is False
    assert "hello world" in result["result"]
    assert result["error"] is None
    assert result["stop_reason"] == "end_turn"
    assert result["num_turns"] == 2
    assert set(result["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    assert result["usage"]["input_tokens"] > 0
    assert isinstance(result["cost_usd"], float)
    assert isinstance(result["duration_ms"], int)
    assert SessionStore(Path(env["NEO_HOME"])).load(result["session_id"]).meta.cwd == str(repo)


def test_stream_json_prints_events_then_the_result(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "bash", {"command": "echo from-bash"})], "tool_use"),
        Reply([text("done")]),
    )

    status = main(["run", "--output-format", "stream-json", "--repo", str(repo), "go"])

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 0
    types = [line["type"] for line in lines]
    assert types[0] == "turn_started"
    assert "tool_started" in types
    finished = next(line for line in lines if line["type"] == "tool_finished")
    assert "from-bash" in finished["output"]
    assert types[-2] == "turn_finished"
    assert lines[-1]["type"] == "result"
    assert lines[-1]["result"] == "done"


def test_text_mode_prints_receipts_and_the_answer(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "read_file", {"path": "greeting.txt"})], "tool_use"),
        Reply([text("All read.")]),
    )

    status = main(["run", "--repo", str(repo), "read it"])

    captured = capsys.readouterr()
    assert status == 0
    assert captured.out == "All read.\n"
    assert "✓ read_file greeting.txt" in captured.err
    assert "2 model calls" in captured.err


def test_text_mode_shows_the_checklist_as_the_checklist_not_as_a_tool_call(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = [
        {"content": "Read it", "status": "in_progress"},
        {"content": "Say", "status": "pending"},
    ]
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "workflow", {"items": items})], "tool_use"),
        Reply([text("Read.")]),
    )

    assert main(["run", "--repo", str(repo), "read it"]) == 0

    err = capsys.readouterr().err
    assert "☰ checklist 0/2 done: Read it" in err
    # `workflow` among the receipts read as GitHub Actions.
    assert "workflow" not in err


@pytest.mark.parametrize(
    ("reason", "status", "error_type"),
    [
        ("end_turn", 0, None),
        ("refusal", 0, None),
        ("max_tokens", 1, "max_output_tokens"),
        ("model_context_window_exceeded", 1, "context_window_exceeded"),
        ("brand_new_reason", 1, "unexpected_stop_reason"),
    ],
)
def test_stop_reasons_map_to_exit_status_and_error_type(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    reason: str,
    status: int,
    error_type: str | None,
) -> None:
    # A response cut at the output limit is continued twice before the run fails.
    calls = 3 if reason == "max_tokens" else 1
    fake_anthropic.script(*[Reply([text("Some text")], stop_reason=reason)] * calls)

    code, result, _ = run_json(capsys, "--repo", str(repo), "go")

    assert code == status
    assert result["is_error"] is (status != 0)
    assert (result["error"] or {}).get("type") == error_type
    assert result["result"] == "Some text"
    assert result["stop_reason"] == (reason if status == 0 else None)
    assert len(fake_anthropic.requests) == calls


def test_tool_use_without_a_call_is_missing_tool_call(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Reply([text("calling...")], "tool_use"))

    code, result, _ = run_json(capsys, "--repo", str(repo), "go")

    assert code == 1
    assert result["error"]["type"] == "missing_tool_call"
    assert len(fake_anthropic.requests) == 1


def test_max_turns(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(
        *[Reply([tool_use(f"t{i}", "glob", {"pattern": "*.txt"})], "tool_use") for i in range(2)]
    )

    code, result, _ = run_json(capsys, "--repo", str(repo), "--max-turns", "2", "go")

    assert code == 1
    assert result["error"]["type"] == "max_turns"
    assert result["num_turns"] == 2


@pytest.mark.parametrize(
    ("flags", "thinking"),
    [
        ([], {"type": "adaptive"}),
        (["--effort", "none"], None),
        (["--effort", "high"], {"type": "adaptive"}),
        (["--effort", "low", "--model", "claude-haiku-4-5"], {"type": "enabled"}),
    ],
    ids=["medium-by-default-as-in-jobs", "none", "adaptive", "budget"],
)
def test_effort_asks_the_model_to_think(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    thinking: dict[str, str] | None,
) -> None:
    fake_anthropic.script(Reply([text("Thought about it.")]))

    code, result, _ = run_json(capsys, "--repo", str(repo), *flags, "go")

    assert (code, result["result"]) == (0, "Thought about it.")
    sent = fake_anthropic.requests[0].body
    if thinking is None:
        assert "thinking" not in sent
    else:
        assert sent["thinking"]["type"] == thinking["type"]
    if not flags:
        assert sent["output_config"] == {"effort": "medium"}


def test_the_system_prompt_states_the_budget_and_the_network(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Reply([text("done")]))

    code, _, err = run_json(
        capsys, "--repo", str(repo), "--max-turns", "5", "--timeout", "90", "go"
    )

    assert code == 0, err
    environment = fake_anthropic.requests[0].body["system"][-1]["text"]
    assert environment.startswith("# Environment\n")
    assert "Budget: at most 5 model turns and 90 seconds for the whole run." in environment
    assert "Network: your commands can reach the network." in environment  # --sandbox local
    # Nothing of a GitHub job: no pull request, no setup, no workflow rule.
    for absent in ("pull request", "Setup", "workflows"):
        assert absent not in environment, absent


def test_max_cost_stops_before_the_call_that_would_pass_it_with_a_last_word(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    billed: list[float] = []

    def write_all_it_may(body: dict[str, Any]) -> Reply:
        # Every call writes as many tokens as it may ($15 a million).
        billed.append(body["max_tokens"] * 15e-6 + 4_000 * 3e-6)
        usage = WireUsage(input_tokens=4_000, output_tokens=body["max_tokens"])
        if body.get("tool_choice") == {"type": "none"}:
            return Reply([text("Wrote the notes; nothing is left.")], usage=usage)
        n = len(billed)
        write = tool_use(f"t{n}", "write_file", {"path": f"notes{n}.txt", "content": "n\n"})
        return Reply([write], "tool_use", usage=usage)

    fake_anthropic.script(*([write_all_it_may] * 20))
    flags = ("--model", "claude-sonnet-4-6", "--max-cost", "0.70")

    code, result, _ = run_json(capsys, "--repo", str(repo), *flags, "go")

    assert code == 1
    assert result["error"]["type"] == "max_cost"
    assert "of the $0.70 cost limit is spent: the next model call" in result["error"]["message"]
    assert result["result"] == "Wrote the notes; nothing is left."
    assert fake_anthropic.requests[-1].body["tool_choice"] == {"type": "none"}
    # Each call was asked to write no more than was left; all told, within the limit.
    assert fake_anthropic.requests[0].body["max_tokens"] < 32_000
    assert sum(billed) <= 0.70
    assert result["cost_usd"] == pytest.approx(sum(billed))


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "must be more than 0"), ("lots", "expected an amount of US dollars"), ("inf", "finite")],
)
def test_a_bad_max_cost_is_one_line(
    capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--max-cost", value, "go"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--max-cost" in err
    assert message in err


def test_a_5_mb_command_output_reaches_the_model_capped(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = "yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ | head -c 5242880"
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "bash", {"command": command})], "tool_use"),
        Reply([text("that was long")]),
    )

    code, _, err = run_json(capsys, "--repo", str(repo), "print a lot")

    assert code == 0, err
    seen = tool_result_text(fake_anthropic, 1)
    assert len(seen.encode()) <= 32 * 1024 + 300
    marker = re.search(r"([\d,]+) bytes in ([\d,]+) lines", seen)
    assert marker is not None
    size, lines = (int(group.replace(",", "")) for group in marker.groups())
    # 5 MiB in 63-byte lines, the last one cut short: the command's own
    # output, without the exit-code line the bash tool adds.
    assert (size, lines) == (5_242_880, 83_221)
    assert seen.endswith("exit code: 0")


def test_401_is_one_line_after_one_request(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong-secret")
    fake_anthropic.script(Reply([text("unused")]))

    code = main(["run", "--repo", str(repo), "go"])

    captured = capsys.readouterr()
    assert code == 1
    error_lines = [line for line in captured.err.splitlines() if "error" in line]
    assert error_lines == [
        "neo: error: anthropic 401 authentication_error: invalid x-api-key "
        "(check ANTHROPIC_API_KEY)"
    ]
    assert "Traceback" not in captured.err
    assert "sk-wrong-secret" not in captured.err + captured.out
    assert len(fake_anthropic.requests) == 1


@pytest.mark.parametrize(
    ("argv", "unset", "message"),
    [
        (["go"], "ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY is not set"),
        (
            ["--repo", "/nonexistent/tree", "go"],
            None,
            "--repo /nonexistent/tree is not a directory",
        ),
        (["--provider", "openai", "go"], "OPENAI_API_KEY", "OPENAI_API_KEY is not set"),
        (["--resume", "no-such-session", "go"], None, "no session 'no-such-session'"),
        (
            ["--sandbox", "docker", "--image", "neo-missing:none", "go"],
            None,
            "sandbox image neo-missing:none not found",
        ),
        (["--image", "neo-sandbox:local", "go"], None, "--image applies to --sandbox docker only"),
        (["--setup", "none", "go"], None, "--setup applies to --sandbox docker only"),
        (["   "], None, "the prompt is empty"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    unset: str | None,
    message: str,
) -> None:
    if unset:
        monkeypatch.delenv(unset, raising=False)
    monkeypatch.chdir(repo)

    code, result, err = run_json(capsys, *argv)

    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("neo: error: ")
    assert message in lines[0]
    assert result["error"]["type"] == "config_error"
    assert message in result["error"]["message"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--provider", "nope", "go"], "argument --provider: invalid choice: 'nope'"),
        (["run", "--max-turns", "zero", "go"], "expected a whole number, not 'zero'"),
        (["run", "--timeout", "-5", "go"], "must be more than 0"),
        (["run"], "the following arguments are required: PROMPT"),
    ],
)
def test_usage_mistakes_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)

    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]


def test_timeout_fails_the_run_and_saves_the_session(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Stall(seconds=30, after_events=3))

    code, result, _ = run_json(capsys, "--repo", str(repo), "--timeout", "1", "go")

    assert code == 1
    assert result["error"]["type"] == "timeout"
    assert "--timeout" in result["error"]["message"]
    session = SessionStore(Path(env["NEO_HOME"])).load(result["session_id"])
    assert session.messages[0].text == "go"


def test_resume_continues_the_conversation(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "read_file", {"path": "greeting.txt"})], "tool_use"),
        Reply([text("It says hello world.")]),
        Reply([text("You asked about greeting.txt.")]),
    )
    _, first, _ = run_json(capsys, "--repo", str(repo), "--model", "claude-opus-5-5", "read it")
    monkeypatch.chdir(tmp_path)

    code, second, _ = run_json(capsys, "--resume", first["session_id"], "what did I ask?")

    assert code == 0
    assert second["session_id"] == first["session_id"]
    request = fake_anthropic.requests[-1].body
    assert request["model"] == "claude-opus-5-5"
    assert [m["role"] for m in request["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert request["messages"][0]["content"][0]["text"] == "read it"
    session = SessionStore(Path(env["NEO_HOME"])).load(first["session_id"])
    assert session.meta.cwd == str(repo)
    assert session.meta.model == "claude-opus-5-5"
    assert len(session.messages) == 6
    assert session.meta.usage.input_tokens == (
        first["usage"]["input_tokens"] + second["usage"]["input_tokens"]
    )


# -- the installed console script ------------------------------------------------


def subprocess_env(env: dict[str, str]) -> dict[str, str]:
    values = {**os.environ, **env}
    # Let the child cache bytecode: importing the SDK is slow without it.
    values.pop("PYTHONDONTWRITEBYTECODE", None)
    return values


def test_help_works_from_the_console_script() -> None:
    done = subprocess.run(
        [str(NEO), "run", "--help"], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0
    for flag in ("--repo", "--sandbox", "--output-format", "--resume", "--max-turns"):
        assert flag in done.stdout


def test_ctrl_c_exits_130_with_the_session_saved(
    fake_anthropic: FakeAnthropicAPI, env: dict[str, str], repo: Path
) -> None:
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "bash", {"command": "touch started; sleep 60"})], "tool_use")
    )
    child = subprocess.Popen(
        [str(NEO), "run", "--output-format", "json", "--repo", str(repo), "wait a minute"],
        env=subprocess_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (repo / "started").exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()

    assert child.returncode == 130, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["error"]["type"] == "interrupted"
    session = SessionStore(Path(env["NEO_HOME"])).load(result["session_id"])
    answered = session.messages[-1].content[0]
    assert answered.tool_use_id == "toolu_1"  # type: ignore[union-attr]
    assert answered.is_error  # type: ignore[union-attr]


def test_neo_debug_shows_the_raw_error_body(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_anthropic.script(ErrorReply(400, "invalid_request_error", "messages: too many"))
    monkeypatch.setenv("NEO_DEBUG", "1")
    neo_log = logging.getLogger("neo")

    try:
        code = main(["run", "--repo", str(repo), "go"])
    finally:
        neo_log.handlers.clear()
        neo_log.setLevel(logging.NOTSET)

    err = capsys.readouterr().err
    assert code == 1
    assert "neo: error: anthropic 400 invalid_request_error: messages: too many" in err
    assert "neo.llm.anthropic DEBUG anthropic error body:" in err
    assert "request_id" in err
    assert env["ANTHROPIC_API_KEY"] not in err


def test_docker_sandbox_end_to_end_leaves_no_container(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import docker

    command = "id -un && pwd && echo made > made.txt && env"
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "bash", {"command": command})], "tool_use"),
        Reply([text("made it")]),
    )

    code, result, err = run_json(
        capsys, "--sandbox", "docker", "--image", "neo-sandbox:local", "--repo", str(repo), "go"
    )

    assert code == 0, err
    assert result["result"] == "made it"
    assert (repo / "made.txt").read_text() == "made\n"
    seen = tool_result_text(fake_anthropic, 1)
    assert seen.startswith("neo\n/workspace\n")
    assert env["ANTHROPIC_API_KEY"] not in seen
    assert "ANTHROPIC" not in seen
    client = docker.from_env()
    try:
        left = client.containers.list(
            all=True, filters={"label": f"neo.job={result['session_id']}"}
        )
    finally:
        client.close()
    assert left == []
    # Nothing to install in this tree: setup had nothing to run.
    assert result["setup"] == {
        "mode": "auto",
        "steps": [],
        "notes": [],
        "reused_from": None,
        "kept": False,
    }


def test_docker_sandbox_setup_none_runs_none(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (repo / "requirements.txt").write_text("calc-never-installed==1\n")
    fake_anthropic.script(Reply([text("done")]))

    code, result, err = run_json(
        capsys, "--sandbox", "docker", "--setup", "none", "--repo", str(repo), "go"
    )

    assert code == 0, err
    assert result["setup"]["mode"] == "off"
    assert result["setup"]["steps"] == []
    system = fake_anthropic.requests[0].body["system"][-1]["text"]
    assert "Setup: off" in system


@pytest.fixture
def full_home(tmp_path: Path) -> Iterator[Path]:
    """A NEO_HOME on a 64 KiB tmpfs filled to the last byte: a full disk, for real."""
    with small_disk(tmp_path / "full-home") as home:
        fill(home)
        yield home


def test_a_full_disk_fails_the_run_with_exit_1_and_one_line(
    fake_anthropic: FakeAnthropicAPI, env: dict[str, str], repo: Path, full_home: Path
) -> None:
    fake_anthropic.script(Reply([text("never asked")]))
    done = subprocess.run(
        [str(NEO), "run", "--output-format", "json", "--repo", str(repo), "go"],
        env=subprocess_env({**env, "NEO_HOME": str(full_home)}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    # Not 2: nothing about the usage was wrong; the machine failed the run.
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["is_error"] is True
    assert result["error"]["type"] == "session_error"
    assert result["error"]["message"].endswith(": No space left on device")
    assert "\n" not in result["error"]["message"]
    assert fake_anthropic.requests == []  # a turn starts from a saved transcript


# The keys a run against a local or OpenRouter server must not fall back on.
NO_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def test_chat_completions_against_a_local_server_from_the_console_script(
    home: Path, repo: Path
) -> None:
    # A local OpenAI-compatible server needs no key: none is set.
    with FakeChatCompletions(api_key=None) as server:
        server.models = [ModelInfo("qwen3-coder", max_model_len=65536)]
        server.script(
            ChatReply(tool_calls=[call("call_1", "read_file", {"path": "greeting.txt"})]),
            lambda body: ChatReply(text=f"It says: {body['messages'][-1]['content']}"),
        )
        env = console_env(home, {"OPENAI_BASE_URL": server.base_url}, unset=NO_KEYS)
        argv = ["run", "--output-format", "json", "--provider", "chat-completions"]
        done = neo(env, *argv, "--model", "qwen3-coder", "--repo", str(repo), "read greeting.txt")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["is_error"] is False
    assert "hello world" in result["result"]
    assert result["num_turns"] == 2
    assert result["usage"]["input_tokens"] > 0
    assert [r.path for r in server.requests] == [
        "/v1/models",
        "/api/show",
        "/v1/chat/completions",
        "/v1/chat/completions",
    ]


def test_openrouter_from_the_console_script_reports_the_billed_cost(home: Path, repo: Path) -> None:
    with FakeChatCompletions(api_key="or-key-0000") as server:
        server.script(
            ChatReply(
                tool_calls=[call("call_1", "read_file", {"path": "greeting.txt"})], cost=0.01
            ),
            lambda body: ChatReply(text=f"It says: {body['messages'][-1]['content']}", cost=0.002),
        )
        router = {"OPENROUTER_API_KEY": "or-key-0000", "OPENROUTER_BASE_URL": server.base_url}
        env = console_env(home, router, unset=NO_KEYS)
        argv = ["run", "--output-format", "json", "--provider", "openrouter"]
        done = neo(env, *argv, "--repo", str(repo), "read greeting.txt")

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "hello world" in result["result"]
    # What OpenRouter billed, not a published price.
    assert result["cost_usd"] == 0.012
    first = server.completions[0]
    assert first.body["model"] == "anthropic/claude-sonnet-5.5"
    assert first.headers["x-title"] == "Neo"


def test_chat_completions_refuses_a_small_local_model_in_one_line(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeChatCompletions(api_key=None) as server:
        server.ollama["llama3.2"] = OllamaModel(num_ctx=2048)
        monkeypatch.setenv("NEO_HOME", str(home))
        base_url = server.base_url
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)

        code = main(
            [
                "run",
                "--provider",
                "chat-completions",
                "--model",
                "llama3.2",
                "--repo",
                str(repo),
                "go",
            ]
        )

    err = capsys.readouterr().err
    # Refused before the run, as the configuration error it is.
    assert code == 2
    assert err.strip().splitlines() == [
        f"neo: error: llama3.2 at {base_url} has a 2,048-token context window; Neo needs "
        "at least 16,384: set num_ctx (PARAMETER num_ctx 32768 in a Modelfile, or "
        "OLLAMA_CONTEXT_LENGTH)"
    ]
    assert server.completions == []
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_openai_gpt5_edits_with_apply_patch_end_to_end(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: greeting.txt\n@@\n-hello world\n+hello patch\n"
        "*** End Patch\n"
    )
    with FakeOpenAIResponses() as server:
        server.script(
            OpenAIReply([custom_tool_call("call_1", "apply_patch", patch)]),
            OpenAIReply([message("Patched.")]),
        )
        monkeypatch.setenv("NEO_HOME", str(home))
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        argv = ["run", "--output-format", "json", "--provider", "openai", "--model", "gpt-5"]
        code = main([*argv, "--repo", str(repo), "patch greeting.txt"])

    out = capsys.readouterr().out
    assert code == 0
    result = json.loads(out.strip().splitlines()[-1])
    assert result["is_error"] is False
    assert (repo / "greeting.txt").read_text() == "hello patch\n"
    offered = {tool["name"]: tool["type"] for tool in server.requests[0].body["tools"]}
    assert offered["apply_patch"] == "custom"
    assert offered["shell"] == "function"
    assert "edit_file" not in offered
    # The prompt speaks of its family's tools: the patch and argv lists.
    assert "\n\n# Your tools\n\n- Edit with apply_patch" in server.requests[0].body["instructions"]
    (item,) = [
        i for i in server.requests[1].body["input"] if i["type"] == "custom_tool_call_output"
    ]
    assert item["output"] == "applied the patch:\nM greeting.txt"


def test_a_skill_named_in_the_prompt_is_added_and_no_skill_leaves_one_out(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Reply([text("done")]), Reply([text("done")]))

    code, result, err = run_json(capsys, "--repo", str(repo), "$fix-ci and $review-pull-request")
    again, _, _ = run_json(capsys, "--repo", str(repo), "--no-skill", "fix-ci", "$fix-ci please")

    assert (code, again) == (0, 0), err
    first = fake_anthropic.requests[0].body["messages"][0]["content"][0]["text"]
    assert first.startswith("$fix-ci and $review-pull-request\n\n")
    assert '<skill name="fix-ci">\n# Fixing a failing CI run' in first
    assert '<skill name="review-pull-request">' in first
    meta = SessionStore(Path(env["NEO_HOME"])).load(result["session_id"]).meta
    assert meta.skills == ("fix-ci", "review-pull-request")
    second = fake_anthropic.requests[1].body
    assert second["messages"][0]["content"][0]["text"] == "$fix-ci please"
    system = "".join(block["text"] for block in second["system"])
    assert "- review-pull-request — " in system
    assert "fix-ci" not in system


def test_a_subcommand_loads_only_its_own_module() -> None:
    # `neo run` used to import the webhook server, the Action and the
    # PostgreSQL queue's driver with every other command's module.
    heavy = ("bot.service", "bot.action", "bot.cli.serve", "bot.cli.worker", "psycopg")
    parse = "from bot.cli.main import build_parser\nbuild_parser('run').parse_args(['run', 'hi'])"

    assert loaded_by(parse, heavy) == []


def test_every_subcommand_is_listed_and_parses() -> None:
    from bot.cli.main import COMMANDS, build_parser

    parser = build_parser()
    help_text = parser.format_help()
    for name in COMMANDS:
        assert name in help_text
        # The one a command line names is built in full, as `neo NAME --help` shows it.
        with pytest.raises(SystemExit) as ended:
            build_parser(name).parse_args([name, "--help"])
        assert ended.value.code == 0
