"""What the runner is asked to do for a job: branch, prompt, commit message, the spec.

Pure: the worker reads the thread, the config and a token, then these turn
them into a `runner.job.JobSpec`. No queue, no GitHub, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bot.config import RepoConfig
from bot.config.prices import PRICES_IN_CONFIG, runner_prices
from bot.jobs import Job, JobKind, JobRequest, Thread, TriggerKind, run_url
from bot.worker.prompt import (
    InlineComment,
    Post,
    ReviewLocation,
    ThreadText,
    Trigger,
    build_instruction_prompt,
    build_task_prompt,
)
from runner.assembly import RunSettings
from runner.errors import ConfigError
from runner.fork import Fork
from runner.job import JobSpec
from runner.llm.price_book import Price, PriceBook
from runner.mcp import Operator
from runner.mcp.run import McpRun
from runner.network import NetworkPolicy
from runner.sandbox.requests import Bounds
from runner.subject import CommitText

__all__ = [
    "Identity",
    "ThreadContext",
    "WorkerSettings",
    "branch_thread",
    "job_spec",
    "noreply_email",
    "session_thread",
    "task_title",
    "thread_commit",
    "threadless_branch",
    "work_branch",
]


class WorkerSettings(Protocol):
    """What the worker reads of `bot.config.settings.Settings`; `neo action` may pass its own."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def sandbox(self) -> str: ...
    @property
    def sandbox_image(self) -> str: ...
    @property
    def allowed_bots(self) -> frozenset[str]: ...
    @property
    def git_url(self) -> str: ...
    @property
    def network_ceiling(self) -> NetworkPolicy | None: ...
    @property
    def mcp_operator(self) -> Operator: ...
    @property
    def docs_url(self) -> str: ...
    @property
    def operator_prices(self) -> Mapping[str, Price]: ...
    @property
    def public_url(self) -> str:
        """NEO_PUBLIC_URL: where run pages are served ("": none)."""
        ...

    def prepared_bounds(self) -> Bounds: ...


@dataclass
class ThreadContext:
    """What the worker read about the thread before the run."""

    title: str
    opening: Post
    comments: tuple[Post, ...]
    requester_id: int | None
    # A pull request's head: its branch, whether it lives in the repository, its
    # commit as read (with the diff the prompt shows).
    head_ref: str | None = None
    same_repository: bool = True
    head_sha: str | None = None
    pr_url: str | None = None
    # A pull request's diff against its base, or why it is missing.
    diff: str | None = None
    diff_missing: str | None = None
    # A review comment's place in the diff; a review's inline comments.
    review: ReviewLocation | None = None
    inline: tuple[InlineComment, ...] = ()
    # For a workflow's task: the comment or review that started the run, as read.
    trigger_post: Post | None = None
    # A review job's: the pull request's review comments so far, oldest first.
    earlier: tuple[InlineComment, ...] = ()
    # On Neo's own pull request: the review threads (first comment ids) the job answers.
    answer: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Identity:
    """Who pushes: Neo's bot login, the job's token, and whether the author was checked."""

    bot: str
    token: str
    # A thread-less job the repository's own files asked for: no requester to name.
    unchecked: bool = False


def noreply_email(login: str, user_id: int | None = None) -> str:
    """GitHub's no-reply address of `login`, the form that links commits to the account."""
    if user_id is not None:
        return f"{user_id}+{login}@users.noreply.github.com"
    return f"{login}@users.noreply.github.com"


def threadless_branch(request: JobRequest, default_branch: str) -> str:
    """The branch a job without a thread works on: the one it names, never the default."""
    branch = (request.branch or "").strip()
    if not branch:
        raise ConfigError(
            "a job on no issue or pull request must name the branch to work on; none was given"
        )
    if branch == default_branch:
        raise ConfigError(
            f"the job's branch {branch!r} is the default branch; Neo works on a branch of its"
            " own and opens a pull request from it"
        )
    return branch


def work_branch(
    request: JobRequest, thread: ThreadContext, prefix: str
) -> tuple[str, bool, int | None]:
    """A thread's branch; whether it is the pull request's own; the PR to start from."""
    number = request.thread.number
    if request.thread.is_pull_request and thread.head_ref and thread.same_repository:
        return thread.head_ref, True, None
    if request.thread.is_pull_request:
        # A fork's branch cannot be pushed to: a branch of ours, from its head.
        return f"{prefix}pr-{number}", False, number
    return f"{prefix}issue-{number}", False, None


def branch_thread(branch: str, prefix: str, repository: str) -> Thread | None:
    """The thread Neo's branch `branch` was made for, or None when it names none.

    `<prefix>issue-N` is the branch of issue N's work and `<prefix>pr-N` the
    one Neo pushes for fork pull request N. A schedule's or review's branch,
    or any other, names no thread.
    """
    if not prefix or not branch.startswith(prefix):
        return None
    kind, dash, number = branch[len(prefix) :].partition("-")
    if kind not in ("issue", "pr") or not dash or not number.isascii():
        return None
    if not number.isdigit() or number.startswith("0"):
        return None
    return Thread(repository, int(number), is_pull_request=kind == "pr")


def session_thread(branch: str, prefix: str, repository: str) -> str | None:
    """The key of the thread whose session a job on Neo's branch `branch` continues, or None.

    Lower-cased as `Thread.key`, so its pull request's jobs share that session.
    """
    found = branch_thread(branch, prefix, repository)
    return None if found is None else found.key


def task_title(instruction: str) -> str:
    """A title for the work of a job without a thread: its instruction's first line."""
    line = next((line for line in instruction.splitlines() if line.strip()), "")
    line = " ".join(line.split())
    return line if len(line) <= 72 else line[:71].rstrip() + "…"


def thread_commit(title: str, number: int) -> CommitText:
    """A thread's commit: the change as the model's summary says it (never the
    thread's title again, which says what was asked), then the thread it was for."""
    return CommitText(body=f"Refs #{number}", avoid=title)


def job_spec(
    job: Job,
    config: RepoConfig,
    settings: WorkerSettings,
    *,
    default_branch: str,
    thread: ThreadContext | None,
    who: Identity,
) -> tuple[JobSpec, bool]:
    """The runner's spec; and whether the job works on a pull request's own branch.

    `thread` is None for a job without one.
    """
    request = job.request
    repository = request.thread.repository
    number = request.thread.number
    own_branch = False
    pull_request: int | None = None
    fork: Fork | None = None
    co_author: tuple[str, str] | None = None
    if thread is None:
        branch = threadless_branch(request, default_branch)
        prompt = build_instruction_prompt(
            repository,
            instruction=request.instruction,
            trigger=Trigger(
                requester="" if who.unchecked else request.author,
                kind=request.trigger,
                event=request.event,
            ),
            branch=branch,
            from_workflow=request.instruction_from_workflow,
        )
        if request.author and request.author.lower() != who.bot.lower():
            co_author = (request.author, noreply_email(request.author))
        session_key = None  # each run of a schedule starts afresh
        commit = CommitText(fallback=task_title(request.instruction))
    elif request.kind is JobKind.REVIEW:
        # Read-only: the head is fetched into a local branch that is never pushed.
        branch, pull_request = f"{config.branch_prefix}review-{number}", number
        if thread is not None and not thread.same_repository:
            fork = Fork()  # read, never pushed: only its checkout's limits apply
        prompt = _thread_prompt(request, thread, who.bot)
        # A conversation of its own: a review's turns are not the task's.
        session_key = f"{request.thread.key}:review"
        commit = CommitText()
    else:
        branch, own_branch, pull_request = work_branch(request, thread, config.branch_prefix)
        if pull_request is not None:
            # A fork's code: pushed here only when the default branch's config says so,
            # and then as of the head the prompt's diff was read with.
            fork = Fork(head=thread.head_sha, push=config.fork_work == "push")
        prompt = _thread_prompt(request, thread, who.bot)
        co_author = (request.author, noreply_email(request.author, thread.requester_id))
        # A pull request of Neo's continues the session of the thread it was opened for.
        continued = session_thread(branch, config.branch_prefix, repository) if own_branch else None
        session_key = continued or request.thread.key
        commit = thread_commit(thread.title, number)
    docker = settings.sandbox == "docker"
    spec = JobSpec(
        job_id=f"job-{job.id}",
        repo_url=f"{settings.git_url}/{repository}.git",
        token=who.token,
        base_branch=default_branch,
        work_branch=branch,
        prompt=prompt,
        data_dir=settings.data_dir,
        pull_request=pull_request,
        fork=fork,
        settings=RunSettings(
            provider=config.provider,
            model=config.model,
            fallback=(config.fallback.provider, config.fallback.model) if config.fallback else None,
            openai_auth=config.openai_auth,
            max_turns=config.max_turns,
            time_limit=config.time_limit * 60.0,
            effort=config.effort if config.thinking else None,
            max_cost_usd=config.max_cost_usd,
            prices=PriceBook(settings.operator_prices, runner_prices(config.prices)),
            where_prices_go=PRICES_IN_CONFIG,
            disabled_skills=config.disabled_skills,
            subagents=config.subagents.settings(),
        ),
        sandbox=settings.sandbox,
        image=(config.sandbox_image or settings.sandbox_image) if docker else None,
        setup=config.setup,
        # The default branch's file only: a pull request's copy is never read.
        network=config.network_policy(),
        network_ceiling=settings.network_ceiling,
        network_notes=config.network_notes(),
        # The default branch's `mcp:` alone, as every setting: a pull request's
        # copy of the file cannot add a server. The `github` server's reads are
        # the job's client's, added with it (`runs.plan_run`).
        mcp=McpRun(config.mcp.settings(), settings.mcp_operator),
        environment_bounds=settings.prepared_bounds(),
        allow_workflow_edits=config.allow_workflow_edits,
        co_author=co_author,
        run_url=run_url(settings.public_url, job.id),
        bot_name=who.bot,
        bot_email=noreply_email(who.bot),
        session_key=session_key,
        commit=commit,
        invocation=_requester_text(request),
        # Like AGENTS.md: a pull request cannot rewrite the skills Neo follows.
        skills_branch=default_branch if request.thread.is_pull_request else None,
        review=request.kind is JobKind.REVIEW,
    )
    return spec, own_branch


def _requester_text(request: JobRequest) -> str:
    """The words the requester wrote for this job, where `$name` invokes a skill.

    A comment or review that triggered it, an issue its author opened
    mentioning Neo, a workflow's or schedule's prompt. A label or an
    assignment is not: the text it points at is someone else's.
    """
    threadless = request.thread.number == 0
    own = request.trigger.is_post or request.trigger is TriggerKind.ISSUE_OPENED
    if threadless or request.instruction_from_workflow or own:
        return request.instruction
    return ""


def _thread_prompt(request: JobRequest, thread: ThreadContext, bot: str) -> str:
    post = None
    workflow_prompt = None
    if request.instruction_from_workflow:
        # The workflow's prompt is the task; what started the run is context.
        post, workflow_prompt = thread.trigger_post, request.instruction
    elif request.trigger.is_post:
        post = Post(
            author=request.author,
            association=request.author_association,
            body=request.instruction,
            id=request.trigger_id,
        )
    text = ThreadText(
        title=thread.title,
        opening=thread.opening,
        comments=thread.comments,
        diff=thread.diff,
        diff_missing=thread.diff_missing,
    )
    return build_task_prompt(
        request.thread,
        text,
        trigger=Trigger(
            requester=request.author,
            kind=request.trigger,
            event=request.event,
            post=post,
            review=thread.review,
            inline=thread.inline,
            workflow_prompt=workflow_prompt,
            review_job=request.kind is JobKind.REVIEW,
            earlier=thread.earlier,
        ),
        neo_login=bot,
    )
