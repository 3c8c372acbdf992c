"""What `neo action` is given: the Action's inputs and the workflow run's context. Pure.

    inputs, context = read_inputs(os.environ), read_context(os.environ)

A mistake is one `InputError` line naming the input or variable, never its value
(docs/architecture.md, "The Action").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import ValidationError

from bot.config import CONFIG_PATH, RepoConfig
from bot.config.handle import handle_problem
from bot.github.core import DEFAULT_API_URL
from runner.errors import ConfigError
from runner.llm.registry import PROVIDERS, missing_credentials
from runner.llm.types import EFFORTS

__all__ = [
    "API_KEY_VARIABLES",
    "INPUTS",
    "ActionContext",
    "ActionInputs",
    "InputError",
    "input_variable",
    "read_context",
    "read_inputs",
]

# Every input of action.yml, in its order; tests hold the two together.
INPUTS: Final = (
    "prompt",
    "trigger_phrase",
    "label_trigger",
    "provider",
    "model",
    "anthropic_api_key",
    "openai_api_key",
    "gemini_api_key",
    "openrouter_api_key",
    "github_token",
    "max_turns",
    "time_limit",
    "max_cost",
    "effort",
    "subagents",
    "allowed_users",
    "allowed_bots",
    "branch_prefix",
    "sandbox",
    "config_path",
)

# Each key input, and the SDK's own variable it fills (credentials
# come from the SDKs' variables; an empty input leaves one set by the workflow).
API_KEY_VARIABLES: Final[Mapping[str, str]] = {
    "anthropic_api_key": "ANTHROPIC_API_KEY",
    "openai_api_key": "OPENAI_API_KEY",
    "gemini_api_key": "GEMINI_API_KEY",
    "openrouter_api_key": "OPENROUTER_API_KEY",
}

DEFAULT_SERVER_URL: Final = "https://github.com"

_REPOSITORY = re.compile(r"[\w.-]+/[\w.-]+")
_WORDS = re.compile(r"[\s,]+")
_RUNS_IN_ACTIONS = "neo action runs as a step of a GitHub Actions workflow"


class InputError(ConfigError):
    """A bad input or a missing variable: one line naming it, never its value."""


def input_variable(name: str) -> str:
    """The variable action.yml passes input `name` in: `INPUT_<NAME>`."""
    return f"INPUT_{name.upper()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionInputs:
    """The Action's inputs, validated. None: not given, the repository's config decides."""

    # Automation mode: any event runs this; None: mentions, labels and reviews only.
    prompt: str | None
    trigger_phrase: str
    label_trigger: str
    github_token: str = field(repr=False)
    # SDK variable -> key, for the keys given (never printed).
    api_keys: Mapping[str, str] = field(repr=False, default_factory=dict)
    sandbox: Literal["local", "docker"] = "local"
    config_path: str = CONFIG_PATH
    allowed_bots: frozenset[str] = frozenset()
    # Settings of `.github/neo.yml` the workflow sets, already valid for RepoConfig
    # (provider, model, max_turns, time_limit, effort or thinking, subagents,
    # allowed_users, branch_prefix).
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def branch_prefix(self) -> str:
        prefix = self.overrides.get("branch_prefix")
        return prefix if isinstance(prefix, str) else RepoConfig().branch_prefix


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionContext:
    """The workflow run, as the runner's `GITHUB_*` variables describe it."""

    event_name: str
    event_path: Path
    repository: str  # owner/name
    run_id: int
    run_attempt: int
    actor: str
    api_url: str
    server_url: str
    # `owner/repo/.github/workflows/x.yml@refs/heads/main`, or the workflow's name.
    workflow: str
    job: str
    output_path: Path | None
    summary_path: Path | None
    runner_temp: Path | None


def read_inputs(env: Mapping[str, str]) -> ActionInputs:
    """The inputs from `INPUT_*` variables; InputError names the first bad one."""

    def get(name: str) -> str:
        return env.get(input_variable(name), "").strip()

    prompt = env.get(input_variable("prompt"), "")
    trigger_phrase = get("trigger_phrase") or "@neo"
    problem = handle_problem(trigger_phrase)
    if problem is not None:
        raise InputError(f"input trigger_phrase: {problem}")
    label_trigger = get("label_trigger") or "neo"
    if len(label_trigger) > 50:
        raise InputError("input label_trigger: must be at most 50 characters")
    token = get("github_token")
    if not token:
        raise InputError(
            "input github_token is empty: leave it unset for the workflow's token, "
            "or pass a token with contents, issues and pull-requests write"
        )
    sandbox = get("sandbox") or "local"
    if sandbox not in ("local", "docker"):
        raise InputError("input sandbox: must be local or docker")
    config_path = get("config_path").strip("/") or CONFIG_PATH
    if ".." in config_path.split("/"):
        raise InputError("input config_path: must be a path inside the repository")
    keys = {variable: get(name) for name, variable in API_KEY_VARIABLES.items() if get(name)}
    bots = frozenset(_words(get("allowed_bots")))
    overrides = _overrides(get, bots)
    _check_key(overrides.get("provider"), {**env, **keys})
    return ActionInputs(
        prompt=prompt if prompt.strip() else None,
        trigger_phrase=trigger_phrase,
        label_trigger=label_trigger,
        github_token=token,
        api_keys=keys,
        sandbox="docker" if sandbox == "docker" else "local",
        config_path=config_path,
        allowed_bots=bots,
        overrides=overrides,
    )


def _check_key(provider: str | None, env: Mapping[str, str]) -> None:
    """Refuse a provider input whose key is neither an input nor in the job's environment."""
    if provider is None:
        return
    missing = missing_credentials(provider, env)
    if missing is None:
        return
    given_by = next((name for name, v in API_KEY_VARIABLES.items() if v == missing), None)
    how = f"pass it in the {given_by} input" if given_by else "set it in the job's env"
    raise InputError(f"input provider: {provider} needs {missing}: {how} (a secret)")


# Far above any run id or limit, far below the 4,300 digits past which int() raises.
_MAX_DIGITS = 20


def _whole(text: str, name: str) -> int:
    """`text` as a whole number; InputError naming `name` otherwise."""
    # ASCII only: str.isdigit() also takes "²", which int() refuses.
    if not (text.isascii() and text.isdigit()):
        raise InputError(f"{name}: expected a whole number")
    if len(text.lstrip("0")) > _MAX_DIGITS:
        raise InputError(f"{name}: too large")
    return int(text)


def _words(text: str) -> list[str]:
    return [word for word in _WORDS.split(text) if word]


def _overrides(get: Any, bots: frozenset[str]) -> dict[str, Any]:
    """The `.github/neo.yml` settings the inputs set, checked by RepoConfig's own rules."""
    values: dict[str, Any] = {}
    for name in ("provider", "model", "branch_prefix"):
        if get(name):
            values[name] = get(name)
    if "provider" in values and values["provider"] not in PROVIDERS:
        raise InputError(f"input provider: must be one of {', '.join(PROVIDERS)}")
    for name in ("max_turns", "time_limit"):
        text = get(name)
        if text:
            values[name] = _whole(text, f"input {name}")
    if get("max_cost"):
        try:
            values["max_cost_usd"] = float(get("max_cost").removeprefix("$"))
        except ValueError:
            raise InputError("input max_cost: expected an amount of US dollars") from None
    effort = get("effort")
    if effort == "none":
        values["thinking"] = False
    elif effort:
        if effort not in EFFORTS:
            raise InputError(f"input effort: must be one of none, {', '.join(EFFORTS)}")
        values["effort"] = effort
    subagents = get("subagents")
    if subagents:
        if subagents not in ("true", "false"):
            raise InputError("input subagents: must be true or false")
        # Off replaces the file's subagent settings; on keeps them (and their budgets).
        if subagents == "false":
            values["subagents"] = {"enabled": False}
    if get("allowed_users"):
        values["allowed_users"] = tuple(_words(get("allowed_users")))
    if bots:
        values["allowed_bots"] = tuple(sorted(bots))
    try:
        RepoConfig.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "?"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise InputError(f"input {_INPUT_OF.get(name, name)}: {message}") from None
    return values


# Settings whose input has another name.
_INPUT_OF: Final = {"max_cost_usd": "max_cost", "thinking": "effort"}


def read_context(env: Mapping[str, str]) -> ActionContext:
    """The run's context from `GITHUB_*` variables; InputError names the first missing one."""

    def required(name: str) -> str:
        value = env.get(name, "").strip()
        if not value:
            raise InputError(f"{name} is not set: {_RUNS_IN_ACTIONS}")
        return value

    def optional_path(name: str) -> Path | None:
        value = env.get(name, "").strip()
        return Path(value) if value else None

    event_name = required("GITHUB_EVENT_NAME")
    event_path = Path(required("GITHUB_EVENT_PATH"))
    repository = required("GITHUB_REPOSITORY")
    if not _REPOSITORY.fullmatch(repository):
        raise InputError("GITHUB_REPOSITORY: must be owner/name")
    run_id = _whole(required("GITHUB_RUN_ID"), "GITHUB_RUN_ID")
    attempt = _whole(env.get("GITHUB_RUN_ATTEMPT", "").strip() or "1", "GITHUB_RUN_ATTEMPT")
    api_url = _url(env, "GITHUB_API_URL", DEFAULT_API_URL)
    server_url = _url(env, "GITHUB_SERVER_URL", DEFAULT_SERVER_URL)
    return ActionContext(
        event_name=event_name,
        event_path=event_path,
        repository=repository,
        run_id=run_id,
        run_attempt=attempt,
        actor=env.get("GITHUB_ACTOR", "").strip(),
        api_url=api_url,
        server_url=server_url,
        workflow=(env.get("GITHUB_WORKFLOW_REF") or env.get("GITHUB_WORKFLOW") or "").strip(),
        job=env.get("GITHUB_JOB", "").strip(),
        output_path=optional_path("GITHUB_OUTPUT"),
        summary_path=optional_path("GITHUB_STEP_SUMMARY"),
        runner_temp=optional_path("RUNNER_TEMP"),
    )


def _url(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name, "").strip() or default
    if not value.startswith(("http://", "https://")):
        raise InputError(f"{name}: must be an http(s) URL")
    return value.rstrip("/")
