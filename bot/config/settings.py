"""The service's settings: `NEO_*` environment variables, validated at start-up."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from bot.config.docs import DEFAULT_DOCS_URL, docs_url_problem
from bot.config.handle import handle_problem
from bot.config.prepared import PreparedSettings
from bot.config.prices import NOT_JSON, Prices, runner_prices
from bot.config.web import WebSettings
from bot.github.core import web_url
from bot.queue import MAX_RUN_EVENTS, sqlite_url
from bot.queue import data_dir as default_data_dir
from runner.errors import ConfigError
from runner.llm.price_book import Price
from runner.mcp import COMMANDS_VARIABLE, URLS_VARIABLE, Operator
from runner.network import BadEntry, NetworkPolicy, parse_list
from runner.sandbox.image import image_problem
from runner.text import one_line

DEFAULT_JOB_TIMEOUT = 5 * 3600
# NEO_HEAD_TIMEOUT's and NEO_BODY_TIMEOUT's default: GitHub's own deadline.
DEFAULT_REQUEST_SECONDS = 10.0

# Why NEO_SANDBOX=local needs NEO_ALLOW_LOCAL_SANDBOX=1 in the service.
LOCAL_SANDBOX_RISK = (
    "local runs the model's commands on this host, as the service's user, where they "
    "can read its files (the App's key, the queue); set NEO_ALLOW_LOCAL_SANDBOX=1 to accept that"
)


class Settings(PreparedSettings, WebSettings, BaseSettings):
    """`neo serve` and `neo worker` configuration (docs/github-app.md has every variable).

    With PreparedSettings' NEO_PREPARED_* bounds of the prepared environments, and
    WebSettings' run page and sign-in."""

    model_config = SettingsConfigDict(env_prefix="NEO_", extra="ignore", frozen=True)

    github_app_id: int = Field(gt=0)
    github_private_key: SecretStr | None = None
    github_private_key_path: Path | None = None
    webhook_secret: SecretStr = Field(min_length=1)
    github_api_url: str = "https://api.github.com"
    # Where jobs clone and push: `<git url>/<owner>/<repo>.git`. Empty: github.com,
    # or the host of a GitHub Enterprise NEO_GITHUB_API_URL (`https://ghe/api/v3`).
    github_git_url: str = ""
    data_dir: Path = Field(default_factory=default_data_dir)
    # Empty: the embedded SQLite queue in the data directory (see `queue`).
    queue_url: str = ""
    # Jobs run at once by `neo serve`'s in-process workers; 0 receives and
    # queues only (run `neo worker` elsewhere).
    workers: int = Field(default=2, ge=0, le=64)
    # Seconds a worker's claim on a job lasts without a heartbeat: a worker
    # that died gives its jobs back this long after its last beat. It beats
    # every quarter of it and looks for expired leases every half.
    worker_lease: int = Field(default=60, ge=1, le=3600)
    # Seconds a job may run, all told, before its worker stops it and it
    # fails: a hung job that still heartbeats would hold its thread for ever.
    # The default is the longest `time_limit` a repository may set (240
    # minutes) plus an hour for cloning, setting up and publishing; the
    # queue takes the job from a worker that does not stop it by then.
    job_timeout: int = Field(default=DEFAULT_JOB_TIMEOUT, ge=60, le=7 * 24 * 3600)
    # Declared before `sandbox`, whose validator reads it.
    allow_local_sandbox: bool = False
    sandbox: Literal["docker", "local"] = "docker"
    sandbox_image: str = "neo-sandbox:local"
    # The most network any repository's jobs may have: `off`, or a comma
    # separated list of ecosystems and hosts. Unset: no bound.
    network: str | None = None
    # What repositories' MCP servers may be (runner/mcp/operator.py): commands
    # they may run, endpoints the operator vouches for, comma-separated. The
    # secrets servers get are NEO_MCP_<NAME>, read from the environment.
    mcp_commands: str = ""
    mcp_urls: str = ""
    handle: str = "@neo"
    # As `.github/neo.yml`'s trigger_label: GitHub's labels are 1 to 50 characters.
    trigger_label: str = Field(default="neo", min_length=1, max_length=50)
    # Where Neo's documentation lives (docs/ of its repository), for the links
    # in what Neo posts; a fork of Neo with documentation of its own sets it.
    docs_url: str = DEFAULT_DOCS_URL
    # Days a finished run's event log (its run page, `neo jobs logs`) is kept
    # after its last event; `neo serve` removes older ones every hour.
    run_retention_days: int = Field(default=14, ge=1, le=3650)
    # Events one job's log keeps at most (a 200-turn job writes about 2,000);
    # past it, one `truncated` event counts what was dropped.
    run_max_events: int = Field(default=MAX_RUN_EVENTS, ge=100, le=10_000_000)
    # Seconds a request's line and headers (from the connection, or from the
    # previous answer on a kept-alive one) and then a delivery's body may take
    # to arrive: a slower one is answered 408 and its connection closed.
    # GitHub itself gives up on a delivery not answered within 10 s.
    head_timeout: float = Field(default=DEFAULT_REQUEST_SECONDS, gt=0, le=600, allow_inf_nan=False)
    body_timeout: float = Field(default=DEFAULT_REQUEST_SECONDS, gt=0, le=600, allow_inf_nan=False)
    # Bot logins (e.g. "renovate[bot]") whose comments may trigger a run.
    # NoDecode: the environment's comma-separated form reaches `_bots` as it
    # is, instead of pydantic-settings decoding it as JSON first.
    allowed_bots: Annotated[frozenset[str], NoDecode] = frozenset()

    # Daily spending limits in US dollars (UTC days): the defaults a
    # repository's `budgets:` replaces, and ceilings it cannot raise.
    # Unset: no limit of the service's own.
    budget_repo_daily_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    budget_repo_daily_ceiling_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    budget_installation_daily_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    budget_installation_daily_ceiling_usd: float | None = Field(
        default=None, gt=0, allow_inf_nan=False
    )
    # Model prices per million tokens, as JSON: [{"model": "m", "input": 1, "output": 2}].
    # They win over the published ones and a repository's `prices:`.
    # NoDecode: `_prices` reads the JSON, with a message of its own.
    prices: Annotated[Prices, NoDecode] = ()

    @field_validator("handle")
    @classmethod
    def _handle(cls, value: str) -> str:
        problem = handle_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("docs_url")
    @classmethod
    def _docs_url(cls, value: str) -> str:
        problem = docs_url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.rstrip("/")

    @field_validator("trigger_label")
    @classmethod
    def _trigger_label(cls, value: str) -> str:
        # Blank, it would match no label GitHub allows: the trigger off, silently.
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("sandbox_image")
    @classmethod
    def _sandbox_image(cls, value: str) -> str:
        problem = image_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("network")
    @classmethod
    def _network(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_list(value)
            except BadEntry as error:
                raise ValueError(str(error)) from None
        return value

    @model_validator(mode="after")
    def _mcp(self) -> Settings:
        self.mcp_operator  # noqa: B018 - raises ConfigError for an entry that never matches
        return self

    @property
    def mcp_operator(self) -> Operator:
        """What the operator allows MCP servers; secrets from the process's environment."""
        return Operator.from_environ(
            {**os.environ, COMMANDS_VARIABLE: self.mcp_commands, URLS_VARIABLE: self.mcp_urls}
        )

    @property
    def network_ceiling(self) -> NetworkPolicy | None:
        """NEO_NETWORK as the bound of every job's network; None: no bound."""
        return None if self.network is None else parse_list(self.network)

    @field_validator("sandbox")
    @classmethod
    def _sandbox(cls, value: str, info: ValidationInfo) -> str:
        if value == "local" and not info.data.get("allow_local_sandbox"):
            raise ValueError(LOCAL_SANDBOX_RISK)
        return value

    @field_validator("github_api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @field_validator("github_git_url")
    @classmethod
    def _git_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @field_validator("allowed_bots", mode="before")
    @classmethod
    def _bots(cls, value: object) -> object:
        # A comma-separated list is friendlier in an env file than JSON; a
        # JSON list still works.
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise ValueError("expected bot logins separated by commas") from None
        return frozenset(part.strip() for part in value.split(",") if part.strip())

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return ()
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(NOT_JSON) from None

    @model_validator(mode="after")
    def _derived(self) -> Settings:
        if self.github_private_key is None and self.github_private_key_path is None:
            raise ValueError("NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH must be set")
        return self

    @property
    def git_url(self) -> str:
        """NEO_GITHUB_GIT_URL, or the web host that goes with NEO_GITHUB_API_URL."""
        if self.github_git_url:
            return self.github_git_url
        if self.github_api_url.endswith("/api/v3"):
            return self.github_api_url.removesuffix("/api/v3")
        return "https://github.com"

    @property
    def github_web(self) -> str:
        """NEO_GITHUB_WEB_URL, or GitHub's web host for NEO_GITHUB_API_URL: where people sign in."""
        return self.github_web_url or web_url(self.github_api_url)

    @property
    def operator_prices(self) -> dict[str, Price]:
        """NEO_PRICES as the runner takes them."""
        return runner_prices(self.prices)

    @property
    def queue(self) -> str:
        """NEO_QUEUE_URL, or the embedded SQLite queue in the data directory."""
        return self.queue_url or sqlite_url(self.data_dir / "neo.db")


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from `environ` (default: the process environment).

    Raises ConfigError with one line naming the first bad variable.
    """
    try:
        if environ is None:
            return Settings()
        values = {
            key.removeprefix("NEO_").lower(): value
            for key, value in environ.items()
            if key.startswith("NEO_")
        }
        return Settings.model_validate(values)
    except ValidationError as error:
        raise _settings_error(error) from None
    except SettingsError as error:
        # pydantic-settings' own failure to read a value, before validation.
        field = re.search(r'field "(\w+)"', str(error))
        name = f"NEO_{field.group(1).upper()}" if field else "a NEO_* variable"
        raise ConfigError(f"{name}: cannot read its value") from None


def ensure_data_dir(settings: Settings) -> None:
    """Create the data directory if need be and check the service can write in it.

    Raises ConfigError naming NEO_DATA_DIR, not its path: the message is
    the service's start-up output, and the path says how the host is laid out.
    """
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError("NEO_DATA_DIR: it is a file, not a directory") from None
    except OSError as error:
        raise ConfigError(f"NEO_DATA_DIR: cannot create it: {error.strerror}") from None
    try:
        # Writing a file is the only sure test: permissions, a read-only
        # mount and root's privileges all bear on it.
        with tempfile.TemporaryFile(dir=settings.data_dir):
            pass
    except OSError as error:
        raise ConfigError(f"NEO_DATA_DIR: cannot write in it: {error.strerror}") from None


def _settings_error(error: ValidationError) -> ConfigError:
    first = error.errors()[0]
    # The field alone: an item's index (`allowed_bots.0`) is no variable's name.
    name = str(first["loc"][0]).upper() if first["loc"] else ""
    message = one_line(str(first["msg"]).removeprefix("Value error, "), None)
    # Within a JSON value (NEO_PRICES), the key that is wrong: `my-model.output`.
    inside = ".".join(str(part) for part in first["loc"][1:] if not isinstance(part, int))
    if not name:
        return ConfigError(message)
    if first["type"] == "missing":
        if inside:
            return ConfigError(f"NEO_{name}: {inside} is missing")
        return ConfigError(f"NEO_{name} is not set")
    return ConfigError(f"NEO_{name}: {inside + ': ' if inside else ''}{message}")
