"""Hostile configuration: each bad value is one line naming the setting, never a traceback.

Three tables, each a list of `pytest.param(..., id="readable-id")` rows:

- `HOSTILE_YAML`: a `.github/neo.yml` text (or bytes) and the field the one
  RepoConfigError must name (None: the file as a whole), with a word of the
  problem it must say. Add a row for any document that should be refused.
- `BAD_IMAGES`: an image reference Docker's grammar refuses and what the
  error must say; every row is tried in every place an image is named
  (`--image`, `sandbox_image`, `NEO_SANDBOX_IMAGE`, the job's sandbox).
- `BAD_FLAGS`: `neo run` arguments that must exit 2 with one line naming
  the flag.
- `BAD_HANDLES` and `GOOD_HANDLES`: a handle (what people type to ask Neo)
  that every place one is set must refuse (`NEO_HANDLE`, the triage rules,
  `neo action`'s `trigger_phrase`, exit 2 with one line), or accept
  alike; `tests/hostile/test_service.py` starts `neo serve` and `neo worker`
  with each bad one.

The `neo` rows of a table run the installed console script as a real process
where `REAL` names them (a few per command and layer: what only a process
shows), and the others through the same `bot.cli.main.main` in this process
(`tests/hostile/neo_cli.py`); both are checked alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from subprocess import CompletedProcess
from typing import Protocol

import pytest

from bot.action.inputs import input_variable, read_inputs
from bot.config import RepoConfigError, parse_repo_config
from bot.config.settings import load_settings
from bot.intake.triggers import Rules
from runner.errors import ConfigError
from runner.sandbox.factory import SandboxChoice, open_sandbox
from tests.neo_cli import neo_in_process, neo_process

# The rows, by test id, run as a real `neo` process.
REAL = frozenset(
    {"spaces-and-bang", "timeout-overflows", "max-turns-5000-digits", "no-at", "not-ascii"}
)

_BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)

HOSTILE_YAML = [
    pytest.param("max_turns: 1" + "0" * 5000, "max_turns", "too large", id="int-5000-digits"),
    pytest.param("time_limit: " + "9" * 4400, "time_limit", "too large", id="int-4401-digits"),
    pytest.param("setup: [1" + "0" * 5000 + "]", "setup[0]", "too large", id="int-in-a-list"),
    pytest.param(
        "schedules:\n  - cron: 1" + "0" * 5000 + "\n    prompt: go\n",
        "schedules[0].cron",
        "too large",
        id="int-in-a-schedule",
    ),
    pytest.param("model: 1" + "0" * 5000, "model", "too large", id="int-where-text-goes"),
    pytest.param("max_turns: 1e400", "max_turns", "valid integer", id="float-overflows-to-inf"),
    pytest.param("max_turns: .inf", "max_turns", "valid integer", id="inf"),
    pytest.param("time_limit: -.inf", "time_limit", "valid integer", id="minus-inf"),
    pytest.param("max_turns: .nan", "max_turns", "valid integer", id="nan"),
    pytest.param("model: .nan", "model", "valid string", id="nan-where-text-goes"),
    pytest.param("model: " + "[" * 5000 + "]" * 5000, None, "nested", id="deep-flow-lists"),
    pytest.param("a: " + "{a: " * 3000 + "1" + "}" * 3000, None, "nested", id="deep-flow-maps"),
    pytest.param(
        "".join("  " * depth + "- \n" for depth in range(200)), None, "nested", id="deep-block"
    ),
    pytest.param("[" * 60_000, None, "nested", id="deep-unclosed"),
    pytest.param(_BILLION_LAUGHS, None, "expands to more than", id="billion-laughs"),
    pytest.param("a: &a [*a]", None, "refers to itself", id="recursive-alias"),
    pytest.param("model: *nowhere", None, "no anchor", id="alias-without-anchor"),
    pytest.param("? [a, b]\n: 1\n", None, "unhashable key", id="list-as-key"),
    pytest.param("? {a: 1}\n: 1\n", None, "unhashable key", id="map-as-key"),
    pytest.param("1: one", "1", "unknown field", id="int-key"),
    pytest.param("1.5: x", "1.5", "unknown field", id="float-key"),
    pytest.param("~: x", "null", "unknown field", id="null-key"),
    pytest.param("on: x", "True", "booleans in YAML", id="bool-key"),
    pytest.param("2001-12-14: x", "2001-12-14", "unknown field", id="date-key"),
    pytest.param("2001-02-30: x", "2001-02-30", "unknown field", id="impossible-date-key"),
    pytest.param("!!binary aGVsbG8=: x", "!!binary", "unknown field", id="binary-key"),
    pytest.param("model: !!binary aGVsbG8=", "model", "binary", id="binary"),
    pytest.param("model: !!binary '!!!'", "model", "binary", id="binary-undecodable"),
    pytest.param("setup: !!set {a: null, b: null}", "setup", "set", id="set-loses-order"),
    pytest.param("model: 2001-12-14", "model", "valid string", id="timestamp"),
    pytest.param("model: 2001-02-30", "model", "not a valid date", id="impossible-date"),
    pytest.param(
        "model: 2001-12-14t21:59:43.10-99:00", "model", "not a valid date", id="impossible-offset"
    ),
    pytest.param("model: !!python/object:os.system x", None, "constructor", id="python-tag"),
    pytest.param("model: a\nmodel: b\n", None, "duplicate key 'model'", id="duplicate-key"),
    pytest.param("model: a\n'model': b\n", None, "duplicate key", id="duplicate-quoted-key"),
    pytest.param("model: a\n---\nmodel: b\n", None, "single document", id="two-documents"),
    pytest.param("# " + "x" * 10_000_000, None, "larger than 64 KiB", id="10-MB-comment"),
    pytest.param(b"model: \xff\xfe", None, "not valid UTF-8", id="non-utf8-bytes"),
    pytest.param("model: x".encode("utf-16"), None, "not valid UTF-8", id="utf16-with-bom"),
    pytest.param(b"\xef\xbb\xbfmax_turns: lots", "max_turns", "valid integer", id="bom-bytes"),
    pytest.param("\ufeffmax_turns: lots", "max_turns", "valid integer", id="bom-text"),
    pytest.param('model: "\\ud800"', "model", "unicode", id="lone-surrogate-escape"),
    pytest.param("- a\n- b\n", None, "top level must be a mapping", id="list-document"),
]


@pytest.mark.parametrize(("text", "field", "problem"), HOSTILE_YAML)
def test_hostile_yaml_is_one_config_error_naming_the_field(
    text: str | bytes, field: str | None, problem: str
) -> None:
    with pytest.raises(RepoConfigError) as raised:
        parse_repo_config(text)

    message = str(raised.value)
    assert "\n" not in message
    assert len(message) < 300
    assert message.startswith(".github/neo.yml: ")
    assert raised.value.field == field
    if field is not None:
        assert field in message
    assert problem in message


BAD_IMAGES = [
    pytest.param("no such image!", "must not contain spaces", id="spaces-and-bang"),
    pytest.param("Neo-Sandbox:Local", "must be lowercase", id="uppercase-repository"),
    pytest.param("neo-sandbox:", "the tag must be", id="empty-tag"),
    pytest.param("neo-sandbox:.local", "the tag must be", id="tag-starts-with-dot"),
    pytest.param("neo-sandbox:" + "t" * 129, "the tag must be", id="tag-129-chars"),
    pytest.param("neo-sandbox@sha256:abc", "the digest must be", id="short-digest"),
    pytest.param("registry:port/neo", "the registry must be", id="non-numeric-port"),
    pytest.param("neo__sandbox___x", "repository name must be", id="triple-underscore"),
    pytest.param("x" * 300, "longer than 255", id="name-300-chars"),
    pytest.param("neo-sändbox", "printable ASCII", id="non-ascii"),
]


class Neo(Protocol):
    def __call__(self, *argv: str, env: dict[str, str]) -> CompletedProcess[str]: ...


@pytest.fixture
def neo(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> Neo:
    """`neo` on this process's environment and `env`: a real process for the rows of REAL."""
    row = getattr(request.node, "callspec", None)
    real = row is not None and row.id in REAL

    def run(*argv: str, env: dict[str, str]) -> CompletedProcess[str]:
        values = {**os.environ, **env}
        if real:
            return neo_process(argv, values, cwd=tmp_path)
        return neo_in_process(argv, values, cwd=tmp_path, monkeypatch=monkeypatch, capfd=capfd)

    return run


def _one_error_line(done: CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    return lines[0]


@pytest.mark.parametrize(("image", "problem"), BAD_IMAGES)
def test_a_bad_image_flag_exits_2_naming_it(
    image: str, problem: str, tmp_path: Path, neo: Neo
) -> None:
    done = neo(
        "run",
        "--sandbox",
        "docker",
        f"--image={image}",
        "go",
        env={"NEO_HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": "sk-unused"},
    )

    assert done.returncode == 2, done.stderr
    line = _one_error_line(done)
    assert "argument --image: " in line
    assert "is not a valid image reference" in line
    assert problem in line


def test_a_valid_image_missing_on_the_host_exits_2_naming_the_flag(
    tmp_path: Path, neo: Neo
) -> None:
    # In this process: a refusal found once the run began ends a real process
    # alike (test_cli.py's run-chatgpt-credentials-a-directory), and loading
    # the runner and the SDKs again in one cost this test most of its time.
    done = neo(
        "run",
        "--sandbox",
        "docker",
        "--image",
        "neo-no-such-image:never",
        "go",
        env={"NEO_HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": "sk-unused"},
    )

    assert done.returncode == 2, done.stderr
    assert _one_error_line(done) == (
        "neo: error: sandbox image neo-no-such-image:never not found locally "
        "(build it with scripts/build-images, or choose another with --image)"
    )


@pytest.mark.parametrize(("image", "problem"), BAD_IMAGES)
def test_a_bad_sandbox_image_in_the_file_names_the_setting(image: str, problem: str) -> None:
    text = f"sandbox_image: '{image}'\n"
    if len(image) > 200:  # the setting's own length limit speaks first
        problem = "at most 200 characters"

    with pytest.raises(RepoConfigError) as raised:
        parse_repo_config(text)

    assert raised.value.field == "sandbox_image"
    assert str(raised.value).startswith(".github/neo.yml: sandbox_image: ")
    assert problem in str(raised.value)


@pytest.mark.parametrize(("image", "problem"), BAD_IMAGES)
def test_a_bad_neo_sandbox_image_stops_the_worker_naming_it(
    image: str, problem: str, tmp_path: Path, neo: Neo
) -> None:
    env = {
        "NEO_GITHUB_APP_ID": "1",
        "NEO_GITHUB_PRIVATE_KEY": "not-read-before-the-settings-pass",
        "NEO_WEBHOOK_SECRET": "s3cret-webhook",
        "NEO_DATA_DIR": str(tmp_path / "data"),
        "NEO_SANDBOX_IMAGE": image,
    }
    settings = {"NEO_SANDBOX": "local", "NEO_ALLOW_LOCAL_SANDBOX": "1", **env}

    with pytest.raises(ConfigError, match=r"^NEO_SANDBOX_IMAGE: ") as raised:
        load_settings(settings)
    assert problem in str(raised.value)

    done = neo("worker", env=env)
    assert done.returncode == 2, done.stderr
    line = _one_error_line(done)
    assert line.startswith("neo: error: NEO_SANDBOX_IMAGE: ")
    assert problem in line
    assert "s3cret-webhook" not in done.stderr
    assert str(tmp_path) not in done.stderr


@pytest.mark.parametrize(("image", "problem"), BAD_IMAGES)
async def test_a_bad_image_reaching_a_jobs_sandbox_names_the_settings(
    image: str, problem: str, tmp_path: Path
) -> None:
    # What `neo action` passes on from NEO_SANDBOX_IMAGE: checked before the engine.
    with pytest.raises(ConfigError) as raised:
        async with open_sandbox(SandboxChoice("docker", image), tmp_path, job_id="job-1"):
            pass

    message = str(raised.value)
    assert message.startswith("sandbox_image in .github/neo.yml or NEO_SANDBOX_IMAGE: ")
    assert problem in message


BAD_FLAGS = [
    pytest.param(["--timeout", "inf"], "--timeout", "finite", id="timeout-inf"),
    pytest.param(["--timeout=-inf"], "--timeout", "finite", id="timeout-minus-inf"),
    pytest.param(["--timeout", "nan"], "--timeout", "finite", id="timeout-nan"),
    pytest.param(["--timeout", "1e999"], "--timeout", "finite", id="timeout-overflows"),
    pytest.param(["--timeout=-1"], "--timeout", "more than 0", id="timeout-negative"),
    pytest.param(["--timeout", "0"], "--timeout", "more than 0", id="timeout-zero"),
    pytest.param(["--timeout", "soon"], "--timeout", "number of seconds", id="timeout-word"),
    pytest.param(["--max-turns", "inf"], "--max-turns", "whole number", id="max-turns-inf"),
    pytest.param(["--max-turns", "nan"], "--max-turns", "whole number", id="max-turns-nan"),
    pytest.param(["--max-turns=-1"], "--max-turns", "at least 1", id="max-turns-negative"),
    pytest.param(["--max-turns", "0"], "--max-turns", "at least 1", id="max-turns-zero"),
    pytest.param(["--max-turns", "2.5"], "--max-turns", "whole number", id="max-turns-fraction"),
    pytest.param(
        ["--max-turns", "1" + "0" * 5000], "--max-turns", "whole number", id="max-turns-5000-digits"
    ),
]


@pytest.mark.parametrize(("argv", "flag", "problem"), BAD_FLAGS)
def test_a_bad_numeric_flag_exits_2_with_one_short_line(
    argv: list[str], flag: str, problem: str, tmp_path: Path, neo: Neo
) -> None:
    done = neo(
        "run",
        *argv,
        "go",
        env={"NEO_HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": "sk-unused"},
    )

    assert done.returncode == 2, done.stderr
    line = _one_error_line(done)
    assert f"argument {flag}: " in line
    assert problem in line
    assert len(line) < 200
    assert not (tmp_path / "home").exists()  # refused before anything ran


# --- handles ---------------------------------------------------------------------

# (id, handle): refused everywhere.
BAD_HANDLES = [
    ("no-at", "neo"),
    ("only-an-at", "@"),
    ("two-ats", "@@neo"),
    ("with-a-dot", "@neo.bot"),
    ("with-a-space", "@neo bot"),
    ("ending-in-a-hyphen", "@neo-"),
    ("starting-with-a-hyphen", "@-neo"),
    ("double-hyphen", "@neo--bot"),
    ("ending-in-an-underscore", "@neo_"),
    ("not-ascii", "@néo"),
    ("bot-suffix", "@neo[bot]"),
    ("40-characters", "@" + "n" * 40),
    ("a-team", "@acme/neo"),
]
GOOD_HANDLES = ["@neo", "@Neo-Bot", "@mona_octo", "@n", "@" + "n" * 39, "@neo2-x_y"]
_SERVICE_ENV = {"NEO_GITHUB_APP_ID": "1", "NEO_WEBHOOK_SECRET": "s", "NEO_GITHUB_PRIVATE_KEY": "k"}


@pytest.mark.parametrize(
    "handle", [handle for _, handle in BAD_HANDLES], ids=[i for i, _ in BAD_HANDLES]
)
def test_a_bad_handle_is_refused_alike_wherever_it_is_set(handle: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({**_SERVICE_ENV, "NEO_HANDLE": handle})
    assert str(raised.value).startswith("NEO_HANDLE: must be @ followed by a GitHub login")
    with pytest.raises(ValueError, match=r"^handle must be @ followed by a GitHub login"):
        Rules(app_bot_login="neo[bot]", handle=handle)
    with pytest.raises(ConfigError, match=r"^input trigger_phrase: must be @ followed by a GitHub"):
        read_inputs({input_variable("trigger_phrase"): handle, input_variable("github_token"): "t"})


@pytest.mark.parametrize("handle", GOOD_HANDLES)
def test_a_good_handle_is_accepted_alike_wherever_it_is_set(handle: str) -> None:
    assert load_settings({**_SERVICE_ENV, "NEO_HANDLE": handle}).handle == handle
    assert Rules(app_bot_login="neo[bot]", handle=handle).handle == handle
    inputs = {input_variable("trigger_phrase"): handle, input_variable("github_token"): "t"}
    assert read_inputs(inputs).trigger_phrase == handle


@pytest.mark.parametrize(
    "handle", [handle for _, handle in BAD_HANDLES], ids=[i for i, _ in BAD_HANDLES]
)
def test_neo_action_with_a_bad_trigger_phrase_exits_2_with_one_line(
    handle: str, tmp_path: Path, neo: Neo
) -> None:
    event = tmp_path / "event.json"
    event.write_text("{}")
    done = neo(
        "action",
        env={
            "GITHUB_EVENT_NAME": "issue_comment",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": "octo/hello",
            "GITHUB_RUN_ID": "7",
            "GITHUB_API_URL": "http://127.0.0.1:9",  # never reached
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            input_variable("trigger_phrase"): handle,
            input_variable("github_token"): "ghs_unused",
        },
    )

    assert done.returncode == 2, done.stderr
    line = _one_error_line(done)
    assert line.startswith("neo: error: input trigger_phrase: must be @ followed by a GitHub login")
