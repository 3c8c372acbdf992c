"""bot.config.mcp: `mcp:` in `.github/neo.yml` and `neo run --mcp-config FILE`."""

from __future__ import annotations

import pytest

from bot.config.loading import RepoConfigError, parse_mcp_config, parse_repo_config
from runner.mcp import (
    CALL_TIMEOUT,
    STARTUP_TIMEOUT,
    Command,
    ContainerImage,
    McpSettings,
    Operator,
    Remote,
    ServerSpec,
)

ISSUE_EXAMPLE = """\
mcp:
  servers:
    docs:   {image: ghcr.io/acme/docs-mcp:1.2, tools: [search, fetch_page]}
    sentry:
      url: https://mcp.sentry.example/mcp
      tools: [get_issue]
      secrets: [SENTRY_TOKEN]
      headers: {Authorization: "Bearer ${SENTRY_TOKEN}"}
    time:   {command: [mcp-server-time], tools: ["*"], required: true, call_timeout: 5}
"""
OPERATOR = Operator(commands=("mcp-server-time",), secrets={"SENTRY_TOKEN": "s3cr3t"})


def problems(text: str, operator: Operator | None = None) -> list[tuple[str | None, str]]:
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config(text, operator=operator)
    return [(p.field, p.problem) for p in caught.value.problems]


def test_the_issues_example_reads_as_the_runner_takes_it() -> None:
    settings = parse_repo_config(ISSUE_EXAMPLE, operator=OPERATOR).mcp.settings()

    assert settings == McpSettings(
        servers=(
            ServerSpec(
                "docs", ContainerImage("ghcr.io/acme/docs-mcp:1.2"), ("search", "fetch_page")
            ),
            ServerSpec(
                "sentry",
                Remote(
                    "https://mcp.sentry.example/mcp",
                    (("Authorization", "Bearer ${SENTRY_TOKEN}"),),
                ),
                ("get_issue",),
                secrets=("SENTRY_TOKEN",),
            ),
            ServerSpec(
                "time", Command(("mcp-server-time",)), ("*",), required=True, call_timeout=5.0
            ),
        ),
        github=True,
    )
    time = settings.servers[2]
    assert (time.startup_timeout, settings.servers[0].call_timeout) == (
        STARTUP_TIMEOUT,
        CALL_TIMEOUT,
    )
    assert time.allows("anything")
    assert not settings.servers[0].allows("delete_page")


def test_no_mcp_key_is_the_built_in_github_server_alone() -> None:
    assert parse_repo_config("").mcp.settings() == McpSettings(servers=(), github=True)
    assert parse_repo_config("mcp: {github: false}").mcp.settings().empty


def test_what_the_operator_has_not_allowed_is_a_problem_of_the_file_at_its_line() -> None:
    found = problems(ISSUE_EXAMPLE, Operator())

    assert found == [
        (
            "mcp.servers.sentry.secrets",
            "the operator holds no secret SENTRY_TOKEN (NEO_MCP_SENTRY_TOKEN is not set)",
        ),
        (
            "mcp.servers.time.command",
            "the operator does not allow the command 'mcp-server-time' (NEO_MCP_COMMANDS)",
        ),
    ]
    with pytest.raises(RepoConfigError) as caught:
        parse_repo_config(ISSUE_EXAMPLE, operator=Operator())
    assert caught.value.line == 7  # the secrets line, the first in the file
    assert str(caught.value).startswith(".github/neo.yml: mcp.servers.sentry.secrets: ")


def test_without_an_operator_the_file_alone_is_checked() -> None:
    # The scheduler reads schedules only: the operator's allowances are the job's.
    assert len(parse_repo_config(ISSUE_EXAMPLE).mcp.servers) == 3


def test_an_absolute_command_must_be_allowed_as_written() -> None:
    text = "mcp: {servers: {t: {command: [/usr/bin/mcp-server-time], tools: [a]}}}"
    assert problems(text, OPERATOR) == [
        (
            "mcp.servers.t.command",
            "the operator does not allow the command '/usr/bin/mcp-server-time' (NEO_MCP_COMMANDS)",
        )
    ]
    allowed = Operator(commands=("/usr/bin/mcp-server-time",))
    assert parse_repo_config(text, operator=allowed).mcp.servers["t"].command == (
        "/usr/bin/mcp-server-time",
    )


@pytest.mark.parametrize(
    ("server", "field", "problem"),
    [
        ("{tools: [a]}", "mcp.servers.s", "give exactly one of `image`, `url` and `command`"),
        (
            "{image: a, url: 'https://x.example/mcp', tools: [a]}",
            "mcp.servers.s",
            "give exactly one of `image`, `url` and `command` (this gives image and url)",
        ),
        ("{image: a}", "mcp.servers.s.tools", "Field required"),
        ("{image: a, tools: []}", "mcp.servers.s.tools", None),
        (
            "{image: a, tools: ['*', search]}",
            "mcp.servers.s.tools",
            '"*" stands alone: it means every tool',
        ),
        ("{image: a, tools: [a, a]}", "mcp.servers.s.tools", "a tool is named twice"),
        (
            "{image: 'Bad Image', tools: [a]}",
            "mcp.servers.s.image",
            "'Bad Image' is not a valid image reference: must not contain spaces or other"
            " characters outside printable ASCII",
        ),
        (
            "{url: 'ftp://x.example/mcp', tools: [a]}",
            "mcp.servers.s.url",
            "'ftp://x.example/mcp' is not an http or https URL",
        ),
        (
            "{url: 'https://me:pw@x.example/mcp', tools: [a]}",
            "mcp.servers.s.url",
            "a URL holds no credentials: name a secret and use `headers`",
        ),
        (
            "{command: [./server], tools: [a]}",
            "mcp.servers.s.command",
            "'./server': a command is a name on PATH or an absolute path",
        ),
        (
            "{image: a, tools: [a], headers: {X-Key: v}}",
            "mcp.servers.s",
            "`headers` are for a `url` server",
        ),
        (
            "{url: 'https://x.example/mcp', tools: [a], headers: {X-Key: '${KEY}'}}",
            "mcp.servers.s",
            "headers name ${KEY}, which is not in `secrets` (list every secret a header uses)",
        ),
        (
            "{url: 'https://x.example/mcp', tools: [a], secrets: [KEY]}",
            "mcp.servers.s",
            "secret KEY reaches a URL server only through a header: use ${KEY} in one, or"
            " leave it out",
        ),
        (
            "{url: 'https://x.example/mcp', tools: [a], headers: {Host: evil.example}}",
            "mcp.servers.s.headers",
            "Host is the transport's own header",
        ),
        (
            "{image: a, tools: [a], secrets: [lower]}",
            "mcp.servers.s.secrets",
            "'lower': a secret's name is upper-case letters, digits and '_', starting with"
            " a letter",
        ),
        (
            "{image: a, tools: [a], secrets: [COMMANDS]}",
            "mcp.servers.s.secrets",
            "'COMMANDS': NEO_MCP_COMMANDS is the operator's own setting, not a secret",
        ),
        ("{image: a, tools: [a], call_timeout: 0}", "mcp.servers.s.call_timeout", None),
        ("{image: a, tools: [a], required: 'yes'}", "mcp.servers.s.required", None),
    ],
)
def test_a_bad_server_is_one_problem_naming_its_setting(
    server: str, field: str, problem: str | None
) -> None:
    found = problems(f"mcp: {{servers: {{s: {server}}}}}")

    assert len(found) == 1
    assert found[0][0] == field
    if problem is not None:
        assert found[0][1] == problem


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        (
            "github",
            "'github' is the built-in server's name: choose another, or set `github: false`"
            " to go without it",
        ),
        (
            "Docs",
            "'Docs': a server's name is 1 to 30 lower-case letters, digits and hyphens,"
            " starting with a letter",
        ),
        ("my_docs", None),
    ],
)
def test_a_server_name_is_checked(name: str, problem: str | None) -> None:
    found = problems(f"mcp: {{servers: {{{name}: {{image: a, tools: [a]}}}}}}")

    assert found[0][0] == "mcp.servers"
    if problem is not None:
        assert found[0][1] == problem


def test_an_unknown_key_in_a_server_is_named_with_a_suggestion() -> None:
    found = problems("mcp:\n  servers:\n    docs: {imag: a, tools: [a]}\n")

    assert found == [("mcp.servers.docs.imag", "unknown field (did you mean 'image'?)")]


def test_the_cli_file_holds_what_goes_under_mcp_in_yaml_or_json() -> None:
    yaml_text = "servers:\n  time: {command: [mcp-server-time], tools: ['*']}\ngithub: false\n"
    json_text = '{"servers": {"time": {"command": ["mcp-server-time"], "tools": ["*"]}}}'

    from_yaml = parse_mcp_config(yaml_text, source="mcp.yml", operator=OPERATOR)
    from_json = parse_mcp_config(json_text, source="mcp.json", operator=OPERATOR)

    assert from_yaml.settings().servers == from_json.settings().servers
    assert not from_yaml.github
    assert from_json.github
    with pytest.raises(RepoConfigError) as caught:
        parse_mcp_config("mcp: {servers: {}}", source="mcp.yml")
    assert str(caught.value) == "mcp.yml: unknown field 'mcp'"
    with pytest.raises(RepoConfigError) as caught:
        parse_mcp_config(json_text, source="mcp.json", operator=Operator())
    assert str(caught.value) == (
        "mcp.json: servers.time.command: the operator does not allow the command"
        " 'mcp-server-time' (NEO_MCP_COMMANDS)"
    )


def test_a_config_with_servers_is_frozen_and_hashable_like_any() -> None:
    config = parse_repo_config(ISSUE_EXAMPLE)

    assert hash(config) == hash(parse_repo_config(ISSUE_EXAMPLE))
    assert hash(config) != hash(parse_repo_config(ISSUE_EXAMPLE.replace("5}", "6}")))
