"""`neo run`'s network: --network, --network-methods, NEO_NETWORK, and what was blocked.

The docker case runs the real proxy against the servers of the network
tests' own Docker networks (tests/runner/network/conftest.py).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli.main import main
from bot.cli.run_output import make_output
from runner.headless import RunResult
from runner.llm.types import Usage
from runner.network import Blocked
from tests.fakes import FakeAnthropicAPI, Reply, text, tool_use
from tests.runner.network.conftest import Servers, docker_client, egress_image, servers

__all__ = ["docker_client", "egress_image", "servers"]

LOCAL = (
    "neo: the local sandbox cannot enforce a network policy: its commands have this"
    " machine's network (--sandbox docker can)"
)


@pytest.fixture
def env(
    fake_anthropic: FakeAnthropicAPI, home: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    values = {**fake_anthropic.env, "NEO_HOME": str(home)}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("NEO_NETWORK", raising=False)
    return values


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    status = main(["run", "--output-format", "json", *argv])
    captured = capsys.readouterr()
    return status, json.loads(captured.out.strip().splitlines()[-1]), captured.err


def tool_result_text(fake: FakeAnthropicAPI, request: int) -> str:
    last = fake.requests[request].body["messages"][-1]["content"]
    result = next(b for b in last if b["type"] == "tool_result")
    return "".join(part["text"] for part in result.get("content", []))


def test_the_docker_run_reaches_what_it_is_allowed_within_neo_network_and_reports_the_rest(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    servers: Servers,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO_EGRESS_NETWORK", ",".join(servers.networks))
    monkeypatch.setenv("NEO_NETWORK", "web.test,private.test")
    fetch = "curl -sS http://web.test/allowed; curl -sS -X POST http://private.test/form"
    other = "curl -s -o /dev/null -w '%{http_code}' http://other.test/"
    fake_anthropic.script(
        Reply([tool_use("toolu_1", "bash", {"command": fetch})], "tool_use"),
        Reply([tool_use("toolu_2", "bash", {"command": other})], "tool_use"),
        Reply([text("done")]),
    )

    code, result, err = run_json(
        capsys,
        *("--sandbox", "docker", "--repo", str(repo)),
        *("--network", "web.test,other.test,private.test", "--network-methods", "all"),
        "fetch",
    )

    assert code == 0, err
    # NEO_NETWORK lists private.test, so its private address may be reached.
    assert tool_result_text(fake_anthropic, 1) == (
        "web GET /allowed\nprivate POST /form\nexit code: 0"
    )
    assert tool_result_text(fake_anthropic, 2).startswith("403")
    assert result["network"] == {
        "blocked": [{"host": "other.test", "command": other, "reason": "host"}]
    }


def test_a_docker_run_without_a_refusal_has_an_empty_list_and_a_local_run_none(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.script(Reply([text("nothing to do")]), Reply([text("nothing to do")]))

    code, result, _ = run_json(
        capsys, "--sandbox", "docker", "--network", "off", "--repo", str(repo), "go"
    )
    assert code == 0
    assert result["network"] == {"blocked": []}

    code, result, _ = run_json(capsys, "--repo", str(repo), "go")
    assert code == 0
    assert result["network"] is None


@pytest.mark.parametrize(
    "argv",
    [["--network", "web.test"], ["--network-methods", "all"], ["--network", "off"]],
)
def test_the_local_sandbox_says_in_one_line_it_cannot_enforce_a_policy(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    fake_anthropic.script(Reply([text("ok")]))

    code, _, err = run_json(capsys, *argv, "--repo", str(repo), "go")

    assert code == 0
    assert err.strip().splitlines() == [LOCAL]


def test_neo_network_with_the_local_sandbox_says_so_too_once(
    fake_anthropic: FakeAnthropicAPI,
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO_NETWORK", "python")
    fake_anthropic.script(Reply([text("ok")]))

    code, _, err = run_json(capsys, "--network", "python", "--repo", str(repo), "go")

    assert code == 0
    assert err.strip().splitlines() == [LOCAL]


@pytest.mark.parametrize(
    ("variable", "argv", "message"),
    [
        (None, ["--network", "pyhton"], "neo: error: --network: unknown ecosystem 'pyhton'"),
        (
            None,
            ["--network", "https://x.example"],
            "neo: error: --network: 'https://x.example' is a URL",
        ),
        (None, ["--network", ","], "neo: error: --network: an empty list (write `off`"),
        ("127.0.0.1", [], "neo: error: NEO_NETWORK: '127.0.0.1' is never reachable"),
    ],
)
def test_a_bad_network_is_one_line_and_exit_2(
    env: dict[str, str],
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str | None,
    argv: list[str],
    message: str,
) -> None:
    if variable is not None:
        monkeypatch.setenv("NEO_NETWORK", variable)

    code, result, err = run_json(capsys, "--sandbox", "docker", *argv, "--repo", str(repo), "go")

    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(message)
    assert result["error"]["type"] == "config_error"


def test_network_methods_is_read_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--network-methods", "write", "go"])

    assert exited.value.code == 2
    assert "argument --network-methods: invalid choice: 'write'" in capsys.readouterr().err


def test_text_output_names_each_refused_host_and_its_command() -> None:
    out, err = io.StringIO(), io.StringIO()
    result = RunResult(
        is_error=False,
        result="done",
        error_type=None,
        error_message=None,
        stop_reason="end_turn",
        num_turns=1,
        usage=Usage(),
        cost_usd=None,
        duration_ms=5,
        session_id="s",
        blocked=(
            Blocked("pypi.org", "pip install left-pad", "host", "agent"),
            Blocked("web.test", "curl -X POST http://web.test/", "method", "agent"),
        ),
    )

    make_output("text", stdout=out, stderr=err).finish(result)

    lines = err.getvalue().splitlines()
    assert lines[:3] == [
        "⊘ the proxy refused pypi.org · pip install left-pad",
        "⊘ the proxy refused web.test (method) · curl -X POST http://web.test/",
        "  allow a host with --network (and NEO_NETWORK)",
    ]
    assert out.getvalue() == "done\n"
