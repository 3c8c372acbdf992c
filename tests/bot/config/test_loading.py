"""bot.config.loading: from text to a RepoConfig, or one RepoConfigError line."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml

from bot.config.loading import MAX_CONFIG_BYTES, ConfigProblem, RepoConfigError, parse_repo_config
from bot.config.model import RepoConfig
from runner.errors import ConfigError


def error_of(text: str | bytes) -> RepoConfigError:
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config(text)
    return caught.value


@pytest.mark.parametrize(
    "text", ["", "\n\n", "# nothing yet\n", "~\n", "---\n", b"", b"\xef\xbb\xbf"]
)
def test_an_empty_file_means_every_default(text: str | bytes) -> None:
    config = parse_repo_config(text)

    assert config == RepoConfig()
    assert config.provider == "anthropic"
    assert config.model is None
    assert config.openai_auth == "api_key"
    assert (config.max_turns, config.time_limit) == (100, 30)
    assert config.setup is None  # detected from the repository's files
    assert config.setup_network is None
    assert config.network is None
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


def test_the_error_is_a_config_error_with_field_and_problem() -> None:
    error = error_of("max_turns: 501")

    assert isinstance(error, ConfigError)
    assert error.kind == "config_error"
    assert str(error) == ".github/neo.yml: max_turns: Input should be less than or equal to 500"
    assert (error.source, error.field, error.line) == (".github/neo.yml", "max_turns", 1)
    assert error.problem == "Input should be less than or equal to 500"
    assert error.problems == (
        ConfigProblem("Input should be less than or equal to 500", "max_turns", 1),
    )


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
            "unknown field 'schedules[0].promt' (did you mean 'prompt'?) (and 1 more problem)",
            "schedules[0].promt",
        ),
        ("on: true", "unknown field True (unquoted yes, no, on, off are booleans in YAML)", "True"),
        # Wrong types: YAML already types values, so nothing is coerced.
        ("max_turns: '100'", "max_turns: Input should be a valid integer", "max_turns"),
        ("max_turns: 1.5", "max_turns: Input should be a valid integer", "max_turns"),
        ("max_turns: true", "max_turns: Input should be a valid integer", "max_turns"),
        ("draft: 1", "draft: Input should be a valid boolean", "draft"),
        ("setup_network: 'yes'", "setup_network: Input should be a valid boolean", "setup_network"),
        (
            "network: {allow: [python, pyhton]}",
            "network.allow: unknown ecosystem 'pyhton' (one of: python, node, go, rust, ruby,"
            " github; a host needs its domain, e.g. example.com)",
            "network.allow",
        ),
        (
            "network: {allow: ['https://pypi.org']}",
            "network.allow: 'https://pypi.org' is a URL: write its host alone, e.g. example.com",
            "network.allow",
        ),
        (
            "network: {allow: [169.254.169.254]}",
            "network.allow: '169.254.169.254' is never reachable (loopback, link-local,"
            " multicast or reserved address)",
            "network.allow",
        ),
        (
            "network: {allow: [python], methods: write}",
            "network.methods: Input should be 'read' or 'all'",
            "network.methods",
        ),
        ("network: on", "network: write `off`, or `{allow: [...], methods: read}`", "network"),
        ("network: {allow: python}", "network.allow: Input should be a list", "network.allow"),
        (
            "network: {alow: [python]}",
            "unknown field 'network.alow' (did you mean 'allow'?)",
            "network.alow",
        ),
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
        (
            "fallback: openai",
            "fallback: Input should be a mapping",
            "fallback",
        ),
        (
            "fallback: {model: gpt-5}",
            "fallback.provider: Field required",
            "fallback.provider",
        ),
        (
            "model: claude-opus-5\nfallback: {provider: anthropic, model: claude-opus-5}",
            "fallback: is the same provider and model as the first; name another",
            "fallback",
        ),
        (
            "openai_auth: oauth",
            "openai_auth: Input should be 'api_key' or 'subscription'",
            "openai_auth",
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
            "disabled_skills: [Release_Notes]",
            "disabled_skills[0]: Input should be a skill name: lower-case letters and digits"
            " in words joined by single hyphens, starting with a letter, e.g. release-notes",
            "disabled_skills[0]",
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
    else:
        # The locked PyYAML wheel carries libyaml; without it this row would test nothing.
        assert yaml.__with_libyaml__, "this PyYAML was built without libyaml"
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
    # Three unknown fields, and each of setup's ten items is a list, not text.
    assert str(error) == ".github/neo.yml: unknown field 'a0' (and 12 more problems)"


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


# --- every problem of a file -------------------------------------------------


def test_every_problem_in_the_file_is_listed_in_its_order_with_its_line() -> None:
    text = """\
max_turns: 501
modle: claude
schedules:
  - name: nightly
    cron: "0 0 * *"
    prompt: tidy up
  - name: weekly
    prompt: update the dependencies
ci_repair: {attempts: 99}
"""
    error = error_of(text)

    assert error.problems == (
        ConfigProblem("Input should be less than or equal to 500", "max_turns", 1),
        ConfigProblem("unknown field (did you mean 'model'?)", "modle", 2),
        ConfigProblem(
            "must have 5 fields (minute hour day-of-month month day-of-week), not 4",
            "schedules[0].cron",
            5,
        ),
        # Missing: the line of the schedule that lacks it.
        ConfigProblem("Field required", "schedules[1].cron", 7),
        ConfigProblem("Input should be less than or equal to 10", "ci_repair.attempts", 9),
    )
    # One line still, naming the misspelt key first: the likeliest cause of the rest.
    assert str(error) == (
        ".github/neo.yml: unknown field 'modle' (did you mean 'model'?) (and 4 more problems)"
    )
    assert (error.field, error.line) == ("modle", 2)


def test_keys_that_are_not_text_and_unreadable_values_are_listed_beside_the_rest() -> None:
    text = "on: push\nmax_turns: 1" + "0" * 5000 + "\ndraft: maybe\n"
    error = error_of(text)

    assert error.problems == (
        ConfigProblem("unknown field (unquoted yes, no, on, off are booleans in YAML)", "True", 1),
        ConfigProblem("the number is too large (5001 digits)", "max_turns", 2),
        ConfigProblem("Input should be a valid boolean", "draft", 3),
    )


def test_a_merged_setting_is_found_at_its_line() -> None:
    text = """\
base: &base {cron: "0 0 * * *", prompt: x}
schedules:
  - <<: *base
    name: nightly
    branch: "bad branch"
"""
    error = error_of(text)

    assert [(p.field, p.line) for p in error.problems] == [
        ("base", 1),
        ("schedules[0].branch", 5),
    ]
