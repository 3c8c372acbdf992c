"""One job, end to end: clone on the host, the agent in a sandbox, commit and push on the host.

    result = await run(JobSpec(...), on_event=progress.apply, stop=stopped)

The data directory, a thread's session across jobs, and what is committed and
pushed: docs/architecture.md, "One job on the host".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

# Host-side git runner.git has no public function for yet (listing and
# reverting paths, merge-base) runs through its hardened internals.
from runner import git as host_git
from runner.agent import Event, TurnFinished, TurnStarted
from runner.assembly import Briefing, ProviderFactory, RunKit, RunSession, RunSettings, open_run
from runner.budget import ran_out
from runner.closing import inert_closing_keywords
from runner.context import Environment, NetworkAccess
from runner.context import project_context as read_project_context
from runner.context.prompt import WORKFLOWS_DIR
from runner.context.setup_facts import access_of
from runner.errors import ConfigError, NeoError
from runner.fork import (
    PROPOSING,
    Fork,
    ForkResult,
    ForkStart,
    checkout_fork_head,
    fork_note,
    proposed,
    start_on_fork,
)
from runner.git import (
    DiffStat,
    GitError,
    MirrorCache,
    checkout_branch,
    clone_branch,
    commit_all,
    diffstat,
    fetch_pull_request,
    push,
)
from runner.llm.registry import make_provider
from runner.llm.types import Message, Text, Usage
from runner.needed import split_needs
from runner.network import Blocked, EgressReport, NetworkPolicy, Plan, job_plan
from runner.review import ReviewCollector, ReviewCommentTool, ReviewDraft, commentable, place
from runner.review.prompt import review_message
from runner.run import AgentRun, RunInterrupted, bounded, elapsed_ms, session_meta
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.factory import SANDBOXES, open_environment
from runner.sandbox.requests import Bounds, EnvironmentRequest, Opened
from runner.sandbox.setup_files import environment_for
from runner.sandbox.setup_plan import SetupOutcome
from runner.sandbox.setup_run import SetupFailed
from runner.session import (
    Session,
    SessionError,
    SessionStore,
    before_job,
    start_job,
    utc_timestamp,
)
from runner.skills import RunSkills, ref_skills, run_skills, tree_skills
from runner.subject import CommitText
from runner.text import one_line

__all__ = [
    "WORKFLOWS_DIR",
    "Conclusion",
    "JobResult",
    "JobSpec",
    "ProviderFactory",
    "run",
    "session_id_for",
]

Conclusion = Literal["changed", "no_changes", "failed", "cancelled"]

# A job's run, unless its spec says otherwise: thirty minutes, thinking.
JOB_SETTINGS = RunSettings(time_limit=30 * 60.0, effort="medium")

# The most of a review's diff a job holds (see `_prepare_and_run_agent`).
_HELD_DIFF_CHARS = 5_000_000

_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

log = logging.getLogger("neo.job")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """Everything one job needs; the caller (bot or action) builds it."""

    job_id: str
    # https (http for local test servers) clone URL, without credentials.
    repo_url: str
    # For clone, fetch and push on the host only; never in repr, the sandbox
    # or the model's context.
    token: str = field(repr=False)
    base_branch: str
    # Created from the base (or the pull request head) unless it exists on
    # the remote, in which case the job continues it.
    work_branch: str
    # The task text, built by the caller.
    prompt: str
    data_dir: Path
    # The pull request whose head (refs/pull/N/head) a review checks out, or
    # whose fork's code a task works on (with `fork`).
    pull_request: int | None = None
    # A fork's pull request: what of its code may reach the base repository,
    # and how much of it is checked out (runner/fork.py).
    fork: Fork | None = None
    system_extra: str = ""
    # The model, its limits (the time limit covers everything up to the end
    # of the agent's run), skills left out, subagents.
    settings: RunSettings = JOB_SETTINGS
    sandbox: str = "docker"
    image: str | None = None
    # The repository's setup commands; None: detected from its files
    # (docs/setup.md), () none at all.
    setup: tuple[str, ...] | None = None
    # How many prepared environments this host keeps, and how long.
    environment_bounds: Bounds = field(default_factory=Bounds)
    # What the agent's commands may reach, as the repository's default branch
    # asks (None: unset, the ecosystems setup detected), within the operator's
    # `network_ceiling` (NEO_NETWORK; None: no bound); `network_notes` say how
    # the repository's setting was read.
    network: NetworkPolicy | None = None
    network_ceiling: NetworkPolicy | None = None
    network_notes: tuple[str, ...] = ()
    # Workflows run with the repository's secrets: the agent may not write
    # under WORKFLOWS_DIR unless the repository's configuration says so.
    allow_workflow_edits: bool = False
    # (name, email) of the person who asked: the commit's Co-authored-by.
    co_author: tuple[str, str] | None = None
    bot_name: str = "neo[bot]"
    bot_email: str = "neo[bot]@users.noreply.github.com"
    # The thread (e.g. "owner/repo#12") whose conversation this job continues.
    session_key: str | None = None
    # The commit's subject is the model's summary line (`runner.subject`);
    # this says what follows it, and what stands in when there is none.
    commit: CommitText = field(default_factory=CommitText)
    # The requester's own words inside `prompt` (a trigger comment, a
    # schedule's prompt): only there do `$name` and `/name` invoke a skill.
    invocation: str = ""
    # Read the repository's skills from this branch of the remote, not the
    # tree: a pull request job's default branch, so the PR cannot rewrite them.
    skills_branch: str | None = None
    # A review of pull request `pull_request`: its head is checked out, the
    # model gets the diff against the base and the `review_comment` tool, and
    # nothing is committed or pushed; the result carries the review.
    review: bool = False


@dataclass(frozen=True, slots=True)
class JobResult:
    conclusion: Conclusion
    branch: str
    commit: str | None = None
    # The commit's subject: what the change does, in a line (the pull request's title).
    subject: str | None = None
    diffstat: DiffStat | None = None
    # Paths under .github/workflows/ the agent changed and the host reverted.
    blocked_paths: tuple[str, ...] = ()
    # Directories holding a git repository of their own, left out of the
    # commit: staged, each would be a gitlink to a commit no remote has.
    left_out: tuple[str, ...] = ()
    # Untracked caches and build output left out of the commit: each kind
    # (`__pycache__/`, `*.pyc`, ...) with how many files.
    generated: tuple[tuple[str, int], ...] = ()
    # The hosts the egress proxy refused, each with the command that tried;
    # what the job's network setting became (the operator's bound, an old key).
    network_blocked: tuple[Blocked, ...] = ()
    network_notes: tuple[str, ...] = ()
    # What the setup phase did (None: the job ended before it).
    setup: SetupOutcome | None = None
    # The setup that failed the job: what ran up to the command that failed, and
    # that command's last lines, for the report (None: setup did not fail it).
    failed_setup: SetupOutcome | None = None
    summary: str = ""
    # What the agent said it lacked (a tool, a permission, a host, a secret):
    # the summary's `Needed:` lines, taken out of it (runner/needed.py).
    needed: tuple[str, ...] = ()
    error_kind: str | None = None
    error_message: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    # The models that did the work, in order: a fallback's after the first's.
    models: tuple[str, ...] = ()
    # Why the fallback took over: the first provider's last error.
    fallback_reason: str | None = None
    # Model calls billed: the agent's, its subagents', compaction's, the last word's.
    num_turns: int = 0
    # Why the model's last word after a budget ran out is missing, when it is.
    wrap_up_failed: str | None = None
    duration_ms: int = 0
    session_id: str | None = None
    # A review job's review, with its comments placed on the diff.
    review: ReviewDraft | None = None
    # A job on a fork's pull request: the fork's head it worked from, what of the
    # fork was left out of the push, or the change it proposes instead of pushing.
    fork: ForkResult | None = None

    @property
    def changed(self) -> bool:
        return self.conclusion == "changed"

    @property
    def incomplete(self) -> bool:
        """A budget stopped the agent, and its work so far was pushed (`error_*` say which)."""
        return self.changed and self.error_kind is not None


def session_id_for(key: str) -> str:
    """The session id of thread `key`: readable, and a hash so distinct keys never collide."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", key).strip("-")[:60] or "thread"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{slug}-{digest}"


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
    setup: SetupOutcome | None = None
    failed_setup: SetupOutcome | None = None

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


async def run(
    spec: JobSpec,
    *,
    on_event: Callable[[Event], None] | None = None,
    stop: asyncio.Event | None = None,
    provider_factory: ProviderFactory = make_provider,
    cache: MirrorCache | None = None,
    project_context: str | None = None,
) -> JobResult:
    """Run the job; failures are reported in the result, bar ConfigError for a bad spec.

    `project_context` replaces the AGENTS.md context read from the tree (a
    pull request job passes the default branch's, so the PR cannot rewrite
    Neo's instructions). Setting `stop` cancels the job (conclusion
    "cancelled"); the time limit covers everything up to the end of the
    agent's run.
    """
    progress = _Progress(started=time.monotonic())
    _check(spec)
    if spec.pull_request is not None and not spec.review and spec.fork is None:
        # Work from a pull request's head is work on a fork's code: nothing of it
        # is pushed unless the caller says so (`Fork.push`).
        spec = replace(spec, fork=Fork())
    workspace = spec.data_dir / "workspaces" / spec.job_id
    async with open_run(spec.settings, provider_factory) as kit:
        try:
            async with _mirrors(spec, cache) as mirrors:
                await asyncio.to_thread(_remove, workspace)
                await asyncio.to_thread(workspace.parent.mkdir, parents=True, exist_ok=True)
                work = _prepare_and_run_agent(
                    spec, workspace, mirrors, kit, project_context, progress, on_event
                )
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
                    result = _review_result(spec, kit, progress, error)
                elif error is None:
                    result = await _publish(spec, workspace, kit, progress)
                elif ran_out(error) and await _has_changes(workspace, progress):
                    # Out of turns, time, money or window with work in the tree:
                    # the model's last word, then the work as an incomplete PR.
                    await _wrap_up(spec, progress, error)
                    result = await _publish(spec, workspace, kit, progress, error=error)
                else:
                    result = _result(spec, kit, progress, error=error)
        except (GitError, SandboxError, SessionError) as error:
            result = _result(spec, kit, progress, error=error)
        finally:
            await asyncio.to_thread(_remove, workspace)
    if result.error_message is not None:
        # Everyone who reads the result may see the message; the host's layout is not theirs.
        hidden = _host_paths(spec, cache)
        result = replace(result, error_message=_without_paths(result.error_message, hidden))
    # Only now, with the branch pushed or the work dropped, does the session move on.
    await asyncio.to_thread(
        functools.partial(_end_session, compacted=progress.compacted),
        spec,
        progress.session,
        result,
    )
    return result


def _check(spec: JobSpec) -> None:
    if not _ID_RE.fullmatch(spec.job_id):
        raise ConfigError(f"invalid job id {spec.job_id!r}: use letters, digits, '.', '_', '-'")
    if spec.sandbox not in SANDBOXES:
        raise ConfigError(f"unknown sandbox {spec.sandbox!r} (one of: {', '.join(SANDBOXES)})")
    if spec.sandbox == "local" and spec.image is not None:
        raise ConfigError("a sandbox image applies to the docker sandbox only")
    settings = spec.settings
    if settings.max_turns < 1:
        raise ConfigError("max turns must be at least 1")
    if settings.time_limit is None or not settings.time_limit > 0:
        raise ConfigError("the time limit must be positive")
    if settings.max_cost_usd is not None and not 0 < settings.max_cost_usd < float("inf"):
        raise ConfigError("the cost limit must be a positive number of US dollars")
    if spec.pull_request is not None and spec.pull_request < 1:
        raise ConfigError(f"not a pull request number: {spec.pull_request}")
    if spec.review and spec.pull_request is None:
        raise ConfigError("a review job needs the pull request to review")
    if spec.fork is not None and spec.pull_request is None:
        raise ConfigError("a job on a fork needs the pull request it comes from")
    if not spec.prompt.strip():
        raise ConfigError("the job has no prompt")


@contextlib.asynccontextmanager
async def _mirrors(spec: JobSpec, cache: MirrorCache | None) -> AsyncIterator[MirrorCache]:
    if cache is not None:
        yield cache
        return
    # A cache of its own lives for one job only: a spare tree would be wasted.
    async with MirrorCache(spec.data_dir / "mirrors", spare_trees=False) as own:
        yield own


async def _prepare_and_run_agent(
    spec: JobSpec,
    tree: Path,
    mirrors: MirrorCache,
    kit: RunKit,
    project_context: str | None,
    progress: _Progress,
    on_event: Callable[[Event], None] | None,
) -> None:
    if spec.review:
        progress.start, diff = await _checkout_review(spec, tree, mirrors)
        # What the model is shown and the lines it may comment on; a comment
        # past it goes into the summary. Memory stays bounded by it.
        progress.diff, progress.diff_chars = diff[:_HELD_DIFF_CHARS], len(diff)
        progress.review = ReviewCollector(commentable(progress.diff))
    elif spec.fork is not None:
        assert spec.pull_request is not None
        progress.start, progress.fork = await start_on_fork(
            tree,
            spec.pull_request,
            spec.fork,
            url=spec.repo_url,
            token=spec.token,
            cache=mirrors,
            base_branch=spec.base_branch,
            work_branch=spec.work_branch,
            author=(spec.bot_name, spec.bot_email),
        )
    else:
        progress.start = await _checkout(spec, tree, mirrors)
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
        async with _sandbox(spec, tree, request, network, progress.egress) as opened:
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
            await _run_agent(spec, kit, opened.box, tree, briefing, progress, on_event)
    except SetupFailed as error:
        # The report shows the command that failed and its last lines.
        progress.failed_setup = error.outcome
        raise


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


async def _checkout(spec: JobSpec, tree: Path, mirrors: MirrorCache) -> str:
    """Clone and put the work branch in `tree`; the commit it starts from."""
    # An existing work branch (a follow-up, a pull request's own branch, a
    # schedule's) is continued; otherwise it starts from the base. (A fork's
    # pull request: `_checkout_fork`.)
    start, continued = await clone_branch(
        spec.repo_url,
        tree,
        token=spec.token,
        cache=mirrors,
        branch=spec.work_branch,
        base=spec.base_branch,
    )
    if continued:
        return start
    await checkout_branch(tree, spec.work_branch)
    return start


async def _checkout_review(spec: JobSpec, tree: Path, mirrors: MirrorCache) -> tuple[str, str]:
    """The pull request's head in `tree`, fetched on the host (a fork's within its
    limits), and its diff from where it left the base (what GitHub shows as the PR's diff)."""
    assert spec.pull_request is not None
    await clone_branch(
        spec.repo_url,
        tree,
        token=spec.token,
        cache=mirrors,
        branch=spec.base_branch,
        base=spec.base_branch,
    )
    base = f"refs/remotes/origin/{spec.base_branch}"
    if spec.fork is not None:
        head = await checkout_fork_head(
            tree,
            spec.pull_request,
            fork=spec.fork,
            base=base,
            branch=spec.work_branch,
            url=spec.repo_url,
            token=spec.token,
        )
    else:
        head = await fetch_pull_request(
            tree, spec.pull_request, url=spec.repo_url, token=spec.token, branch=spec.work_branch
        )
    fork_point = (await host_git.run_local(tree, "merge-base", base, head)).decode().strip()
    diff = await host_git.run_local(
        tree, "diff", "--no-color", "--no-ext-diff", "--no-renames", fork_point, head, "--"
    )
    return head, diff.decode(errors="replace")


@contextlib.asynccontextmanager
async def _sandbox(
    spec: JobSpec,
    tree: Path,
    request: EnvironmentRequest,
    network: Plan,
    report: EgressReport,
) -> AsyncIterator[Opened]:
    """The spec's sandbox on `tree`, its setup done (or a prepared environment
    reused); `report` gets the requests its egress proxy refused."""
    async with open_environment(
        spec.sandbox,
        tree,
        job_id=spec.job_id,
        image=spec.image,
        environment=request,
        network=network,
        report=report,
    ) as opened:
        yield opened


def _network_fact(spec: JobSpec, network: Plan) -> NetworkAccess | bool:
    """What the prompt says the agent's commands reach: the local sandbox enforces nothing."""
    return access_of(network.agent) if spec.sandbox == "docker" else True


async def _run_agent(
    spec: JobSpec,
    kit: RunKit,
    box: Sandbox,
    tree: Path,
    briefing: Briefing,
    progress: _Progress,
    on_event: Callable[[Event], None] | None,
) -> None:
    store = SessionStore(spec.data_dir)
    session_id = session_id_for(spec.session_key) if spec.session_key else store.new_id()
    progress.session_id = session_id
    previous = store.load(session_id) if store.path(session_id).is_file() else None
    if previous is not None and _drops_last_job(previous, spec.job_id):
        previous = before_job(previous)
    meta = session_meta(
        previous,
        new_id=session_id,
        provider=spec.settings.provider_name,
        model=kit.provider.model,
        cwd=str(tree),
    )
    meta = start_job(Session(meta, previous.messages if previous else ()), spec.job_id).meta
    asked: list[bool] = []  # the first model call of this job is logged

    def observe(event: Event) -> None:
        if isinstance(event, TurnStarted) and not asked:
            asked.append(True)
            _mark(spec, "first_model_call")
        if on_event is not None:
            on_event(event)

    if briefing.skills.invoked:
        _mark(spec, "skills_invoked", skills=list(briefing.skills.names))
    # Saved into the thread's session file, under this job's open mark: should
    # the job never end, the next job drops these turns (`_drops_last_job`).
    # Once compacted, the transcript no longer begins with the one the job
    # found, so the mark could not cut this job's turns away again: the file
    # keeps its last save from before, until the job ends (`_end_session`).
    agent_run = kit.start(
        box,
        RunSession(store, meta, previous),
        briefing,
        on_event=observe,
        tools=(ReviewCommentTool(progress.review),) if progress.review else (),
        hold_after_compaction=True,
    )
    progress.run = agent_run
    try:
        prompt = spec.prompt
        if spec.review:
            diff = review_message(progress.diff, total_chars=progress.diff_chars)
            prompt = f"{prompt}\n\n{diff}"
        elif spec.fork is not None and not spec.fork.push:
            prompt = f"{prompt}\n\n{PROPOSING}"
        progress.error = await agent_run.send(briefing.skills.first_message(prompt))
    finally:
        agent_run.save()


async def _has_changes(tree: Path, progress: _Progress) -> bool:
    """Whether the tree differs from where the work branch started (what would be committed)."""
    if progress.start is None or progress.run is None:
        return False  # the agent never ran: nothing of its to keep
    await host_git.stage_all(tree)
    changed = await host_git.run_local(
        tree, "diff", "--cached", "--name-only", "-z", progress.start, "--"
    )
    return bool(changed.strip(b"\0"))


async def _wrap_up(spec: JobSpec, progress: _Progress, error: NeoError) -> None:
    """Ask the model, without tools, for the summary of work a budget cut short.

    Bounded on its own (the job's time may be what ran out); should it fail,
    the pull request says what the agent's last words said.
    """
    assert progress.run is not None
    failure = await progress.run.wrap_up(error)
    if failure is not None:
        log.warning("job %s: no wrap-up summary: %s", spec.job_id, failure)
        progress.wrap_up_failed = one_line(failure) or "it timed out"
        return
    with contextlib.suppress(SessionError):
        progress.run.save()


def _drops_last_job(session: Session, job_id: str) -> bool:
    """Whether a job `job_id` starts from before the job that last wrote `session`."""
    mark = session.meta.job
    # A mark never finished is a dead attempt's; one of `job_id` is this job's own.
    return mark is not None and (not mark.finished or mark.id == job_id)


def _end_session(
    spec: JobSpec, session: Session | None, result: JobResult, *, compacted: bool = False
) -> None:
    """Close the job's mark on its session, with a note on what the branch lacks."""
    if session is None or session.meta.job is None:
        return  # the agent never ran: the session is as the job found it
    messages = list(session.messages)
    note = _outcome_note(result)
    if note is not None:
        if messages and messages[-1].role == "user":
            last = messages.pop()
            messages.append(replace(last, content=(*last.content, Text(note))))
        else:
            messages.append(Message("user", (Text(note),)))
    mark = replace(session.meta.job, finished=True)
    if compacted:
        # The transcript no longer starts with the one the job found: the
        # job's turns are in its summary, and nothing is left to cut away.
        mark = replace(
            mark,
            messages=len(messages),
            blocks=len(messages[-1].content) if messages else 0,
            usage=session.meta.usage,
        )
    meta = replace(session.meta, updated_at=utc_timestamp(), job=mark)
    try:
        SessionStore(spec.data_dir).save(Session(meta, tuple(messages)))
    except SessionError as error:
        # The saves while the agent ran worked; the result stands. The open
        # mark makes the next job start from before this one.
        log.warning("job %s: %s", spec.job_id, error)


def _outcome_note(result: JobResult) -> str | None:
    """What the next job must know that this job's conversation does not say."""
    discarded = (
        "Its working tree was discarded: none of the changes made in it is on"
        f" branch {result.branch}."
    )
    if result.conclusion == "cancelled":
        return f"[Neo: this job was cancelled before it finished. {discarded}]"
    if result.conclusion == "failed":
        reason = f"{result.error_kind}: {result.error_message}"
        return f"[Neo: this job failed ({reason}). {discarded}]"
    notes = []
    if result.fork is not None and (note := fork_note(result.fork, result.branch)):
        notes.append(note)
    if result.blocked_paths:
        paths = ", ".join(result.blocked_paths)
        notes.append(
            f"[Neo: changes to {paths} were reverted before the commit: files under"
            f" {WORKFLOWS_DIR}/ may not be changed in this repository.]"
        )
    if result.left_out:
        paths = ", ".join(f"{path}/" for path in result.left_out)
        notes.append(
            f"[Neo: left out of the commit: {paths}. A directory holding a git repository"
            " of its own would be committed as a link to a commit no remote has.]"
        )
    return " ".join(notes) or None


@dataclass(frozen=True, slots=True)
class _Committed:
    """What the host made of the tree: the commit and its numbers, and what it left out."""

    commit: str | None = None
    stat: DiffStat | None = None
    subject: str | None = None
    # Under WORKFLOWS_DIR, reverted; embedded repositories; generated files by kind.
    blocked: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    generated: tuple[tuple[str, int], ...] = ()
    fork: ForkResult | None = None


async def _publish(
    spec: JobSpec,
    tree: Path,
    kit: RunKit,
    progress: _Progress,
    *,
    error: NeoError | None = None,
) -> JobResult:
    """On the host: drop blocked paths, commit the rest, push the work branch.

    With `error` (a budget that ran out), what is pushed is incomplete work.
    """
    assert progress.start is not None

    async def git(*args: str, check: bool = True) -> bytes:
        return await host_git.run_local(tree, *args, check=check)

    # Whatever the agent did to HEAD, the job's commit goes on the work branch,
    # on top of where it started; commits the agent made fold into it.
    await git("symbolic-ref", "HEAD", f"refs/heads/{spec.work_branch}")
    await git("reset", "--quiet", "--no-refresh", progress.start, "--")
    staged = await host_git.stage_all(tree)
    left_out = tuple(_shown(path) for path in staged.embedded)
    blocked: tuple[str, ...] = ()
    if not spec.allow_workflow_edits:
        listed = await git(
            "diff",
            "--cached",
            "--name-only",
            "-z",
            "--no-renames",
            progress.start,
            "--",
            WORKFLOWS_DIR,
        )
        blocked = tuple(sorted(p for p in listed.decode(errors="replace").split("\0") if p))
        if blocked:
            await git(
                "restore",
                f"--source={progress.start}",
                "--staged",
                "--worktree",
                "--",
                WORKFLOWS_DIR,
            )
    co_authors = [f"{spec.co_author[0]} <{spec.co_author[1]}>"] if spec.co_author else []
    summary = progress.finished.text if progress.finished else ""
    changed = await git("diff", "--cached", "--name-only", "-z", "--no-renames", progress.start)
    paths = [p for p in changed.decode(errors="replace").split("\0") if p]
    subject, message = spec.commit.message(summary, paths)
    # The message quotes the model's summary, which an issue's text can steer:
    # none of it may close an issue when the commit reaches the default branch.
    subject, message = inert_closing_keywords(subject), inert_closing_keywords(message)
    commit = await commit_all(
        tree,
        message,
        author_name=spec.bot_name,
        author_email=spec.bot_email,
        co_authors=co_authors,
    )
    committed = _Committed(blocked=blocked, left_out=left_out, generated=staged.generated)
    if commit is None:
        conclusion: Conclusion = "no_changes" if error is None else "failed"
        return _result(spec, kit, progress, error=error, conclusion=conclusion, done=committed)
    if spec.fork is not None and not spec.fork.push:
        # A fork's code never reaches the base repository unasked: the change is
        # proposed against the fork's head, and nothing is pushed.
        assert progress.fork is not None
        fork = await proposed(tree, progress.fork.head, commit)
        stat = await _diffstat(tree, progress.start)
        committed = replace(committed, stat=stat, fork=fork, subject=subject)
        return _result(spec, kit, progress, error=error, conclusion="changed", done=committed)
    base = (
        (await git("merge-base", "HEAD", f"refs/remotes/origin/{spec.base_branch}", check=False))
        .decode()
        .strip()
    )
    stat = await _diffstat(tree, base or progress.start)
    await push(tree, spec.work_branch, url=spec.repo_url, token=spec.token)
    committed = replace(committed, commit=commit, stat=stat, subject=subject)
    if progress.fork is not None:
        fork = ForkResult(progress.fork.head, pushed=True, left_out=progress.fork.left_out)
        committed = replace(committed, fork=fork)
    return _result(spec, kit, progress, error=error, conclusion="changed", done=committed)


async def _diffstat(tree: Path, base: str) -> DiffStat | None:
    try:
        return await diffstat(tree, base)
    except GitError:
        return None  # the summary loses its numbers; the change is still good


def _review_result(
    spec: JobSpec, kit: RunKit, progress: _Progress, error: NeoError | None
) -> JobResult:
    """A review job's result: its review when the agent finished, placed on the diff."""
    if error is not None or progress.review is None or progress.finished is None:
        return _result(spec, kit, progress, error=error)
    inline, outside = place(progress.review.comments, progress.review.positions)
    review = ReviewDraft(summary=progress.finished.text, comments=inline, folded=outside)
    done = _result(spec, kit, progress, conclusion="no_changes")
    return replace(done, review=review)


def _result(
    spec: JobSpec,
    kit: RunKit,
    progress: _Progress,
    *,
    error: NeoError | None = None,
    conclusion: Conclusion | None = None,
    done: _Committed = _Committed(),
) -> JobResult:
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
        setup=progress.setup,
        failed_setup=progress.failed_setup,
        summary=needs.summary,
        needed=needs.needed,
        error_kind=error.kind if error else None,
        error_message=one_line(error) if error else None,
        usage=usage,
        cost_usd=kit.cost(),
        models=models,
        fallback_reason=fallback_reason,
        num_turns=kit.ledger.calls,
        wrap_up_failed=progress.wrap_up_failed,
        duration_ms=elapsed_ms(progress.started),
        session_id=progress.session_id,
        fork=done.fork,
    )


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _shown(path: str) -> str:
    """A path from the file system as text: undecodable bytes become U+FFFD."""
    return os.fsencode(path).decode(errors="replace")


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
