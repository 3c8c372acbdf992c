"""One headless run of the agent on a working tree: what `neo run` does.

The working tree, its sandbox and the session to resume are this module's;
the run itself is `runner.run`'s. The outcome is reduced to a `RunResult`;
rendering belongs to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from runner.agent import Event
from runner.budget import RunBudget, ran_out
from runner.context import build_system_prompt, find_git_root, project_context
from runner.errors import ConfigError, NeoError
from runner.llm.fallback import with_fallback
from runner.llm.pricing import cost_usd
from runner.llm.provider import Provider, close_provider, prepare_provider
from runner.llm.registry import DEFAULT_PROVIDER, make_provider
from runner.llm.types import JSON, Effort, Usage
from runner.run import (
    AgentRun,
    ProviderFactory,
    bounded,
    elapsed_ms,
    make_agent,
    session_meta,
)
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.factory import open_sandbox
from runner.session import Session, SessionError, SessionMeta, SessionStore
from runner.skills import run_skills, tree_skills
from runner.subagent import Placement, SubagentSettings, Supervisor, children_provider
from runner.tools.registry import editing_tools

__all__ = ["ProviderFactory", "RunRequest", "RunResult", "failed", "run_headless"]


@dataclass(frozen=True, slots=True)
class RunRequest:
    prompt: str
    # None: the resumed session's directory, else the current one.
    repo: Path | None = None
    sandbox: str = "local"
    image: str | None = None
    # None: the resumed session's choice, else the default.
    provider: str | None = None
    model: str | None = None
    # (provider, model) to turn to when the first is unavailable.
    fallback: tuple[str, str | None] | None = None
    # How the openai provider signs in: "api_key" or "subscription".
    openai_auth: str | None = None
    max_turns: int = 100
    timeout: float | None = None
    resume: str | None = None
    # How hard the model thinks; None: not at all.
    effort: Effort | None = None
    # US dollars the run's model calls may cost; None: no limit.
    max_cost_usd: float | None = None
    # Skills left out of the catalog and never invoked (`--no-skill`).
    disabled_skills: tuple[str, ...] = ()
    subagents: SubagentSettings = field(default_factory=SubagentSettings)


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
            "duration_ms": self.duration_ms,
            "session_id": self.session_id,
        }


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
    provider_name = request.provider or (previous.meta.provider if previous else DEFAULT_PROVIDER)
    model = request.model or (previous.meta.model if previous else None)
    # A resumed session signs in as it did, unless the request says otherwise.
    openai_auth = request.openai_auth or (previous.meta.openai_auth if previous else None)
    make_one = functools.partial(make, openai_auth=openai_auth or "api_key")
    provider = with_fallback(
        make_one,
        provider_name,
        model,
        request.fallback,
    )
    budget = RunBudget(
        model=provider.model,
        provider=provider.name,
        max_turns=request.max_turns,
        time_limit=request.timeout,
        max_cost_usd=request.max_cost_usd,
    )
    meta = session_meta(
        previous,
        new_id=previous.meta.id if previous else store.new_id(),
        provider=provider_name,
        model=provider.model,
        cwd=str(repo),
    )
    meta = replace(meta, openai_auth=openai_auth if openai_auth != "api_key" else None)
    try:
        # A local server too small for an agent is a configuration error.
        await prepare_provider(provider)
        children = children_provider(
            request.subagents,
            provider,
            make_one,
            provider_name,
        )
    except ConfigError:
        await close_provider(provider)
        raise
    sandbox = open_sandbox(
        request.sandbox, repo, job_id=meta.id, image=request.image, image_setting="--image"
    )
    supervisor = (
        Supervisor(
            request.subagents,
            children,
            cost_limit=request.max_cost_usd,
            effort=request.effort,
            placement=Placement(store, meta.id),
        )
        if request.subagents.enabled
        else None
    )
    try:
        async with sandbox as box:
            return await _run_agent(
                request,
                box,
                provider,
                store,
                meta,
                previous,
                on_event,
                stop,
                started,
                budget,
                supervisor,
            )
    except SandboxError as error:
        return failed(error, started)
    finally:
        if children is not provider:
            await close_provider(children)
        await close_provider(provider)


async def _run_agent(
    request: RunRequest,
    sandbox: Sandbox,
    provider: Provider,
    store: SessionStore,
    meta: SessionMeta,
    previous: Session | None,
    on_event: Callable[[Event], None] | None,
    stop: asyncio.Event | None,
    started: float,
    budget: RunBudget,
    supervisor: Supervisor | None,
) -> RunResult:
    repo = Path(meta.cwd)
    # The prompt is all the requester's own: its `$name` invokes a skill.
    found = await asyncio.to_thread(tree_skills, find_git_root(repo) or repo)
    skills = run_skills(found, request=request.prompt, disabled=request.disabled_skills)
    meta = replace(meta, skills=tuple(dict.fromkeys((*meta.skills, *skills.names))))
    edit_tool, shell_tool = editing_tools(provider.model)
    system = build_system_prompt(
        workdir=sandbox.root,
        project=project_context(repo),
        skills=skills.catalog,
        is_git_repo=find_git_root(repo) is not None,
        network=request.sandbox != "docker",
        max_turns=request.max_turns,
        time_limit=request.timeout,
        edit_tool=edit_tool,
        shell_tool=shell_tool,
    )
    agent = make_agent(
        provider,
        sandbox,
        system=system,
        previous=previous,
        max_turns=request.max_turns,
        effort=request.effort,
        budget=budget,
        skills=skills.discovery.skills,
        subagents=supervisor,
    )
    run = AgentRun(agent, store, meta, on_event=on_event)
    if skills.invoked and on_event is not None:
        on_event(skills.notice())
    error: NeoError | None = None
    try:
        error = await bounded(
            run.send(skills.first_message(request.prompt)),
            time_limit=request.timeout,
            stop=stop,
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
        cost_usd=cost_usd(provider.model, run.usage, provider.name),
        duration_ms=elapsed_ms(started),
        session_id=meta.id,
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
