"""Every provider from `@neo` mention to draft pull request, through a real `neo serve`.

One case per provider: the repository's `.github/neo.yml` names it, the
service's environment points its SDK at that provider's wire-level fake,
and the scripted model edits the README with its family's tools (apply_patch
for GPT-5 names, edit_file for the others). The local sandbox keeps each
case to seconds; tests/bot/test_e2e.py covers Docker. A last case asks for a
provider the service cannot sign in to and gets one comment, nothing else.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.jobs import JobState
from bot.queue import SqliteQueue
from tests.bot.serving import AppGitServer, neo_serve, serve_env
from tests.bot.test_e2e import (
    DEFAULT_BRANCH,
    DONE,
    EDITED,
    INSTALLATION,
    REPO,
    bot_comments,
    comment_posts,
    git,
    only_job,
    post_mention,
    wait_until,
)
from tests.fakes import FakeAnthropicAPI, FakeGitHub, make_repo
from tests.fakes import Reply as AnthropicReply
from tests.fakes import chat_completions as chat
from tests.fakes import gemini_api as gemini
from tests.fakes import openai_responses as responses
from tests.fakes import text as anthropic_text
from tests.fakes import tool_use as anthropic_tool_use

SUMMARY = "Added a line to README.md."
EDIT = {"path": "README.md", "old_string": "# fixture\n", "new_string": EDITED}
PATCH = {
    "input": "*** Begin Patch\n*** Update File: README.md\n@@\n # fixture\n+\n+Edited by Neo.\n"
    "*** End Patch\n"
}
# Every variable a provider reads: the service gets only those a case sets.
PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENROUTER_API_KEY",
    "OPENROUTER_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
)


@dataclass(frozen=True)
class API:
    """One provider's fake, as a case drives it."""

    env: Mapping[str, str]
    key: str
    # The tool names each request offered the model, in order.
    tools: Callable[[], list[set[str]]]
    pending: Callable[[], int]


@dataclass(frozen=True)
class Case:
    provider: str
    config: str
    model: str
    patch: bool


CASES = [
    Case("anthropic", "provider: anthropic\n", "claude-sonnet-5-5", patch=False),
    Case("openai", "provider: openai\n", "gpt-5", patch=True),
    Case(
        "chat-completions",
        "provider: chat-completions\nmodel: fake-model\n",
        "fake-model",
        patch=False,
    ),
    Case("openrouter", "provider: openrouter\nmodel: openai/gpt-5\n", "openai/gpt-5", patch=True),
    Case("google", "provider: google\n", "gemini-2.5-pro", patch=False),
]


@contextlib.contextmanager
def provider_api(case: Case) -> Iterator[API]:
    """The case's fake, scripted to edit the README, then to sum up."""
    key = f"e2e-{case.provider}-{secrets.token_hex(12)}"
    tool = "apply_patch" if case.patch else "edit_file"
    arguments = PATCH if case.patch else EDIT
    if case.provider == "anthropic":
        with FakeAnthropicAPI(api_key=key) as anthropic:
            anthropic.script(
                AnthropicReply([anthropic_tool_use("t1", tool, arguments)], "tool_use"),
                AnthropicReply([anthropic_text(SUMMARY)]),
            )
            yield API(
                anthropic.env,
                key,
                lambda: [{t["name"] for t in r.body["tools"]} for r in anthropic.requests],
                lambda: anthropic.pending,
            )
    elif case.provider == "openai":
        with responses.FakeOpenAIResponses(api_key=key) as openai:
            openai.script(
                # GPT-5 writes its patch free-form, to the custom tool it was offered.
                responses.Reply([responses.custom_tool_call("c1", tool, arguments["input"])]),
                responses.Reply([responses.message(SUMMARY)]),
            )
            yield API(
                openai.env,
                key,
                lambda: [{t["name"] for t in r.body["tools"]} for r in openai.requests],
                lambda: openai.pending,
            )
    elif case.provider in ("chat-completions", "openrouter"):
        with chat.FakeChatCompletions(api_key=key) as server:
            server.script(
                chat.Reply(tool_calls=[chat.call("c1", tool, arguments)]),
                chat.Reply(text=SUMMARY),
            )
            prefix = "OPENAI" if case.provider == "chat-completions" else "OPENROUTER"
            yield API(
                {f"{prefix}_BASE_URL": server.base_url, f"{prefix}_API_KEY": key},
                key,
                lambda: [
                    {t["function"]["name"] for t in r.body["tools"]} for r in server.completions
                ],
                lambda: server.pending,
            )
    else:
        with gemini.FakeGemini(api_key=key) as google:
            google.script(
                gemini.Reply([gemini.call(tool, arguments)]),
                gemini.Reply([gemini.text(SUMMARY)]),
            )
            yield API(
                google.env,
                key,
                lambda: [
                    {d["name"] for t in r.body["tools"] for d in t["functionDeclarations"]}
                    for r in google.requests
                ],
                lambda: google.pending,
            )


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.install(INSTALLATION, "octo", ["hello"])
        fake.set_permission(REPO, "mona", "write")
        fake.set_default_branch(REPO, DEFAULT_BRANCH)
        yield fake


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "served" / "octo" / "hello.git"
    make_repo(repo, files=1, branch=DEFAULT_BRANCH)
    return repo


@pytest.fixture
def git_server(tmp_path: Path, origin: Path, github: FakeGitHub) -> Iterator[AppGitServer]:
    server = AppGitServer(tmp_path / "served", github)
    with server:
        yield server


def service_env(
    tmp_path: Path, github: FakeGitHub, git_server: AppGitServer, provider: Mapping[str, str]
) -> dict[str, str]:
    """`neo serve` with one worker, the local sandbox, and only `provider`'s variables."""
    env = serve_env(github, tmp_path / "data")
    for name in PROVIDER_VARIABLES:
        env.pop(name, None)
    return {
        **env,
        **provider,
        "NEO_WORKERS": "1",
        "NEO_GITHUB_GIT_URL": git_server.base_url,
        # No ChatGPT sign-in but what a case stores.
        "NEO_HOME": str(tmp_path / "home"),
    }


async def run_mention(
    tmp_path: Path, env: Mapping[str, str], github: FakeGitHub, instruction: str
) -> tuple[int, JobState, Any, Sequence[Path]]:
    """Deliver a mention on a new issue to `neo serve`; the issue, and the job's end."""
    number = github.add_issue(REPO, "Say hello in the README", "Please.", user="mona")
    comment = github.add_comment(REPO, number, instruction, user="mona")
    logs = [tmp_path / "serve.log"]
    with neo_serve(env, logs[0]) as server:
        post_mention(server, number, comment, instruction)
        async with SqliteQueue(tmp_path / "data" / "neo.db") as queue:

            async def finished() -> bool:
                return (await only_job(queue)).state in DONE

            await wait_until(finished, "the job finished", logs)
            job = await only_job(queue)
    return number, job.state, job.result, logs


@pytest.mark.parametrize("case", CASES, ids=[case.provider for case in CASES])
async def test_each_provider_turns_a_mention_into_a_draft_pr(
    case: Case,
    tmp_path: Path,
    github: FakeGitHub,
    origin: Path,
    git_server: AppGitServer,
) -> None:
    github.put_file(REPO, ".github/neo.yml", case.config)
    with provider_api(case) as api:
        env = service_env(tmp_path, github, git_server, api.env)
        number, state, result, logs = await run_mention(
            tmp_path, env, github, "@neo add a line to the README"
        )
        tools = api.tools()
        pending = api.pending()

    assert state is JobState.SUCCEEDED, result
    assert pending == 0
    # The model was offered its family's tools, on both calls.
    assert len(tools) == 2
    family = {"apply_patch", "shell"} if case.patch else {"edit_file", "write_file", "bash"}
    other = {"edit_file", "write_file", "bash"} if case.patch else {"apply_patch", "shell"}
    assert all(family <= offered and not other & offered for offered in tools), tools
    (pull,) = github.pulls(REPO)
    assert pull["draft"] is True
    assert pull["head"]["ref"] == f"neo/issue-{number}"
    assert pull["base"]["ref"] == DEFAULT_BRANCH
    assert SUMMARY in pull["body"]
    branch = f"refs/heads/neo/issue-{number}"
    assert git(origin, "show", f"{branch}:README.md") == EDITED.strip()
    # One progress comment, edited into the report, which names the model.
    assert comment_posts(github, number) == 1
    (report,) = bot_comments(github, number)
    assert "**Done**" in report["body"]
    assert pull["html_url"] in report["body"]
    assert f"Model: `{case.model}`" in report["body"]
    shown = report["body"] + pull["body"] + logs[0].read_text()
    assert api.key not in shown


async def test_a_provider_the_service_cannot_sign_in_to_gets_one_comment_and_no_work(
    tmp_path: Path,
    github: FakeGitHub,
    origin: Path,
    git_server: AppGitServer,
) -> None:
    # The service has an OpenAI key, but the repository asks for the ChatGPT sign-in.
    github.put_file(REPO, ".github/neo.yml", "provider: openai\nopenai_auth: subscription\n")
    case = CASES[1]
    with provider_api(case) as api:
        env = service_env(tmp_path, github, git_server, api.env)
        number, state, result, _ = await run_mention(tmp_path, env, github, "@neo say hello")
        tools = api.tools()

    assert state is JobState.FAILED
    line = (
        "Neo did not run: the provider `openai` with `openai_auth: subscription` (from"
        " `.github/neo.yml`) is not offered by this Neo service: it has no stored ChatGPT"
        " sign-in. Ask the operator to sign in with `neo login chatgpt` on its host, or"
        " choose one of: openai, chat-completions."
    )
    assert result.error == line
    (mine,) = bot_comments(github, number)
    assert mine["body"].splitlines()[-1] == line
    assert comment_posts(github, number) == 1
    assert tools == []
    assert git_server.requests == []
    assert github.pulls(REPO) == []
    assert api.key not in mine["body"]
