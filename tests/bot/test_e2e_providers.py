"""Every provider from `@neo` mention to draft pull request, through a real `neo serve`.

One case per provider: the repository's `.github/neo.yml` names it, the
service's environment points its SDK at that provider's wire-level fake,
and the scripted model edits the README with its family's tools (apply_patch
for GPT-5 names, edit_file for the others). The local sandbox keeps each
case to seconds; tests/bot/test_e2e.py covers Docker. A last case asks for a
provider the service cannot sign in to and gets one comment, nothing else.

The providers that read variables of their own (Anthropic, OpenAI,
OpenRouter, Google) are served by one `neo serve` of the module, each case on
a repository of its own whose `.github/neo.yml` names its provider, as an
operator's service serves many repositories; chat-completions reads
OpenAI's variables, so its case gets a service of its own.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.jobs import Job, JobState
from bot.queue import SqliteQueue
from tests.bot.serving import AppGitServer, Server, neo_serve, serve_env
from tests.bot.test_e2e import (
    DEFAULT_BRANCH,
    DONE,
    EDITED,
    INSTALLATION,
    git,
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


# The providers one service offers side by side: each reads variables of its own.
SHARED = ("anthropic", "openai", "openrouter", "google")
# The repository of the case that asks for a sign-in the service lacks.
SIGN_IN = "sign-in"


def repo_of(name: str) -> str:
    return f"octo/{name}"


@dataclass
class Service:
    """A running `neo serve`, the fakes it talks to, and each repository's bare origin."""

    server: Server
    github: FakeGitHub
    git_server: AppGitServer
    apis: Mapping[str, API]
    origins: Mapping[str, Path]
    root: Path

    @property
    def log(self) -> Path:
        return self.server.log


@contextlib.contextmanager
def service(root: Path, cases: Sequence[Case], repositories: Sequence[str]) -> Iterator[Service]:
    """`neo serve` with one worker, the local sandbox, `cases`' providers' variables
    only, and the App installed on `repositories` (one bare origin each)."""
    with contextlib.ExitStack() as stack:
        github = stack.enter_context(FakeGitHub())
        github.install(INSTALLATION, "octo", list(repositories))
        origins = {}
        for name in repositories:
            github.set_permission(repo_of(name), "mona", "write")
            github.set_default_branch(repo_of(name), DEFAULT_BRANCH)
            origins[name] = root / "served" / "octo" / f"{name}.git"
            make_repo(origins[name], files=1, branch=DEFAULT_BRANCH)
        git_server = AppGitServer(root / "served", github)
        stack.enter_context(git_server)
        apis = {case.provider: stack.enter_context(provider_api(case)) for case in cases}
        env = serve_env(github, root / "data")
        for name in PROVIDER_VARIABLES:
            env.pop(name, None)
        for api in apis.values():
            env.update(api.env)
        env.update(
            {
                "NEO_WORKERS": "1",
                "NEO_GITHUB_GIT_URL": git_server.base_url,
                # No ChatGPT sign-in but what a case stores.
                "NEO_HOME": str(root / "home"),
            }
        )
        server = stack.enter_context(neo_serve(env, root / "serve.log"))
        yield Service(server, github, git_server, apis, origins, root)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service for the SHARED providers' cases and the sign-in case."""
    cases = [case for case in CASES if case.provider in SHARED]
    root = tmp_path_factory.mktemp("shared")
    with service(root, cases, [*SHARED, SIGN_IN]) as running:
        yield running


@pytest.fixture
def for_case(case: Case, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    """The module's service for a SHARED provider, else one of the case's own."""
    if case.provider in SHARED:
        running = request.getfixturevalue("shared")
        assert isinstance(running, Service)
        yield running
        return
    with service(tmp_path, [case], [case.provider]) as own:
        yield own


def bot_comments(github: FakeGitHub, repo: str, number: int) -> list[Mapping[str, Any]]:
    return [c for c in github.comments(repo, number) if c["user"]["login"] == github.bot_login]


def comment_posts(github: FakeGitHub, repo: str, number: int) -> int:
    """How many comments Neo created on the thread (POSTs that succeeded)."""
    path = f"/repos/{repo}/issues/{number}/comments"
    return sum(
        1
        for r in github.requests
        if r.method == "POST" and r.route == path and r.status == 201 and r.auth != "none"
    )


async def run_mention(running: Service, repo: str, instruction: str) -> tuple[int, Job]:
    """Deliver a mention on a new issue of `repo`; the issue, and its job once it ended."""
    github = running.github
    number = github.add_issue(repo, "Say hello in the README", "Please.", user="mona")
    comment = github.add_comment(repo, number, instruction, user="mona")
    post_mention(running.server, number, comment, instruction, repo)
    async with SqliteQueue(running.root / "data" / "neo.db") as queue:

        async def of_repo() -> list[Job]:
            return [
                j
                for j in await queue.list()
                if j.request.thread is not None and j.request.thread.repository == repo
            ]

        async def finished() -> bool:
            jobs = await of_repo()
            return len(jobs) == 1 and jobs[0].state in DONE

        await wait_until(finished, f"the job of {repo} finished", [running.log])
        (job,) = await of_repo()
    return number, job


@pytest.mark.parametrize("case", CASES, ids=[case.provider for case in CASES])
async def test_each_provider_turns_a_mention_into_a_draft_pr(case: Case, for_case: Service) -> None:
    running, repo = for_case, repo_of(case.provider)
    github, api = running.github, running.apis[case.provider]
    github.put_file(repo, ".github/neo.yml", case.config)

    number, job = await run_mention(running, repo, "@neo add a line to the README")
    tools = api.tools()

    assert job.state is JobState.SUCCEEDED, job.result
    assert api.pending() == 0
    # The model was offered its family's tools, on both calls.
    assert len(tools) == 2
    family = {"apply_patch", "shell"} if case.patch else {"edit_file", "write_file", "bash"}
    other = {"edit_file", "write_file", "bash"} if case.patch else {"apply_patch", "shell"}
    assert all(family <= offered and not other & offered for offered in tools), tools
    (pull,) = github.pulls(repo)
    assert pull["draft"] is True
    assert pull["head"]["ref"] == f"neo/issue-{number}"
    assert pull["base"]["ref"] == DEFAULT_BRANCH
    assert f"Fixes #{number}" in pull["body"]
    assert SUMMARY in pull["body"]
    branch = f"refs/heads/neo/issue-{number}"
    assert git(running.origins[case.provider], "show", f"{branch}:README.md") == EDITED.strip()
    # One progress comment, edited into the report, which names the model.
    assert comment_posts(github, repo, number) == 1
    (report,) = bot_comments(github, repo, number)
    assert "**Done**" in report["body"]
    assert pull["html_url"] in report["body"]
    assert f"Model: `{case.model}`" in report["body"]
    shown = report["body"] + pull["body"] + running.log.read_text()
    assert api.key not in shown


async def test_a_provider_the_service_cannot_sign_in_to_gets_one_comment_and_no_work(
    shared: Service,
) -> None:
    # The service has an OpenAI key, but the repository asks for the ChatGPT sign-in.
    repo, github, openai = repo_of(SIGN_IN), shared.github, shared.apis["openai"]
    github.put_file(repo, ".github/neo.yml", "provider: openai\nopenai_auth: subscription\n")
    asked_before = len(openai.tools())

    number, job = await run_mention(shared, repo, "@neo say hello")

    assert job.state is JobState.FAILED
    line = (
        "Neo did not run: the provider `openai` with `openai_auth: subscription` (from"
        " `.github/neo.yml`) is not offered by this Neo service: it has no stored ChatGPT"
        " sign-in. Ask the operator to sign in with `neo login chatgpt` on its host, or"
        # What the service offers: the shared providers' keys, and OpenAI's
        # key for chat-completions too.
        " choose one of: anthropic, openai, chat-completions, openrouter, google."
    )
    assert job.result is not None
    assert job.result.error == line
    (mine,) = bot_comments(github, repo, number)
    assert mine["body"].splitlines()[-1] == line
    assert comment_posts(github, repo, number) == 1
    assert len(openai.tools()) == asked_before
    assert [r for r in shared.git_server.requests if f"/{repo}.git/" in r.path] == []
    assert github.pulls(repo) == []
    assert openai.key not in mine["body"]
