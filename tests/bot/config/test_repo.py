from __future__ import annotations

import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from bot.config.repo import (
    CONFIG_ERROR_MARKER,
    EXAMPLE_YAML,
    MAX_CONFIG_BYTES,
    RepoConfig,
    RepoConfigError,
    Schedule,
    parse_cron,
    parse_repo_config,
    reference_markdown,
    render_config_error,
)
from bot.intake.schedules import Cron
from runner.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "docs" / "configuration.md"

FULL = """\
provider: openrouter
model: anthropic/claude-sonnet-4.5
max_turns: 500
time_limit: 240
setup:
  - uv sync
  - npm ci
setup_network: true
sandbox_image: ghcr.io/acme/sandbox:1.2
trigger_label: ai-help
allowed_users: [admin, maintain]
allowed_bots: ["renovate[bot]", dependabot-preview]
branch_prefix: bots/neo-
draft: false
allow_workflow_edits: true
schedules:
  - cron: "*/15 0-6,22-23 1,15 JAN-MAR,dec mon-fri"
    prompt: Fix the lint.
  - name: deps
    cron: "0 6 * * 7"
    prompt: |
      Update the dependencies.
    branch: neo/deps
"""


def error_of(text: str | bytes) -> RepoConfigError:
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config(text)
    return caught.value


# --- valid files ------------------------------------------------------------


def test_a_full_file_is_read() -> None:
    config = parse_repo_config(FULL)

    assert config.provider == "openrouter"
    assert config.model == "anthropic/claude-sonnet-4.5"
    assert (config.max_turns, config.time_limit) == (500, 240)
    assert config.setup == ("uv sync", "npm ci")
    assert config.setup_network is True
    assert config.sandbox_image == "ghcr.io/acme/sandbox:1.2"
    assert config.trigger_label == "ai-help"
    assert config.allowed_users == ("admin", "maintain")
    assert config.allowed_bots == ("renovate[bot]", "dependabot-preview")
    assert config.branch_prefix == "bots/neo-"
    assert config.draft is False
    assert config.allow_workflow_edits is True
    first, second = config.schedules
    assert first == Schedule(cron="*/15 0-6,22-23 1,15 JAN-MAR,dec mon-fri", prompt="Fix the lint.")
    assert (second.name, second.branch, second.prompt) == (
        "deps",
        "neo/deps",
        "Update the dependencies.\n",
    )


@pytest.mark.parametrize(
    "text", ["", "\n\n", "# nothing yet\n", "~\n", "---\n", b"", b"\xef\xbb\xbf"]
)
def test_an_empty_file_means_every_default(text: str | bytes) -> None:
    config = parse_repo_config(text)

    assert config == RepoConfig()
    assert config.provider == "anthropic"
    assert config.model is None
    assert (config.max_turns, config.time_limit) == (100, 30)
    assert config.setup == ()
    assert config.setup_network is False
    assert config.sandbox_image is None
    assert config.trigger_label == "neo"
    assert config.allowed_users == ("admin", "maintain", "write")
    assert config.allowed_bots == ()
    assert config.branch_prefix == "neo/"
    assert config.draft is True
    assert config.allow_workflow_edits is False
    assert config.schedules == ()


def test_bytes_are_utf8_and_may_start_with_a_bom() -> None:
    assert parse_repo_config("model: ünïcode".encode()).model == "ünïcode"
    assert parse_repo_config(b"\xef\xbb\xbfdraft: false").draft is False


def test_anchors_and_merge_keys_work() -> None:
    text = """\
schedules:
  - &base {cron: "0 1 * * *", prompt: nightly, branch: neo/nightly}
  - <<: *base
    cron: "0 2 * * SAT"
    branch: neo/weekly
"""
    nightly, weekly = parse_repo_config(text).schedules

    assert (weekly.prompt, weekly.cron, weekly.branch) == ("nightly", "0 2 * * SAT", "neo/weekly")
    assert nightly.branch == "neo/nightly"


def test_the_config_is_frozen() -> None:
    config = parse_repo_config("max_turns: 7")

    with pytest.raises(ValueError, match="frozen"):
        config.max_turns = 8  # type: ignore[misc]
    assert hash(config) == hash(parse_repo_config("max_turns: 7"))


def test_the_error_is_a_config_error_with_field_and_problem() -> None:
    error = error_of("max_turns: 501")

    assert isinstance(error, ConfigError)
    assert error.kind == "config_error"
    assert str(error) == ".github/neo.yml: max_turns: Input should be less than or equal to 500"
    assert (error.source, error.field, error.line) == (".github/neo.yml", "max_turns", None)
    assert error.problem == "Input should be less than or equal to 500"


def test_the_source_names_the_file() -> None:
    with pytest.raises(RepoConfigError, match=r"^acme/\.github:\.github/neo\.yml: draft:"):
        parse_repo_config("draft: maybe", source="acme/.github:.github/neo.yml")


# --- invalid files: one line each --------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "field"),
    [
        # Unknown fields, with a suggestion.
        ("max_turn: 5", "unknown field 'max_turn' (did you mean 'max_turns'?)", "max_turn"),
        ("colour: blue", "unknown field 'colour'", "colour"),
        (
            "schedules: [{cron: '0 0 * * *', promt: x}]",
            "unknown field 'schedules[0].promt' (did you mean 'prompt'?)",
            "schedules[0].promt",
        ),
        ("on: true", "unknown field True (unquoted yes, no, on, off are booleans in YAML)", "True"),
        # Wrong types: YAML already types values, so nothing is coerced.
        ("max_turns: '100'", "max_turns: Input should be a valid integer", "max_turns"),
        ("max_turns: 1.5", "max_turns: Input should be a valid integer", "max_turns"),
        ("max_turns: true", "max_turns: Input should be a valid integer", "max_turns"),
        ("draft: 1", "draft: Input should be a valid boolean", "draft"),
        ("setup_network: 'yes'", "setup_network: Input should be a valid boolean", "setup_network"),
        ("model: 4", "model: Input should be a valid string", "model"),
        ("setup: make test", "setup: Input should be a list", "setup"),
        ("setup: [make, 1]", "setup[1]: Input should be a valid string", "setup[1]"),
        ("schedules: {cron: x}", "schedules: Input should be a list", "schedules"),
        ("schedules: [nightly]", "schedules[0]: Input should be a mapping", "schedules[0]"),
        (
            "provider: gpt",
            "provider: Input should be 'anthropic', 'openai', 'chat-completions', 'openrouter' "
            "or 'google'",
            "provider",
        ),
        # Out of range or empty.
        ("max_turns: 0", "max_turns: Input should be greater than or equal to 1", "max_turns"),
        ("max_turns: 501", "max_turns: Input should be less than or equal to 500", "max_turns"),
        ("time_limit: 0", "time_limit: Input should be greater than or equal to 1", "time_limit"),
        ("time_limit: 241", "time_limit: Input should be less than or equal to 240", "time_limit"),
        ("model: ''", "model: String should have at least 1 character", "model"),
        ("setup: ['']", "setup[0]: String should have at least 1 character", "setup[0]"),
        ("trigger_label: ' '", "trigger_label: must not be blank", "trigger_label"),
        (
            "allowed_users: [admin, owner]",
            "allowed_users[1]: Input should be 'admin', 'maintain', 'write', 'triage' or 'read'",
            "allowed_users[1]",
        ),
        (
            "allowed_users: []",
            "allowed_users: List should have at least 1 item after validation, not 0",
            "allowed_users",
        ),
        (
            "allowed_bots: ['my bot']",
            "allowed_bots[0]: Input should be a GitHub login, e.g. renovate[bot]",
            "allowed_bots[0]",
        ),
        (
            "sandbox_image: '--privileged'",
            "sandbox_image: '--privileged' is not a valid image reference: must not start with '-'",
            "sandbox_image",
        ),
        (
            "schedules: [{cron: '0 0 * * *'}]",
            "schedules[0].prompt: Field required",
            "schedules[0].prompt",
        ),
        ("schedules: [{prompt: x}]", "schedules[0].cron: Field required", "schedules[0].cron"),
        (
            "schedules: [{cron: '0 0 * * *', prompt: '  '}]",
            "schedules[0].prompt: must not be blank",
            "schedules[0].prompt",
        ),
        (
            "schedules:\n"
            "  - {cron: '0 0 * * *', prompt: a, name: same}\n"
            "  - {cron: '0 1 * * *', prompt: b, name: same}\n",
            "schedules: the name 'same' is used by more than one schedule",
            "schedules",
        ),
        (
            "schedules: [" + ", ".join(["{cron: '0 0 * * *', prompt: x}"] * 21) + "]",
            "schedules: List should have at most 20 items after validation, not 21",
            "schedules",
        ),
    ],
)
def test_an_invalid_value_is_one_line_naming_the_field(text: str, message: str, field: str) -> None:
    error = error_of(text)

    assert str(error) == f".github/neo.yml: {message}"
    assert error.field == field
    assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("neo bot/", "must not contain space"),
        ("neo\t/", "must not contain '\\t'"),
        ("neo..x/", "must not contain '..'"),
        ("../", "must not contain '..'"),
        ("neo~/", "must not contain '~'"),
        ("neo^/", "must not contain '^'"),
        ("neo:/", "must not contain ':'"),
        ("neo?/", "must not contain '?'"),
        ("neo*/", "must not contain '*'"),
        ("neo[/", "must not contain '['"),
        ("neo\\\\/", "must not contain '\\\\'"),
        ("/neo/", "must not start with '/'"),
        ("-neo/", "must not start with '-'"),
        ("neo//", "must not contain '//'"),
        ("neo@{/", "must not contain '@{' or be '@'"),
        (".neo/", "no part between slashes may start with '.'"),
        ("neo/.x", "no part between slashes may start with '.'"),
        ("neo.lock/", "no part between slashes may end with '.lock'"),
    ],
)
def test_an_unsafe_branch_prefix_is_rejected(prefix: str, problem: str) -> None:
    error = error_of(f'branch_prefix: "{prefix}"')

    assert str(error) == f".github/neo.yml: branch_prefix: not a safe branch prefix: {problem}"
    assert error.field == "branch_prefix"


@pytest.mark.parametrize("prefix", ["neo/", "bots/neo-", "neo", "a.b/c_d+e/"])
def test_a_safe_branch_prefix_is_kept(prefix: str) -> None:
    assert parse_repo_config(f'branch_prefix: "{prefix}"').branch_prefix == prefix


def test_a_schedule_without_a_branch_gets_one_from_its_name_or_position() -> None:
    config = parse_repo_config(
        "branch_prefix: bots/\n"
        "schedules:\n"
        "  - {cron: '0 6 * * MON', prompt: a, name: 'Weekly deps: npm & pip!'}\n"
        "  - {cron: '0 7 * * MON', prompt: b}\n"
        "  - {cron: '0 8 * * MON', prompt: c, name: 'Mise à jour', branch: own/branch}\n"
        "  - {cron: '0 9 * * MON', prompt: d, name: '!!!'}\n"
        f"  - {{cron: '0 9 * * MON', prompt: e, name: '{'x' * 200}'}}\n"
    )

    assert [config.schedule_branch(i) for i in range(5)] == [
        "bots/schedule-weekly-deps-npm-pip",
        "bots/schedule-2",
        "own/branch",
        "bots/schedule-4",
        "bots/schedule-" + "x" * 60,
    ]


@pytest.mark.parametrize(
    ("schedules", "problem"),
    [
        (
            "[{cron: '0 6 * * *', prompt: a, name: Deps}, {cron: '0 7 * * *', prompt: b, "
            "name: deps!}]",
            "schedules 1 and 2 both work on branch 'neo/schedule-deps'; "
            "give one a branch or another name",
        ),
        (
            "[{cron: '0 6 * * *', prompt: a, branch: neo/schedule-2}, "
            "{cron: '0 7 * * *', prompt: b}]",
            "schedules 1 and 2 both work on branch 'neo/schedule-2'; "
            "give one a branch or another name",
        ),
        (
            "[{cron: '0 6 * * *', prompt: a, branch: x}, {cron: '0 7 * * *', prompt: b, "
            "branch: x}]",
            "schedules 1 and 2 both work on branch 'x'; give one a branch or another name",
        ),
    ],
)
def test_two_schedules_may_not_share_a_branch(schedules: str, problem: str) -> None:
    error = error_of(f"schedules: {schedules}")

    assert str(error) == f".github/neo.yml: schedules: {problem}"
    assert error.field == "schedules"


def test_a_bad_branch_prefix_is_reported_alone_with_schedules() -> None:
    error = error_of("branch_prefix: 'a b'\nschedules: [{cron: '0 6 * * *', prompt: a}]")

    assert error.field == "branch_prefix"


def test_a_schedule_branch_must_be_a_branch_name() -> None:
    error = error_of("schedules: [{cron: '0 0 * * *', prompt: x, branch: 'neo/deps/'}]")

    assert error.field == "schedules[0].branch"
    assert error.problem == "not a valid branch name: must not end with '/' or '.'"


# --- cron ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "problem"),
    [
        ("* * * *", "must have 5 fields (minute hour day-of-month month day-of-week), not 4"),
        ("0 0 * * * *", "must have 5 fields (minute hour day-of-month month day-of-week), not 6"),
        ("@daily", "must have 5 fields (minute hour day-of-month month day-of-week), not 1"),
        ("60 * * * *", "minute 60 is out of range 0-59"),
        ("* 24 * * *", "hour 24 is out of range 0-23"),
        ("* * 0 * *", "day of month 0 is out of range 1-31"),
        ("* * 32 * *", "day of month 32 is out of range 1-31"),
        ("* * * 13 *", "month 13 is out of range 1-12"),
        ("* * * * 8", "day of week 8 is out of range 0-7"),
        ("* * * FOO *", "'FOO' is not a valid month"),
        ("* * * * MON-FOO", "'FOO' is not a valid day of week"),
        ("MON * * * *", "'MON' is not a valid minute"),
        ("* * * JANUARY *", "'JANUARY' is not a valid month (expected *, n, a-b or a list)"),
        ("*/0 * * * *", "minute step 0 must be between 1 and 59"),
        ("*/60 * * * *", "minute step 60 must be between 1 and 59"),
        ("5/15 * * * *", "'5/15': a step needs a range or *, e.g. 5-59/n"),
        ("30-10 * * * *", "minute range '30-10' runs backwards"),
        ("* * * * FRI-MON", "day of week range 'FRI-MON' runs backwards"),
        ("1,,2 * * * *", "'' is not a valid minute (expected *, n, a-b or a list)"),
        ("-5 * * * *", "'-5' is not a valid minute (expected *, n, a-b or a list)"),
        ("* * L * *", "'L' is not a valid day of month (expected *, n, a-b or a list)"),
        ("* * * * 1#2", "'1#2' is not a valid day of week (expected *, n, a-b or a list)"),
        ("0 0 ? * *", "'?' is not a valid day of month (expected *, n, a-b or a list)"),
        ("0 0 30,31 2 *", "never fires: none of its months has any of its days"),
        ("0 0 31 4,6,9,11 *", "never fires: none of its months has any of its days"),
    ],
)
def test_a_bad_cron_expression_is_rejected(cron: str, problem: str) -> None:
    error = error_of(f"schedules: [{{cron: '{cron}', prompt: x}}]")

    assert str(error) == f".github/neo.yml: schedules[0].cron: {problem}"
    assert error.field == "schedules[0].cron"
    with pytest.raises(ValueError, match=r"^.+$"):
        parse_cron(cron)


def test_cron_fields_expand_to_their_values() -> None:
    spec = parse_cron("*/20 9-17/4 1,15 jan-mar,DEC MON-FRI")

    assert spec.minutes == {0, 20, 40}
    assert spec.hours == {9, 13, 17}
    assert spec.days == {1, 15}
    assert spec.months == {1, 2, 3, 12}
    assert spec.weekdays == {1, 2, 3, 4, 5}
    assert not spec.any_day
    assert not spec.any_weekday
    assert parse_cron("0 0 * * 0").weekdays == parse_cron("0 0 * * 7").weekdays == {0}
    assert parse_cron("0 0 * * 5-7").weekdays == {5, 6, 0}
    # A Feb 29 schedule fires in leap years, so it is allowed.
    assert parse_cron("0 0 29 2 *").days == {29}


@pytest.mark.parametrize(
    "cron",
    [
        "*/15 0-6,22-23 1,15 JAN-MAR,dec mon-fri",
        "0 6 * * 7",
        "0 0 29 2 *",
        "59 23 31 12 SUN-SAT",
        "0-59/7 */5 1-31/3 * 1,3,5",
        "0 0 13 * FRI",
    ],
)
def test_what_validation_accepts_the_scheduler_evaluates(cron: str) -> None:
    # The validator and cronsim (which decides when schedules fire) agree.
    parse_cron(cron)
    after = Cron(cron).after(datetime(2025, 1, 1, tzinfo=UTC))

    assert after is not None
    assert after > datetime(2025, 1, 1, tzinfo=UTC)


def test_a_schedule_keeps_its_cron_with_spaces_normalised() -> None:
    schedule = parse_repo_config("schedules: [{cron: ' 0  6 * *\tMON ', prompt: x}]").schedules[0]

    assert schedule.cron == "0 6 * * MON"
    assert schedule.spec == parse_cron("0 6 * * MON")


# --- YAML problems ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("max_turns: 5\nmodel: [a\ndraft: true\n", 3, "could not parse YAML:"),
        (
            "max_turns: 5\n  bad: x\n",
            2,
            "could not parse YAML: mapping values are not allowed here",
        ),
        ("draft: true\n\tmodel: x\n", 2, "could not parse YAML:"),
        ("a: b\n---\nc: d\n", 2, "could not parse YAML: expected a single document in the stream"),
        (
            "x: !!python/object/apply:os.system [ls]\n",
            1,
            "could not parse YAML: could not determine",
        ),
        ("model: a\ndraft: true\nmodel: b\n", 3, "duplicate key 'model'"),
        ("schedules:\n  - {cron: x, cron: y}\n", 2, "duplicate key 'cron'"),
        ("model: *missing\n", 1, "alias *missing has no anchor before it"),
        ("setup: &loop [*loop]\n", 1, "alias *loop refers to itself"),
    ],
)
@pytest.mark.usefixtures("parser")
def test_a_yaml_problem_names_its_line(text: str, line: int, problem: str) -> None:
    error = error_of(text)

    assert error.line == line
    assert error.field is None
    assert error.problem.startswith(problem)
    assert str(error).startswith(f".github/neo.yml: line {line}: {problem}")
    assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- provider: openai\n", "the top level must be a mapping of settings, not a list"),
        ("openai\n", "the top level must be a mapping of settings, not a single value (str)"),
        ("42\n", "the top level must be a mapping of settings, not a single value (int)"),
        (b"model: \xff\n", "file is not valid UTF-8"),
    ],
)
def test_a_file_that_is_not_a_mapping_is_rejected(text: str | bytes, problem: str) -> None:
    error = error_of(text)

    assert str(error) == f".github/neo.yml: {problem}"
    assert (error.field, error.problem) == (None, problem)


def test_a_large_file_is_rejected_before_parsing() -> None:
    comment = "# " + "x" * 78 + "\n"
    big = comment * (MAX_CONFIG_BYTES // len(comment) + 1)

    assert str(error_of(big)) == ".github/neo.yml: file is larger than 64 KiB"
    assert str(error_of(big.encode())) == ".github/neo.yml: file is larger than 64 KiB"
    # Just under the cap is fine.
    assert parse_repo_config(comment * (MAX_CONFIG_BYTES // len(comment))) == RepoConfig()


@pytest.fixture(params=["libyaml", "pure-python"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with the fast event parser and, again, without it."""
    if request.param == "pure-python":
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not yaml.__with_libyaml__:
        pytest.skip("PyYAML was built without libyaml")
    return str(request.param)


def billion_laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        items = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{items}]")
    lines.append(f"setup: *a{levels - 1}")
    return "\n".join(lines) + "\n"


@pytest.mark.usefixtures("parser")
def test_an_alias_bomb_is_rejected_without_expanding_it() -> None:
    text = billion_laughs(9)  # 10**9 strings once expanded, from a 700-byte file
    assert len(text) < 1000

    tracemalloc.start()
    try:
        error = error_of(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert error.problem == "expands to more than 100000 values (aliases?)"
    assert error.line == 5  # the first anchor past the cap
    assert peak < 5_000_000


def test_modest_aliases_are_fine() -> None:
    # 10**3 values: under the cap, so only validation can object.
    error = error_of(billion_laughs(3))
    assert str(error) == ".github/neo.yml: unknown field 'a0'"


@pytest.mark.parametrize(
    "text",
    [
        "[" * 20_000 + "]" * 20_000,
        "a:\n" + "".join("  " * depth + "- \n" for depth in range(1, 200)),
        "setup: " + "{a: " * 5_000 + "b" + "}" * 5_000,
    ],
)
@pytest.mark.usefixtures("parser")
def test_deep_nesting_is_rejected_without_recursing(text: str) -> None:
    error = error_of(text)

    assert error.problem == "nested more than 32 levels deep"
    assert error.line is not None


# --- the comment ---------------------------------------------------------------


def test_the_comment_names_the_file_the_field_and_the_problem() -> None:
    comment = render_config_error(error_of("max_turns: 501"))

    assert comment.startswith(CONFIG_ERROR_MARKER + "\n")
    assert "**Neo did not run:** `.github/neo.yml` on the default branch is invalid." in comment
    assert "- **Setting:** `max_turns`" in comment
    assert "- **Problem:** `Input should be less than or equal to 500`" in comment
    assert "Nothing ran." in comment
    assert "[configuration reference](docs/configuration.md)" in comment
    assert "Line" not in comment


def test_the_comment_gives_the_line_of_a_yaml_error_and_any_reference_url() -> None:
    url = "https://github.com/example/neo/blob/main/docs/configuration.md"
    comment = render_config_error(error_of("a: b\n  c: d\n"), reference_url=url)

    assert "- **Line:** 2" in comment
    assert "- **Problem:** `could not parse YAML: mapping values are not allowed here`" in comment
    assert "Setting" not in comment
    assert f"[configuration reference]({url})" in comment


def test_file_text_in_the_comment_can_neither_format_nor_mention() -> None:
    error = error_of("schedules: [{cron: '0 0 * * *', prompt: x, '@octocat `**x**`': 1}]")
    comment = render_config_error(error)

    setting = next(line for line in comment.splitlines() if line.startswith("- **Setting:**"))
    # Inside a code span that no backtick in the text can close.
    assert setting == "- **Setting:** `` schedules[0].@octocat `**x**` ``"


def test_a_long_problem_is_shortened_in_the_comment() -> None:
    error = RepoConfigError("x", source=".github/neo.yml", problem="y" * 1000, field="model")

    problem = next(line for line in render_config_error(error).splitlines() if "Problem" in line)
    assert len(problem) < 350
    assert problem.endswith("…`")


# --- the reference ---------------------------------------------------------------


def test_the_reference_doc_matches_the_model() -> None:
    expected = reference_markdown()

    assert REFERENCE.read_text(encoding="utf-8") == expected, (
        "docs/configuration.md is stale: run "
        "`uv run python -m bot.config.repo > docs/configuration.md`"
    )


def test_the_reference_describes_every_field() -> None:
    text = reference_markdown()

    assert text == reference_markdown()
    for model in (RepoConfig, Schedule):
        for name, info in model.model_fields.items():
            assert info.description, name
            row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
            assert info.description.replace("|", "\\|") in row
    assert "| `max_turns` | integer, 1 to 500 | `100` |" in text
    assert "| `cron` | string | required |" in text
    assert "uv run python -m bot.config.repo > docs/configuration.md" in text


def test_the_reference_example_is_a_valid_file() -> None:
    assert EXAMPLE_YAML in reference_markdown()
    config = parse_repo_config(EXAMPLE_YAML)
    assert config.schedules[0].name == "weekly dependency update"
    # It sets every setting, so it shows them all.
    assert set(RepoConfig.model_fields) - {"sandbox_image"} <= config.model_fields_set


def test_the_module_prints_the_reference() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot.config.repo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert result.stdout == reference_markdown()
