"""What a job is given and what it returns: `JobSpec`, `JobResult` (pure).

`runner.job.run` takes the one and returns the other; `check_spec` refuses a
spec no job can run before anything starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runner.assembly import RunSettings
from runner.errors import ConfigError
from runner.fork import Fork, ForkResult
from runner.git import DiffStat
from runner.images import TaskImage
from runner.llm.types import Usage
from runner.mcp.report import McpReport
from runner.mcp.run import NO_MCP, McpRun
from runner.network import Blocked, NetworkPolicy
from runner.review import ReviewDraft
from runner.sandbox.factory import SANDBOXES
from runner.sandbox.requests import Bounds
from runner.sandbox.setup_plan import SetupOutcome
from runner.subject import CommitText

__all__ = ["JOB_SETTINGS", "Ending", "JobResult", "JobSpec", "check_spec"]

# How a job ended on the host: its work committed (pushed, or a fork's
# proposed), nothing to commit, failed, or stopped; the bot tells it as a
# `bot.jobs.Conclusion`.
Ending = Literal["changed", "no_changes", "failed", "cancelled"]

# A job's run, unless its spec says otherwise: thirty minutes, thinking.
JOB_SETTINGS = RunSettings(time_limit=30 * 60.0, effort="medium")

_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


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
    # Images the task shows (screenshots in the issue), downloaded on the host:
    # given to the model after the task, or a note for a model without vision.
    images: tuple[TaskImage, ...] = ()
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
    # The MCP servers whose tools the agent gets (the default branch's `mcp:`),
    # what the operator allows them, and the reads behind the built-in `github`
    # server; served on the host side, their remote hosts within `network`.
    mcp: McpRun = NO_MCP
    # Workflows run with the repository's secrets: the agent may not write
    # under WORKFLOWS_DIR unless the repository's configuration says so.
    allow_workflow_edits: bool = False
    # (name, email) of the person who asked: the commit's Co-authored-by.
    co_author: tuple[str, str] | None = None
    # The job's run page, for a `Neo-Run: <url>` trailer on its commit (None: no page).
    run_url: str | None = None
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
    conclusion: Ending
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
    # The MCP servers left out and why, the MCP tools called and how often.
    mcp: McpReport = field(default_factory=McpReport)
    # What the setup phase did, up to and with a command that failed the job (its
    # last lines too); None: the job ended before it.
    setup: SetupOutcome | None = None
    summary: str = ""
    # What the agent said it lacked (a tool, a permission, a host, a secret):
    # the summary's `Needed:` lines, taken out of it (runner/needed.py).
    needed: tuple[str, ...] = ()
    error_kind: str | None = None
    error_message: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    # Models without a known price the run called (only without a cost limit),
    # with their calls: recorded at no cost, so `cost_usd` leaves them out.
    unpriced: tuple[tuple[str, int], ...] = ()
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


def check_spec(spec: JobSpec) -> None:
    """Raise ConfigError, in one line, for a spec no job can run."""
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
