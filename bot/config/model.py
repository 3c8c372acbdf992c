"""The model of `.github/neo.yml`: `RepoConfig` and its `Schedule`s, with their validators.

Strict pydantic models, frozen; `bot.config.loading` feeds them parsed YAML
and `bot.config.reference` renders the user-facing reference from them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from bot.config.cron import Cron
from bot.config.mcp import Mcp
from bot.config.prices import Prices
from runner.llm.types import Effort
from runner.network import OFF, BadEntry, NetworkPolicy, parse_entry, policy_of
from runner.sandbox.image import image_problem
from runner.subagent import SubagentSettings

__all__ = [
    "Budgets",
    "CiRepair",
    "Fallback",
    "ForkWork",
    "Network",
    "Permission",
    "Provider",
    "RepoConfig",
    "Schedule",
    "Subagents",
]

_MAX_SCHEDULES = 20

Provider = Literal["anthropic", "openai", "chat-completions", "openrouter", "google"]
OpenAIAuth = Literal["api_key", "subscription"]
ForkWork = Literal["propose", "push"]
Permission = Literal["admin", "maintain", "write", "triage", "read"]


# --- git names --------------------------------------------------------------

_REF_FORBIDDEN = frozenset(" ~^:?*[\\")


def _ref_problem(name: str) -> str | None:
    """Why `name` is not a safe branch name (git check-ref-format, and no option look-alike)."""
    bad = sorted({c for c in name if c in _REF_FORBIDDEN or not " " < c < "\x7f"})
    if bad:
        shown = ", ".join("space" if c == " " else repr(c) for c in bad)
        return f"must not contain {shown}"
    if name.startswith("-"):
        return "must not start with '-'"
    if name.startswith("/"):
        return "must not start with '/'"
    if ".." in name:
        return "must not contain '..'"
    if "@{" in name or name == "@":
        return "must not contain '@{' or be '@'"
    if "//" in name:
        return "must not contain '//'"
    if name.endswith(("/", ".")):
        return "must not end with '/' or '.'"
    for part in name.split("/"):
        if part.startswith("."):
            return "no part between slashes may start with '.'"
        if part.endswith(".lock"):
            return "no part between slashes may end with '.lock'"
    return None


def _branch_name(value: str) -> str:
    problem = _ref_problem(value)
    if problem:
        raise ValueError(f"not a valid branch name: {problem}")
    return value


# --- the model --------------------------------------------------------------

_Text = Annotated[str, Field(min_length=1, max_length=200)]
_BotLogin = Annotated[str, Field(pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")]
_Command = Annotated[str, Field(min_length=1)]
# A skill's name as SKILL.md's front matter spells it (runner.skills.skill).
_SkillName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$", max_length=64)]


class _Strict(BaseModel):
    # Numbers and switches are strict so `max_turns: "100"` or `draft: 1` is
    # a mistake reported, not a guess; YAML already types them.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Schedule(_Strict):
    """One scheduled maintenance job."""

    cron: str = Field(
        description=(
            "When to run: a standard 5-field cron expression (minute hour day-of-month month "
            "day-of-week), in UTC. Ranges, steps, lists and names such as `MON` or `JAN` work; "
            "`@daily`-style nicknames do not."
        ),
    )
    prompt: str = Field(
        min_length=1,
        description="What Neo should do, as you would write it after `@neo`.",
    )
    branch: str | None = Field(
        default=None,
        max_length=200,
        description=(
            "The branch the job works on; its open pull request is updated on each run "
            "instead of a new one being opened. Unset: `<branch_prefix>schedule-<name>`, "
            "the name in lower case with anything but letters and digits as `-` "
            "(e.g. `neo/schedule-weekly-deps`), or `<branch_prefix>schedule-<n>` for the "
            "n-th schedule, counting from 1, when it has no name. No two schedules may "
            "share a branch."
        ),
    )
    name: _Text | None = Field(
        default=None,
        description=(
            "A label for the schedule in reports; unique within the file. It also tells "
            "Neo which schedule is which when the file changes: an unnamed one is known "
            "by its position."
        ),
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        return Cron(" ".join(value.split())).expression

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        return None if value is None else _branch_name(value)

    @property
    def when(self) -> Cron:
        """The `cron` expression, to evaluate."""
        return Cron(self.cron)


class Fallback(_Strict):
    """The provider a run turns to when its own is unavailable."""

    provider: Provider = Field(
        description="The fallback's provider. Its API key is the service's, like the first's.",
    )
    model: _Text | None = Field(
        default=None,
        description="The fallback's model name. Unset: its provider's default.",
    )


class Budgets(_Strict):
    """What the runs of a repository, and of its installation, may spend in a UTC day."""

    repo_daily_usd: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        allow_inf_nan=False,
        strict=True,
        description=(
            "US dollars the runs of this repository may spend in a UTC day. A run that"
            " would start with the day's spend at or past it is not run; a running one"
            " may spend at most what is left. Set in the owner's `.github` repository, it"
            " is each repository's, and a repository's own file can only lower it. Unset:"
            " the service's default. Never above the service's ceiling."
        ),
    )
    installation_daily_usd: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        allow_inf_nan=False,
        strict=True,
        description=(
            "US dollars the runs of every repository of this App installation (the"
            " account) may spend together in a UTC day. Set it in the owner's `.github`"
            " repository: there it binds every repository, whose own file can only lower"
            " it. Unset: the service's default. Never above the service's ceiling."
        ),
    )
    # Where each value was set when not in the repository's own file: the
    # owner's `.github` one, whose budgets bind it. Set by the worker's config
    # resolver (`bound_by`), never read from YAML.
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def source(self, name: str) -> str | None:
        """The file the value of `name` was set in, when not the repository's own."""
        return self._sources.get(name)

    def bound_by(self, owner: Budgets, where: str) -> Budgets:
        """These budgets, none above `owner`'s (set in `where`, the owner's `.github`
        file): an owner's daily limits bind each of its repositories, whose own
        file can only lower them."""
        values: dict[str, float] = {}
        sources = dict(self._sources)
        for name in ("repo_daily_usd", "installation_daily_usd"):
            own, theirs = getattr(self, name), getattr(owner, name)
            if theirs is not None and (own is None or theirs <= own):
                values[name] = theirs
                sources[name] = where
        bound = self.model_copy(update=values)
        bound._sources = sources
        return bound


class CiRepair(_Strict):
    """Whether Neo repairs red checks on its own pull requests, and how many times."""

    enabled: bool = Field(
        default=False,
        strict=True,
        description=(
            "Repair a failed check run, check suite or workflow run on a pull request Neo"
            " opened, when Neo made its head commit: continue its session on its branch"
            " and push a fix. `ci_repair: true` is short for this."
        ),
    )
    attempts: int = Field(
        default=2,
        ge=1,
        le=10,
        strict=True,
        description=(
            "Repairs in a row on one pull request, counted from Neo's last ordinary push;"
            " after them a red head gets one comment and no run."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        # `ci_repair: true` (or false): the switch alone, the attempts by default.
        if isinstance(value, bool):
            return {"enabled": value}
        return value


class Network(_Strict):
    """What the agent's commands may reach, through Neo's egress proxy."""

    allow: tuple[str, ...] = Field(
        default=(),
        max_length=200,
        description=(
            "Ecosystems (`python`, `node`, `go`, `rust`, `ruby`, `github`: each stands for"
            " its registries' hosts, listed below) and hosts: `example.com`, `*.example.com`"
            " (the names under it), `example.com:8443`, an IP address with or without a"
            " port. A host without a port is reached on 80 and 443 (HTTPS). Nothing else"
            " is reachable."
        ),
    )
    methods: Literal["read", "all"] = Field(
        default="read",
        description=(
            "What plain HTTP may do: `read` (GET, HEAD, OPTIONS) or `all`. HTTPS to an"
            " allowed host is allowed whatever its method, which the proxy cannot see"
            " without breaking TLS."
        ),
    )

    @field_validator("allow")
    @classmethod
    def _entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                parse_entry(entry)
            except BadEntry as error:
                raise ValueError(str(error)) from None
        return value

    def policy(self) -> NetworkPolicy:
        return policy_of(self.allow, self.methods)


class Subagents(_Strict):
    """The subagents a run may hand investigations to, and what they may spend."""

    enabled: bool = Field(
        default=True,
        strict=True,
        description=(
            "Whether the agent has the `agent` tool, which hands one investigation to a"
            " subagent that can only read (`read_file`, `grep`, `glob`) and answers with"
            " facts and line numbers, keeping the exploration out of the main conversation."
        ),
    )
    max_turns: int = Field(
        default=20,
        ge=1,
        le=100,
        strict=True,
        description="The most model calls one subagent may make before it stops.",
    )
    max_parallel: int = Field(
        default=4,
        ge=1,
        le=16,
        strict=True,
        description="Subagents running at once; further calls wait for one to finish.",
    )
    max_children: int = Field(
        default=16,
        ge=0,
        le=200,
        strict=True,
        description="Subagents one run may start; the next call is answered with an error.",
    )
    model: _Text | None = Field(
        default=None,
        description=(
            "The subagents' model, of the run's provider, e.g. a cheaper `claude-haiku-4-5`."
            " Unset: the run's own model."
        ),
    )
    budget_share: float | None = Field(
        default=0.5,
        gt=0,
        le=1,
        allow_inf_nan=False,
        strict=True,
        description=(
            "The share of `max_cost_usd` the subagents of a run may spend together; past it"
            " a call is answered with an error and no subagent starts. Their cost counts"
            " towards `max_cost_usd` too. Unset, or no `max_cost_usd`: no share of their own."
        ),
    )

    def settings(self) -> SubagentSettings:
        """These settings as the runner takes them."""
        return SubagentSettings(
            enabled=self.enabled,
            max_turns=self.max_turns,
            max_parallel=self.max_parallel,
            max_children=self.max_children,
            model=self.model,
            budget_share=self.budget_share,
        )


class RepoConfig(_Strict):
    """The settings in `.github/neo.yml`. Every field is optional."""

    provider: Provider = Field(
        default="anthropic",
        description="The model provider. Its API key is the service's, never the repository's.",
    )
    model: _Text | None = Field(
        default=None,
        description="The model name, e.g. `claude-sonnet-5-5`. Unset: the service's default.",
    )
    fallback: Fallback | None = Field(
        default=None,
        description=(
            "A second provider and model, e.g. `{provider: openai, model: gpt-5}`, for when"
            " the first is unavailable: it still answers 429 or 5xx after its retries, or"
            " cannot be reached. The run then stays with the fallback, and the report names"
            " the model that did the work."
        ),
    )
    openai_auth: OpenAIAuth = Field(
        default="api_key",
        description=(
            "How the `openai` provider signs in: `api_key` (the service's `OPENAI_API_KEY`) "
            "or `subscription` (the ChatGPT sign-in `neo login chatgpt` stored on the "
            "service's host)."
        ),
    )
    max_turns: int = Field(
        default=100,
        ge=1,
        le=500,
        strict=True,
        description="The most model turns one run may take before it stops.",
    )
    time_limit: int = Field(
        default=30,
        ge=1,
        le=240,
        strict=True,
        description="Minutes one run may take before it is stopped.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=1_000,
        allow_inf_nan=False,
        strict=True,
        description=(
            "The most, in US dollars, the model calls of one run may cost. The call that"
            " would pass it is not made; the work so far becomes an incomplete draft pull"
            " request. Unset: no limit."
        ),
    )
    thinking: bool = Field(
        default=True,
        strict=True,
        description=(
            "Whether the model thinks before it answers (extended thinking), on models that"
            " can. `false` is cheaper and faster, and weaker on hard tasks."
        ),
    )
    effort: Effort = Field(
        default="medium",
        description=(
            "How hard the model thinks when `thinking` is on: `low`, `medium` or `high`."
            " Higher costs more tokens."
        ),
    )
    subagents: Subagents = Field(
        default=Subagents(),
        description="Investigations handed to read-only subagents; see [Subagents](#subagents).",
    )
    budgets: Budgets = Field(
        default=Budgets(),
        description="Daily spending limits beside `max_cost_usd`; see [Budgets](#budgets).",
    )
    prices: Prices = Field(
        default=(),
        description=(
            "Prices of models with no published price (a new or a local one), in US"
            " dollars per million tokens: `[{model: my-model, input: 0.5, output: 1.5}]`."
            " With a cost limit (`max_cost_usd`, or a daily budget) a model without a price"
            " cannot run; see [Prices](#prices)."
        ),
    )
    ci_repair: CiRepair = Field(
        default=CiRepair(),
        description=(
            "Red checks on Neo's own pull requests repaired in the same session; off by"
            " default. `true`, or `{enabled, attempts}`; see [CI repair](#ci-repair)."
        ),
    )
    setup: tuple[_Command, ...] | None = Field(
        default=None,
        description=(
            "Shell commands run in the sandbox, in order, at the repository's root, before the"
            " agent starts (e.g. `make deps`); a failing one fails the run. Unset: Neo detects"
            " them from the repository's files (lockfiles, manifests) and a failing one is"
            " reported while the run goes on; `[]`: no setup. What setup installs is kept"
            " for the repository's next runs; see [Setup](setup.md)."
        ),
    )
    network: Literal["off"] | Network | None = Field(
        default=None,
        description=(
            "What the agent's commands may reach, through Neo's egress proxy: `off`, or"
            " `{allow: [...], methods: read}`; see [Network](#network). Unset: the"
            " ecosystems automatic setup detected, read only."
        ),
    )
    setup_network: bool | None = Field(
        default=None,
        strict=True,
        description=(
            "Replaced by `network`, and read as it when `network` is unset: `true` as"
            " `network: {allow: []}` (setup reaches public hosts, the agent nothing),"
            " `false` as `network: off`."
        ),
    )
    mcp: Mcp = Field(
        default=Mcp(),
        description=(
            "MCP servers whose tools the agent gets, run on the service's side of the"
            " sandbox with the operator's secrets: `{servers: {name: {...}}, github: true}`;"
            " see [MCP](#mcp)."
        ),
    )
    sandbox_image: _Text | None = Field(
        default=None,
        description=(
            "The container image jobs run in, a Docker image reference such as "
            "`ghcr.io/acme/sandbox:1.2`; it must already be on the service's host, as Neo "
            "never pulls one. Unset: the service's default image."
        ),
    )
    trigger_label: str = Field(
        default="neo",
        min_length=1,
        max_length=50,
        description="Adding this label to an issue or pull request asks Neo to work on it.",
    )
    allowed_users: tuple[Permission, ...] = Field(
        default=("admin", "maintain", "write"),
        min_length=1,
        description=(
            "Who may trigger a run, by their permission on the repository: any of "
            "`admin`, `maintain`, `write`, `triage`, `read`."
        ),
    )
    allowed_bots: tuple[_BotLogin, ...] = Field(
        default=(),
        description=(
            "Bot logins whose mentions may trigger a run, e.g. `renovate[bot]`. "
            "Bots trigger nothing unless listed; Neo itself never does."
        ),
    )
    branch_prefix: str = Field(
        default="neo/",
        min_length=1,
        max_length=100,
        description="Prefix of the branches Neo creates, e.g. `neo/issue-12`.",
    )
    draft: bool = Field(
        default=True,
        strict=True,
        description="Whether Neo opens its pull requests as drafts.",
    )
    allow_workflow_edits: bool = Field(
        default=False,
        strict=True,
        description=(
            "Whether Neo may push changes to `.github/workflows/`. When false, such "
            "changes are left out and the report says why."
        ),
    )
    fork_work: ForkWork = Field(
        default="propose",
        description=(
            "What Neo does with work asked of it on a pull request from a fork, whose code"
            " is an outsider's. `propose`: nothing is pushed; the report holds Neo's change"
            " as a patch against the fork's head, for its author to apply. `push`: Neo"
            " pushes a branch of this repository holding the fork's changes (bar CI"
            " configuration such as `.github/workflows/`, which the report names) and its"
            " own, and opens a pull request from it; this repository's workflows then run"
            " the fork's code with their secrets. See [Pull requests from"
            " forks](github-app.md#pull-requests-from-forks)."
        ),
    )
    disabled_skills: tuple[_SkillName, ...] = Field(
        default=(),
        description=(
            "Skills Neo leaves out, by name, e.g. `[update-dependencies]`: built-in ones or"
            " the repository's own. They are not listed in the prompt, and `$name` in a"
            " request stays plain text."
        ),
    )
    schedules: tuple[Schedule, ...] = Field(
        default=(),
        max_length=_MAX_SCHEDULES,
        description=(
            f"Maintenance jobs run on a schedule, at most {_MAX_SCHEDULES}; "
            "see [Schedules](#schedules)."
        ),
    )

    @field_validator("fallback")
    @classmethod
    def _other_model(cls, value: Fallback | None, info: ValidationInfo) -> Fallback | None:
        if value is not None and (value.provider, value.model) == (
            info.data.get("provider"),
            info.data.get("model"),
        ):
            raise ValueError("is the same provider and model as the first; name another")
        return value

    @field_validator("network", mode="wrap")
    @classmethod
    def _network(cls, value: object, handler: ValidatorFunctionWrapHandler) -> object:
        # Unquoted, YAML reads `off` as false.
        if value is False or value == "off":
            return "off"
        # Validated as the one shape it can be, so an error names its field.
        if isinstance(value, dict):
            return Network.model_validate(value)
        if value is None or isinstance(value, Network):
            return handler(value)
        raise ValueError("write `off`, or `{allow: [...], methods: read}`")

    def network_policy(self) -> NetworkPolicy | None:
        """The policy this file asks for; None: unset, the detected ecosystems'."""
        if self.network == "off":
            return OFF
        if isinstance(self.network, Network):
            return self.network.policy()
        if self.setup_network is not None:
            return NetworkPolicy() if self.setup_network else OFF
        return None

    def network_notes(self) -> tuple[str, ...]:
        """What the report says of how the file's network was read."""
        if self.setup_network is None:
            return ()
        if self.network is not None:
            return ("`setup_network` is ignored: `network` replaces it",)
        read = "network: {allow: []}" if self.setup_network else "network: off"
        return (f"`setup_network` is read as `{read}`; write `network` instead",)

    @field_validator("trigger_label")
    @classmethod
    def _label(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("sandbox_image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        problem = None if value is None else image_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("branch_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        # The prefix is checked with a typical name appended, as git will see it.
        problem = _ref_problem(value + "issue-1")
        if problem:
            raise ValueError(f"not a safe branch prefix: {problem}")
        return value

    @field_validator("schedules")
    @classmethod
    def _distinct_schedules(
        cls, value: tuple[Schedule, ...], info: ValidationInfo
    ) -> tuple[Schedule, ...]:
        names = [schedule.name for schedule in value if schedule.name is not None]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"the name {name!r} is used by more than one schedule")
        prefix = info.data.get("branch_prefix")
        if prefix is None:  # itself invalid, and reported as such
            return value
        # Two schedules on one branch would take turns rewriting one pull request.
        seen: dict[str, int] = {}
        for index, schedule in enumerate(value):
            branch = _schedule_branch(prefix, schedule, index)
            if branch in seen:
                raise ValueError(
                    f"schedules {seen[branch] + 1} and {index + 1} both work on branch "
                    f"{branch!r}; give one a branch or another name"
                )
            seen[branch] = index
        return value

    def schedule_branch(self, index: int) -> str:
        """The branch `schedules[index]` works on: its own, or one derived from its name."""
        return _schedule_branch(self.branch_prefix, self.schedules[index], index)


_SLUG_LENGTH = 60


def _schedule_branch(prefix: str, schedule: Schedule, index: int) -> str:
    if schedule.branch is not None:
        return schedule.branch
    # Letters and digits only: whatever the name holds, the branch is a valid ref.
    slug = re.sub(r"[^a-z0-9]+", "-", (schedule.name or "").lower())
    slug = slug[:_SLUG_LENGTH].strip("-") or str(index + 1)
    return f"{prefix}schedule-{slug}"
