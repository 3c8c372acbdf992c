"""One job, end to end: clone on the host, the agent in a sandbox, commit and push on the host.

    result = await run(JobSpec(...), on_event=progress.apply, stop=stopped)

This module runs the steps in order and keeps what each learned; the steps
are their own modules: the spec and result (`job_spec.py`), the tree
(`checkout.py`), the thread's session (`job_session.py`), the commit and push
(`publish.py`). The data directory, a thread's session across jobs, and what is committed and
pushed: docs/architecture.md, "One job on the host".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from runner.agent import Event, Steering, TurnFinished, TurnStarted
from runner.assembly import Briefing, ProviderFactory, RunKit, open_run
from runner.budget import ran_out
from runner.checkout import check_out, job_mirrors
from runner.context import Environment, NetworkAccess
from runner.context import project_context as read_project_context
from runner.context.prompt import WORKFLOWS_DIR
from runner.context.setup_facts import access_of
from runner.errors import NeoError
from runner.fork import PROPOSING, Fork, ForkStart
from runner.git import GitError, MirrorCache, trusting
from runner.images import image_blocks
from runner.job_session import end_session, open_session, session_id_for
from runner.job_spec import JOB_SETTINGS, Ending, JobResult, JobSpec, check_spec
from runner.llm.limits import limits_for
from runner.llm.registry import make_provider
from runner.llm.types import Usage
from runner.mcp.report import McpReport, McpRequired
from runner.mcp.run import open_gateway
from runner.needed import split_needs
from runner.network import EgressReport, Plan, job_plan, may_reach
from runner.publish import Committed, has_changes, publish
from runner.review import ReviewCollector, ReviewCommentTool, ReviewDraft, commentable, place
from runner.review.prompt import review_message
from runner.run import AgentRun, RunInterrupted, bounded, elapsed_ms
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.factory import SandboxChoice, launch_sandbox, open_environment
from runner.sandbox.requests import EnvironmentRequest, Opened
from runner.sandbox.setup_files import environment_for
from runner.sandbox.setup_plan import SetupOutcome
from runner.sandbox.setup_run import SetupFailed
from runner.session import Session, SessionError, SessionStore
from runner.skills import RunSkills, ref_skills, run_skills, tree_skills
from runner.text import one_line
from runner.trash import discard

if TYPE_CHECKING:
    from runner.mcp.gateway import Gateway
    from runner.sandbox.launch import Launch

__all__ = [
    "JOB_SETTINGS",
    "WORKFLOWS_DIR",
    "Ending",
    "JobResult",
    "JobSpec",
    "ProviderFactory",
    "run",
    "session_id_for",
]

# The most of a review's diff a job holds (see `_prepare_and_run_agent`).
_HELD_DIFF_CHARS = 5_000_000

_NOTHING_COMMITTED = Committed()

log = logging.getLogger("neo.job")


@dataclass
class _Progress:
    """What the job learned before and while the agent ran, kept even when it is cut short."""

    started: float  # time.monotonic() when the job started
    session_id: str | None = None
    start: str | None = None  # the commit the work branch was at before the agent
    fork: ForkStart | None = None  # a fork's head the work started from
    error: NeoError | None = None  # how the agent's turn failed
    run: AgentRun | None = None  # the agent's run, once it started
    wrap_up_failed: str | None = None  # why the last word after a budget is missing
    # A review job's: the diff under review, and the comments drafted on it.
    diff: str = ""
    diff_chars: int = 0  # the whole diff's length, of which `diff` is at most the start
    review: ReviewCollector | None = None
    # What the egress proxy refused, once the sandbox is gone; the network's notes.
    egress: EgressReport = field(default_factory=EgressReport)
    network_notes: tuple[str, ...] = ()
    # The MCP servers left out, the MCP tools called.
    mcp: McpReport = field(default_factory=McpReport)
    setup: SetupOutcome | None = None

    @property
    def finished(self) -> TurnFinished | None:
        return self.run.finished if self.run else None

    @property
    def session(self) -> Session | None:
        """As last saved, while the job's mark is open."""
        return self.run.session if self.run else None

    @property
    def compacted(self) -> bool:
        """Whether the agent compacted the conversation during the job."""
        return self.run.compacted if self.run else False


@dataclass(frozen=True, slots=True)
class _Job:
    """What each step of one job reads, made once the run is open: the spec, the
    run's kit, the working tree, what the job learns, the caller's event sink
    and steering."""

    spec: JobSpec
    kit: RunKit
    tree: Path
    progress: _Progress
    on_event: Callable[[Event], None] | None
    steering: Steering | None = None


async def run(
    spec: JobSpec,
    *,
    on_event: Callable[[Event], None] | None = None,
    stop: asyncio.Event | None = None,
    provider_factory: ProviderFactory = make_provider,
    cache: MirrorCache | None = None,
    project_context: str | None = None,
    steering: Steering | None = None,
) -> JobResult:
    """Run the job; failures are reported in the result, bar ConfigError for a bad spec.

    `project_context` replaces the AGENTS.md context read from the tree (a
    pull request job passes the default branch's, so the PR cannot rewrite
    Neo's instructions). Setting `stop` cancels the job (conclusion
    "cancelled"); the time limit covers everything up to the end of the
    agent's run. `steering` is what people watching the job tell its agent
    between turns.
    """
    progress = _Progress(started=time.monotonic())
    check_spec(spec)
    if spec.pull_request is not None and not spec.review and spec.fork is None:
        # Work from a pull request's head is work on a fork's code: nothing of it
        # is pushed unless the caller says so (`Fork.push`).
        spec = replace(spec, fork=Fork())
    workspace = spec.data_dir / "workspaces" / spec.job_id
    async with open_run(spec.settings, provider_factory) as kit:
        job = _Job(spec, kit, workspace, progress, on_event, steering)
        try:
            async with job_mirrors(spec, cache) as mirrors:
                # A tree an earlier attempt left is deleted with the trash.
                await asyncio.to_thread(discard, workspace, spec.data_dir / "trash")
                await asyncio.to_thread(workspace.parent.mkdir, parents=True, exist_ok=True)
                work = _prepare_and_run_agent(job, mirrors, project_context)
                error = await bounded(
                    work,
                    time_limit=spec.settings.time_limit,
                    stop=stop,
                    stopped="the job was stopped",
                    timed_out="the job did not finish within its time limit of {limit:g}s",
                )
                error = error or progress.error
                if spec.review:
                    # Read-only: nothing is committed or pushed, whatever the tree holds.
                    result = _review_result(job, error)
                elif error is None:
                    result = await _publish(job)
                elif ran_out(error) and await _has_changes(job):
                    # Out of turns, time, money or window with work in the tree:
                    # the model's last word, then the work as an incomplete PR.
                    await _wrap_up(job, error)
                    result = await _publish(job, error=error)
                else:
                    result = _result(job, error=error)
        except (GitError, SandboxError, SessionError) as error:
            result = _result(job, error=error)
        finally:
            # Deleting the tree takes seconds: after the result, in the background.
            await asyncio.to_thread(discard, workspace, spec.data_dir / "trash")
    if result.error_message is not None:
        # Everyone who reads the result may see the message; the host's layout is not theirs.
        hidden = _host_paths(spec, cache)
        result = replace(result, error_message=_without_paths(result.error_message, hidden))
    # Only now, with the branch pushed or the work dropped, does the session move on.
    await asyncio.to_thread(
        functools.partial(end_session, compacted=progress.compacted),
        spec,
        progress.session,
        result,
    )
    return result


async def _prepare_and_run_agent(
    job: _Job, mirrors: MirrorCache, project_context: str | None
) -> None:
    spec = job.spec
    # The engine is checked and the egress proxy's container started while
    # the tree is cloned: the plan and the environment need the tree, they do not.
    async with launch_sandbox(
        SandboxChoice(spec.sandbox, spec.image),
        job_id=spec.job_id,
        network=may_reach(spec.network, spec.network_ceiling),
    ) as launch:
        await _check_out_and_run_agent(job, mirrors, project_context, launch)


async def _check_out_and_run_agent(
    job: _Job, mirrors: MirrorCache, project_context: str | None, launch: Launch | None
) -> None:
    spec, tree, progress = job.spec, job.tree, job.progress
    checked_out = await check_out(spec, tree, mirrors)
    progress.start, progress.fork = checked_out.start, checked_out.fork
    if spec.review:
        diff = checked_out.diff
        # What the model is shown and the lines it may comment on; a comment
        # past it goes into the summary. Memory stays bounded by it.
        progress.diff, progress.diff_chars = diff[:_HELD_DIFF_CHARS], len(diff)
        progress.review = ReviewCollector(commentable(progress.diff))
    _mark(spec, "checkout_done")
    project = project_context
    if project is None:
        project = await asyncio.to_thread(read_project_context, tree)
    skills = await _skills(spec, tree)
    request = await asyncio.to_thread(
        environment_for,
        tree,
        spec.setup,
        repository=spec.repo_url,
        # A fork's code runs in setup: what it prepares is this job's alone.
        share=spec.fork is None,
        bounds=spec.environment_bounds,
    )
    # Unset, the network is what the detected setup needs.
    network = job_plan(spec.network, request.plan.ecosystems, spec.network_ceiling)
    progress.network_notes = (*spec.network_notes, *network.notes)
    try:
        # The MCP servers start while the sandbox does, on the host, within its network.
        async with (
            open_gateway(spec.mcp, network.agent, job_id=spec.job_id) as gateway,
            _sandbox(job, request, network, launch) as opened,
        ):
            _mark(spec, "sandbox_ready")
            progress.setup = opened.setup
            facts = Environment(
                is_git_repo=True,
                network=_network_fact(spec, network),
                setup=opened.setup,
                pull_request=True,
                allow_workflow_edits=spec.allow_workflow_edits,
            )
            briefing = Briefing(project, skills, facts, spec.system_extra)
            try:
                if gateway is not None:
                    await gateway.ready()
                    _mark(spec, "mcp_ready", skipped=[s.server for s in gateway.skipped])
                await _run_agent(job, opened.box, briefing, gateway)
            finally:
                if gateway is not None:
                    progress.mcp = gateway.report()
                    # The servers stop while the sandbox is removed.
                    gateway.close_soon()
        _mark(spec, "sandbox_closed")
    except SetupFailed as error:
        # The report shows the command that failed and its last lines.
        progress.setup = error.outcome
        raise
    except McpRequired as error:
        # A job's failure, in one line: the result says it, as any other.
        progress.error = error


async def _skills(spec: JobSpec, tree: Path) -> RunSkills:
    if spec.skills_branch is not None:
        ref = f"refs/remotes/origin/{spec.skills_branch}"
        found = await ref_skills(tree, ref, label=spec.skills_branch)
    else:
        found = await asyncio.to_thread(tree_skills, tree)
    skills = run_skills(found, request=spec.invocation, disabled=spec.settings.disabled_skills)
    for skipped in skills.discovery.skipped:
        log.info("job %s: skill %s skipped: %s", spec.job_id, skipped.path, skipped.reason)
    return skills


def _mark(spec: JobSpec, event: str, **fields: object) -> None:
    """A log line saying where the job is, with the unix time (bench/e2e.py reads them)."""
    line = {"event": event, "ts": round(time.time(), 3), "job": spec.job_id, **fields}
    log.info(json.dumps(line))


@contextlib.asynccontextmanager
async def _sandbox(
    job: _Job, request: EnvironmentRequest, network: Plan, launch: Launch | None
) -> AsyncIterator[Opened]:
    """The spec's sandbox on the job's tree, its setup done (or a prepared
    environment reused), finishing the start `launch` began; the job's egress
    report gets what its proxy refused."""
    spec = job.spec
    async with open_environment(
        SandboxChoice(spec.sandbox, spec.image),
        job.tree,
        job_id=spec.job_id,
        environment=request,
        network=network,
        report=job.progress.egress,
        # The job's own checkout, deleted after it: given, not lent.
        give_tree=True,
        launch=launch,
    ) as opened:
        yield opened


def _network_fact(spec: JobSpec, network: Plan) -> NetworkAccess | bool:
    """What the prompt says the agent's commands reach: the local sandbox enforces nothing."""
    return access_of(network.agent) if spec.sandbox == "docker" else True


async def _run_agent(
    job: _Job, box: Sandbox, briefing: Briefing, gateway: Gateway | None = None
) -> None:
    spec, kit, progress, on_event = job.spec, job.kit, job.progress, job.on_event
    store = SessionStore(spec.data_dir)
    session_id = session_id_for(spec.session_key) if spec.session_key else store.new_id()
    progress.session_id = session_id
    session = open_session(spec, store, session_id, model=kit.provider.model, tree=job.tree)
    asked: list[bool] = []  # the first model call of this job is logged

    def observe(event: Event) -> None:
        if isinstance(event, TurnStarted) and not asked:
            asked.append(True)
            _mark(spec, "first_model_call")
        if on_event is not None:
            on_event(event)

    if briefing.skills.invoked:
        _mark(spec, "skills_invoked", skills=list(briefing.skills.names))
    # Saved into the thread's session file, under this job's open mark; held
    # once compacted, until the job ends (runner/job_session.py says why).
    agent_run = kit.start(
        box,
        session,
        briefing,
        on_event=observe,
        tools=(ReviewCommentTool(progress.review),) if progress.review else (),
        mcp=gateway,
        steering=job.steering,
    )
    progress.run = agent_run
    try:
        prompt = spec.prompt
        if spec.review:
            diff = review_message(progress.diff, total_chars=progress.diff_chars)
            prompt = f"{prompt}\n\n{diff}"
        elif spec.fork is not None and not spec.fork.push:
            prompt = f"{prompt}\n\n{PROPOSING}"
        vision = limits_for(kit.provider.model).vision
        progress.error = await agent_run.send(
            briefing.skills.first_message(prompt), image_blocks(spec.images, vision=vision)
        )
    finally:
        agent_run.save()


async def _has_changes(job: _Job) -> bool:
    """Whether the agent left work in the tree (what would be committed)."""
    progress = job.progress
    if progress.start is None or progress.run is None:
        return False  # the agent never ran: nothing of its to keep
    return await has_changes(job.tree, progress.start)


async def _publish(job: _Job, *, error: NeoError | None = None) -> JobResult:
    """The work committed, pushed or proposed (`runner.publish`), as the job's result.

    With `error` (a budget that ran out), what is pushed is incomplete work.
    """
    spec, progress = job.spec, job.progress
    assert progress.start is not None
    summary = progress.finished.text if progress.finished else ""
    # The sandbox is gone: only this host's git writes the tree now, so its
    # check (a git process, a config rewritten, a walk of the tree) is done once.
    async with trusting(job.tree):
        done = await publish(
            spec, job.tree, start=progress.start, summary=summary, fork=progress.fork
        )
    _mark(spec, "published", changed=done.changed)
    conclusion: Ending = "changed" if done.changed else "no_changes"
    if not done.changed and error is not None:
        conclusion = "failed"
    return _result(job, error=error, conclusion=conclusion, done=done)


async def _wrap_up(job: _Job, error: NeoError) -> None:
    """Ask the model, without tools, for the summary of work a budget cut short.

    Bounded on its own (the job's time may be what ran out); should it fail,
    the pull request says what the agent's last words said.
    """
    progress = job.progress
    assert progress.run is not None
    failure = await progress.run.wrap_up(error)
    if failure is not None:
        log.warning("job %s: no wrap-up summary: %s", job.spec.job_id, failure)
        progress.wrap_up_failed = one_line(failure) or "it timed out"
        return
    with contextlib.suppress(SessionError):
        progress.run.save()


def _review_result(job: _Job, error: NeoError | None) -> JobResult:
    """A review job's result: its review when the agent finished, placed on the diff."""
    progress = job.progress
    if error is not None or progress.review is None or progress.finished is None:
        return _result(job, error=error)
    inline, outside = place(progress.review.comments, progress.review.positions)
    review = ReviewDraft(summary=progress.finished.text, comments=inline, folded=outside)
    done = _result(job, conclusion="no_changes")
    return replace(done, review=review)


def _result(
    job: _Job,
    *,
    error: NeoError | None = None,
    conclusion: Ending | None = None,
    done: Committed = _NOTHING_COMMITTED,
) -> JobResult:
    spec, kit, progress = job.spec, job.kit, job.progress
    finished = progress.finished
    usage = finished.usage if finished else Usage()
    if conclusion is None:
        conclusion = "cancelled" if isinstance(error, RunInterrupted) else "failed"
    models, fallback_reason = kit.models()
    needs = split_needs(finished.text if finished else "")
    return JobResult(
        conclusion=conclusion,
        branch=spec.work_branch,
        commit=done.commit,
        subject=done.subject,
        diffstat=done.stat,
        blocked_paths=done.blocked,
        left_out=done.left_out,
        generated=done.generated,
        network_blocked=progress.egress.blocked,
        network_notes=progress.network_notes,
        mcp=progress.mcp,
        setup=progress.setup,
        summary=needs.summary,
        needed=needs.needed,
        error_kind=error.kind if error else None,
        error_message=one_line(error) if error else None,
        usage=usage,
        cost_usd=kit.cost(),
        unpriced=kit.unpriced(),
        models=models,
        fallback_reason=fallback_reason,
        num_turns=kit.ledger.calls,
        wrap_up_failed=progress.wrap_up_failed,
        duration_ms=elapsed_ms(progress.started),
        session_id=progress.session_id,
        fork=done.fork,
    )


def _host_paths(spec: JobSpec, cache: MirrorCache | None) -> list[tuple[str, str]]:
    """The host's directories a message may name, with what replaces each, longest first."""
    roots = [(spec.data_dir, "<data dir>")]
    if cache is not None:
        roots.append((cache.root, "<mirrors>"))
    pairs = {
        str(form): placeholder
        for root, placeholder in roots
        for form in (root.absolute(), Path(os.path.realpath(root)))
    }
    return sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)


def _without_paths(text: str, hidden: Sequence[tuple[str, str]]) -> str:
    """`text` with each hidden directory (not a longer name it prefixes) replaced."""
    for path, placeholder in hidden:
        if path != os.sep:
            text = re.sub(re.escape(path) + r"(?![^/\s'\"`:;,)\]])", placeholder, text)
    return text
