"""One headless run of the agent on a working tree: what `neo run` does.

The working tree, its sandbox and the session to resume are this module's;
the run is assembled by `runner.assembly` and bounded by `runner.run`. The
outcome is reduced to a `RunResult`; rendering belongs to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from runner.agent import Event
from runner.assembly import Briefing, ProviderFactory, RunKit, RunSession, RunSettings, open_run
from runner.budget import ran_out
from runner.context import Environment, find_git_root, project_context
from runner.context.setup_facts import access_of
from runner.errors import ConfigError, NeoError
from runner.llm.provider import prepare_provider
from runner.llm.registry import make_provider
from runner.llm.types import JSON, Usage
from runner.mcp.report import McpReport, McpRequired
from runner.mcp.run import NO_MCP, McpRun, open_gateway
from runner.network import (
    Blocked,
    EgressReport,
    Methods,
    NetworkPolicy,
    Plan,
    default_policy,
    job_plan,
)
from runner.run import bounded, elapsed_ms, session_meta
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.factory import SandboxChoice, open_environment
from runner.sandbox.setup_files import environment_for
from runner.sandbox.setup_plan import SetupOutcome
from runner.session import Session, SessionError, SessionStore
from runner.skills import run_skills, tree_skills

if TYPE_CHECKING:
    from runner.mcp.gateway import Gateway

__all__ = ["ProviderFactory", "RunRequest", "RunResult", "failed", "run_headless"]


@dataclass(frozen=True, slots=True)
class RunRequest:
    prompt: str
    # None: the resumed session's directory, else the current one.
    repo: Path | None = None
    sandbox: str = "local"
    image: str | None = None
    resume: str | None = None
    # The provider, model and sign-in left None are the resumed session's.
    settings: RunSettings = field(default_factory=RunSettings)
    # What the docker sandbox's commands may reach (`--network`; None: the
    # default), within the operator's `network_ceiling` (NEO_NETWORK).
    network: NetworkPolicy | None = None
    # `--network-methods` alone: the default's methods.
    network_methods: Methods | None = None
    network_ceiling: NetworkPolicy | None = None
    # `--setup`: "auto" detects and runs the tree's setup in a docker
    # sandbox (docs/setup.md), "none" runs none; the local sandbox never does.
    setup: Literal["auto", "none"] = "auto"
    # `--mcp-config`'s servers and what the operator allows them (NEO_MCP_*);
    # a URL server's host within the network above, whatever the sandbox.
    mcp: McpRun = NO_MCP


@dataclass(frozen=True, slots=True)
class RunResult:
    """The contract's result object, as a value."""

    is_error: bool
    result: str
    error_type: str | None
    error_message: str | None
    stop_reason: str | None
    num_turns: int
    usage: Usage
    cost_usd: float | None
    duration_ms: int
    session_id: str | None
    # The hosts the egress proxy refused; None: no proxy could (the local sandbox).
    blocked: tuple[Blocked, ...] | None = None
    # Model calls billed: the agent's turns, its subagents', compaction's and
    # the last word's (`num_turns` counts the agent's turns alone).
    model_calls: int = 0
    # Models without a known price it called (only without --max-cost), with
    # their calls: `cost_usd` leaves them out.
    unpriced: tuple[tuple[str, int], ...] = ()
    # What the docker sandbox's setup did; None: no setup phase (the local sandbox).
    setup: SetupOutcome | None = None
    # The MCP servers left out and the MCP tools called; None: no server asked for.
    mcp: McpReport | None = None

    def to_json(self) -> dict[str, JSON]:
        error: JSON = None
        if self.error_type is not None:
            error = {"type": self.error_type, "message": self.error_message or ""}
        return {
            "type": "result",
            "is_error": self.is_error,
            "result": self.result,
            "error": error,
            "stop_reason": self.stop_reason,
            "num_turns": self.num_turns,
            "usage": dict(self.usage.as_dict()),
            "cost_usd": self.cost_usd,
            "unpriced_calls": dict(self.unpriced),
            "duration_ms": self.duration_ms,
            "session_id": self.session_id,
            "network": None if self.blocked is None else {"blocked": _blocked_json(self.blocked)},
            "setup": None if self.setup is None else cast("JSON", self.setup.to_json()),
            "mcp": None if self.mcp is None else _mcp_json(self.mcp),
        }


def _mcp_json(report: McpReport) -> JSON:
    return {
        "skipped": [{"server": s.server, "reason": s.reason} for s in report.skipped],
        "calls": dict(report.calls),
    }


def _blocked_json(blocked: tuple[Blocked, ...]) -> list[JSON]:
    return [{"host": b.host, "command": b.command, "reason": b.reason} for b in blocked]


def failed(error: NeoError, started: float) -> RunResult:
    """The result of a run that could not start."""
    return RunResult(
        is_error=True,
        result="",
        error_type=error.kind,
        error_message=str(error),
        stop_reason=None,
        num_turns=0,
        usage=Usage(),
        cost_usd=None,
        duration_ms=elapsed_ms(started),
        session_id=None,
    )


async def run_headless(
    request: RunRequest,
    *,
    home: Path,
    on_event: Callable[[Event], None] | None = None,
    stop: asyncio.Event | None = None,
    make: ProviderFactory = make_provider,
) -> RunResult:
    """Run the agent once. Raises ConfigError before anything runs when the
    request cannot work; every later failure is reported in the result.

    Setting `stop` interrupts the run; the session is saved either way.
    """
    started = time.monotonic()
    store = SessionStore(home)
    previous = store.load(request.resume) if request.resume else None
    repo = _working_tree(request, previous)
    settings = _resumed(request.settings, previous)
    async with open_run(settings, make) as kit:
        # A local server too small for an agent is a configuration error.
        await prepare_provider(kit.provider)
        meta = session_meta(
            previous,
            new_id=previous.meta.id if previous else store.new_id(),
            provider=settings.provider_name,
            model=kit.provider.model,
            cwd=str(repo),
        )
        auth = settings.openai_auth
        session = RunSession(
            store,
            replace(meta, openai_auth=auth if auth != "api_key" else None),
            previous,
        )
        return await _run_in_sandbox(_Run(request, kit, session, on_event, stop, started))


async def _run_in_sandbox(it: _Run) -> RunResult:
    """The run in the sandbox it asked for, beside its MCP servers, with what they reported."""
    request, started = it.request, it.started
    repo, job_id = Path(it.session.meta.cwd), it.session.meta.id
    docker = request.sandbox == "docker"
    report = EgressReport()
    setting = None if docker and request.setup == "auto" else ()
    environment = await asyncio.to_thread(environment_for, repo, setting, repository=str(repo))
    network = _plan(request, environment.plan.ecosystems) if docker else None
    sandbox = open_environment(
        SandboxChoice(request.sandbox, request.image, image_setting="--image"),
        repo,
        job_id=job_id,
        environment=environment,
        network=network,
        report=report,
    )
    # The MCP servers start with the sandbox, on this host; a URL server's host
    # is within the run's network whichever sandbox runs the commands.
    policy = (network or _plan(request, environment.plan.ecosystems)).agent
    gateway: Gateway | None = None
    try:
        async with (
            open_gateway(request.mcp, policy, job_id=job_id) as gateway,
            sandbox as opened,
        ):
            facts = Environment(
                is_git_repo=find_git_root(repo) is not None,
                # The local sandbox enforces nothing: its commands have the network.
                network=True if network is None else access_of(network.agent),
                setup=opened.setup if docker else None,
            )
            if gateway is not None:
                await gateway.ready()
            result = await _run_agent(it, opened.box, facts, gateway)
            if gateway is not None:
                gateway.close_soon()  # the servers stop while the sandbox is removed
    except (SandboxError, McpRequired) as error:
        result = failed(error, started)
        return result if gateway is None else replace(result, mcp=gateway.report())
    if gateway is not None:
        result = replace(result, mcp=gateway.report())
    return replace(result, blocked=report.blocked, setup=facts.setup) if docker else result


@dataclass(frozen=True, slots=True)
class _Run:
    """What one `neo run` holds from its start to its result."""

    request: RunRequest
    kit: RunKit
    session: RunSession
    on_event: Callable[[Event], None] | None
    stop: asyncio.Event | None
    started: float  # time.monotonic() as the run began


def _plan(request: RunRequest, ecosystems: Sequence[str]) -> Plan:
    """The run's network: `--network` (else the detected ecosystems), within NEO_NETWORK."""
    asked = request.network
    if asked is None and request.network_methods is not None:
        asked = replace(default_policy(ecosystems), methods=request.network_methods)
    return job_plan(asked, ecosystems, request.network_ceiling)


def _resumed(settings: RunSettings, previous: Session | None) -> RunSettings:
    """`settings` with the provider, model and sign-in it leaves open taken from `previous`."""
    if previous is None:
        return settings
    return replace(
        settings,
        provider=settings.provider or previous.meta.provider,
        model=settings.model or previous.meta.model,
        # A resumed session signs in as it did, unless the request says otherwise.
        openai_auth=settings.openai_auth or previous.meta.openai_auth,
    )


async def _run_agent(
    it: _Run, box: Sandbox, environment: Environment, gateway: Gateway | None = None
) -> RunResult:
    request, kit, session = it.request, it.kit, it.session
    repo = Path(session.meta.cwd)
    # The prompt is all the requester's own: its `$name` invokes a skill.
    found = await asyncio.to_thread(tree_skills, find_git_root(repo) or repo)
    skills = run_skills(found, request=request.prompt, disabled=kit.settings.disabled_skills)
    briefing = Briefing(project_context(repo), skills, environment)
    run = kit.start(box, session, briefing, on_event=it.on_event, mcp=gateway)
    error: NeoError | None = None
    try:
        error = await bounded(
            run.send(skills.first_message(request.prompt)),
            time_limit=kit.settings.time_limit,
            stop=it.stop,
            stopped="interrupted",
            timed_out="the run did not finish within {limit:g}s (--timeout)",
        )
        if error is not None and ran_out(error) and await _tree_changed(repo):
            # The model's last word, without tools: what it did and what is left.
            await run.wrap_up(error)
    finally:
        try:
            run.save()
        except SessionError as failed_save:
            # A full disk fails the run (exit 1), as the save before a turn does.
            error = error or failed_save

    finished = run.finished
    return RunResult(
        is_error=error is not None,
        result=finished.text if finished else "",
        error_type=error.kind if error else None,
        error_message=str(error) if error else None,
        stop_reason=finished.stop_reason if finished else None,
        num_turns=run.turns,
        usage=run.usage,
        cost_usd=kit.cost(),
        unpriced=kit.unpriced(),
        duration_ms=elapsed_ms(it.started),
        session_id=session.meta.id,
        model_calls=kit.ledger.calls,
    )


async def _tree_changed(repo: Path) -> bool:
    """Whether the run left changes in its git working tree (outside one: no way to tell)."""
    if find_git_root(repo) is None:
        return False
    try:
        process = await asyncio.create_subprocess_exec(
            "git",
            "-C",
            str(repo),
            "status",
            "--porcelain",
            "--untracked-files=normal",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return False
    try:
        out, _ = await asyncio.wait_for(process.communicate(), _STATUS_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        return False
    return process.returncode == 0 and bool(out.strip())


_STATUS_TIMEOUT = 30.0


def _working_tree(request: RunRequest, previous: Session | None) -> Path:
    if request.repo is not None:
        if not request.repo.is_dir():
            raise ConfigError(f"--repo {request.repo} is not a directory")
        return request.repo.resolve()
    if previous is not None:
        repo = Path(previous.meta.cwd)
        if not repo.is_dir():
            raise ConfigError(f"the session's directory {repo} is gone (pass --repo)")
        return repo
    return Path.cwd()
