"""bot.config.model: what a valid `.github/neo.yml` holds, and the checks of its values."""

from __future__ import annotations

import pytest

from bot.config import Cron, Schedule, parse_repo_config
from tests.bot.config.test_loading import error_of

FULL = """\
provider: openrouter
model: anthropic/claude-sonnet-5.5
max_turns: 500
time_limit: 240
setup:
  - uv sync
  - npm ci
network: {allow: [python, "*.example.com", "10.0.0.5:8080"], methods: all}
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


# --- valid files ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "policy", "notes"),
    [
        ("", None, ()),
        ("network: off", "off", ()),
        ("network: 'off'", "off", ()),
        ("network: {}", "nothing (read)", ()),
        ("network: {allow: [github, pypi.org]}", "github, pypi.org (read)", ()),
        (
            "setup_network: true",
            "nothing (read)",
            ("`setup_network` is read as `network: {allow: []}`; write `network` instead",),
        ),
        (
            "setup_network: false",
            "off",
            ("`setup_network` is read as `network: off`; write `network` instead",),
        ),
        (
            "setup_network: true\nnetwork: {allow: [node]}",
            "node (read)",
            ("`setup_network` is ignored: `network` replaces it",),
        ),
    ],
)
def test_the_network_a_file_asks_for(text: str, policy: str | None, notes: tuple[str, ...]) -> None:
    config = parse_repo_config(text)

    asked = config.network_policy()
    assert (str(asked) if asked is not None else None) == policy
    assert config.network_notes() == notes


def test_a_full_file_is_read() -> None:
    config = parse_repo_config(FULL)

    assert config.provider == "openrouter"
    assert config.model == "anthropic/claude-sonnet-5.5"
    assert (config.max_turns, config.time_limit) == (500, 240)
    assert config.setup == ("uv sync", "npm ci")
    policy = config.network_policy()
    assert policy is not None
    assert [str(item) for item in policy.items] == ["python", "*.example.com", "10.0.0.5:8080"]
    assert policy.methods == "all"
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
    ("text", "setup"),
    [
        pytest.param("", None, id="unset-detects"),
        pytest.param("setup: null", None, id="null-detects"),
        pytest.param("setup: []", (), id="empty-is-off"),
        pytest.param("setup: [make deps]", ("make deps",), id="a-list-runs-as-written"),
    ],
)
def test_setup_unset_detects_and_an_empty_list_turns_it_off(
    text: str, setup: tuple[str, ...] | None
) -> None:
    assert parse_repo_config(text).setup == setup


def test_the_config_is_frozen() -> None:
    config = parse_repo_config("max_turns: 7")

    with pytest.raises(ValueError, match="frozen"):
        config.max_turns = 8  # type: ignore[misc]
    assert hash(config) == hash(parse_repo_config("max_turns: 7"))


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


def test_a_schedule_keeps_its_cron_with_spaces_normalised() -> None:
    schedule = parse_repo_config("schedules: [{cron: ' 0  6 * *\tMON ', prompt: x}]").schedules[0]

    assert schedule.cron == "0 6 * * MON"
    assert schedule.when == Cron("0 6 * * MON")
