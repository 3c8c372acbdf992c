"""The `.github/neo.yml` reference, rendered from the model so the docs cannot drift.

`uv run python -m bot.config.reference > docs/configuration.md` writes it;
a test fails when the two differ.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from bot.config.loading import MAX_CONFIG_BYTES
from bot.config.mcp import Mcp, McpServer
from bot.config.model import (
    Budgets,
    CiRepair,
    Fallback,
    Network,
    RepoConfig,
    Schedule,
    Subagents,
)
from bot.config.prices import ModelPrice
from runner.network import ECOSYSTEMS

__all__ = ["EXAMPLE_YAML", "reference_markdown"]


EXAMPLE_YAML = """\
# .github/neo.yml: every setting is optional.
provider: anthropic
model: claude-sonnet-5-5
fallback: {provider: openai, model: gpt-5}  # when Anthropic is unavailable
openai_auth: api_key  # or subscription, with provider: openai
max_turns: 150
time_limit: 45  # minutes
max_cost_usd: 5.00
budgets: {repo_daily_usd: 20, installation_daily_usd: 100}  # per UTC day
prices:  # per million tokens, for a model with no published price
  - {model: my-finetune, input: 0.5, output: 1.5}
ci_repair: {enabled: true, attempts: 2}  # or just: ci_repair: true
thinking: true
effort: high
subagents: {max_parallel: 4, model: claude-haiku-4-5}  # or {enabled: false}
setup:
  - pip install -e '.[dev]'
network: {allow: [python, github, docs.example.com], methods: read}  # or: network: off
mcp:  # tools from MCP servers, served on Neo's side; see docs/mcp.md
  servers:
    time: {command: [mcp-server-time], tools: ["*"]}  # commands the operator allows
    sentry:
      url: https://mcp.sentry.example/mcp
      tools: [get_issue]
      secrets: [SENTRY_TOKEN]  # the operator's NEO_MCP_SENTRY_TOKEN
      headers: {Authorization: "Bearer ${SENTRY_TOKEN}"}
trigger_label: neo
allowed_users: [admin, maintain, write]
allowed_bots: ["renovate[bot]"]
branch_prefix: neo/
draft: true
allow_workflow_edits: false
fork_work: propose  # or push; see docs/github-app.md
disabled_skills: [review-pull-request]  # by name; see docs/skills.md
schedules:
  - name: weekly dependency update
    cron: "0 6 * * MON"
    prompt: $update-dependencies, then run the tests and fix what breaks.
    branch: neo/deps
"""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return "one of " + ", ".join(f"`{arg}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        return " or ".join(_type_name(arg) for arg in kept) + (
            " or null" if len(kept) < len(args) else ""
        )
    if origin is dict:
        value = args[1]
        if isinstance(value, type) and issubclass(value, BaseModel):
            return "mapping of names to entries (below)"
        return f"map of {_type_name(args[0])} to {_type_name(value)}"
    if origin is tuple:
        inner = _type_name(args[0])
        if typing.get_origin(args[0]) is Literal:
            return "list, each " + inner
        return f"list of {inner}s"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"{annotation.__name__.lower()}"
    names = {str: "string", int: "integer", bool: "boolean"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _bounds(info: FieldInfo) -> str:
    low = high = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = item.ge
        elif isinstance(item, annotated_types.Le):
            high = item.le
    if low is not None and high is not None:
        return f", {low} to {high}"
    return ""


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return f"`{json.dumps(value.model_dump())}`"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: type[BaseModel]) -> list[str]:
    rows = ["| Setting | Type | Default | Description |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        kind = _type_name(info.annotation) + _bounds(info)
        cells = [f"`{name}`", kind, _default(info), info.description or ""]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return rows


def reference_markdown() -> str:
    """The `.github/neo.yml` reference, rendered from the model; deterministic."""
    lines = [
        "# `.github/neo.yml` reference",
        "",
        "_Generated from `bot/config/model.py` by "
        "`uv run python -m bot.config.reference > docs/configuration.md`; "
        "do not edit by hand (a test fails when the two differ)._",
        "",
        "Neo reads its per-repository settings from `.github/neo.yml` on the repository's "
        "default branch only, so a pull request cannot change them. When the repository "
        "has no such file, Neo reads `.github/neo.yml` from the default branch of the "
        "owner's `.github` repository instead (e.g. `octo/.github` for `octo/hello`), "
        "provided the App is installed on that repository too. Either file is used whole, "
        "never merged with the other: a repository with a file of its own ignores the "
        "owner's, bar its daily [budgets](#budgets), and a setting it leaves out takes "
        "Neo's default. Every setting is "
        f"optional; the file may be empty or absent. It is YAML, at most "
        f"{MAX_CONFIG_BYTES // 1024} KiB. An unknown setting or an invalid value makes Neo "
        "post one comment naming the setting and the problem, and run nothing.",
        "",
        "## Example",
        "",
        "```yaml",
        *EXAMPLE_YAML.splitlines(),
        "```",
        "",
        "## Settings",
        "",
        *_table(RepoConfig),
        "",
        "## Fallback",
        "",
        "`fallback` names the provider a run turns to when its own still answers 429 "
        "(rate limited, or out of quota) or 5xx after its retries, or cannot be reached. "
        "Errors in the request itself, such as a bad key or a prompt too long, do not "
        "switch providers. From the switch on the run stays with the fallback, the "
        "progress comment says so, and the report names both models and why. The "
        "fallback's API key, like the first provider's, is the service's.",
        "",
        *_table(Fallback),
        "",
        "## Subagents",
        "",
        "With `subagents` on, the agent may hand an investigation (where is X handled, "
        "which callers use Y) to a subagent: a fresh conversation with only `read_file`, "
        "`grep` and `glob` on the same files, which changes nothing and answers with facts "
        "and line numbers. Only that answer enters the main conversation, so exploring "
        "many files costs the run far fewer tokens there. Subagents cannot start "
        "subagents. Their tokens count in the run's usage and cost, the progress comment "
        "shows each one running, and their conversations are saved beside the run's "
        "session.",
        "",
        *_table(Subagents),
        "",
        "## Budgets",
        "",
        "`budgets` caps what runs spend per UTC day (00:00 to 00:00 UTC), summed from "
        "what each finished run cost, per repository and per App installation. A run "
        "that would start with a day's spend at or past a limit is not run: one comment "
        "names the limit, what was spent and when it resets, and nothing is cloned or "
        "asked of the model. A run that starts may spend at most what is left of each "
        "limit (its `max_cost_usd`, if lower, still applies), so a run alone cannot "
        "carry a day far past it; runs going on at once each start from what was left "
        "when they started. The service's operator sets defaults and ceilings "
        "(`NEO_BUDGET_*`); a value above the ceiling is lowered to it, and the report "
        "says so. Set in the owner's `.github` repository, `budgets` binds every "
        "repository of the installation, also one with a `.github/neo.yml` of its own, "
        "which can lower the owner's limits but not raise them.",
        "",
        *_table(Budgets),
        "",
        "## Prices",
        "",
        "A run is charged for each model call at the model's published price "
        "(genai-prices). `prices` gives one to a model that has none: with a cost limit "
        "(`max_cost_usd` or a daily budget) such a model is refused before the run "
        "starts, naming it, unless it has a price here or in the operator's "
        "`NEO_PRICES`; without any limit it runs and is recorded at no cost, and the "
        "report names it with its calls, which the cost shown leaves out. A published "
        "price, and the operator's, win over the repository's.",
        "",
        *_table(ModelPrice),
        "",
        "## CI repair",
        "",
        "With `ci_repair` on, a check run, check suite or workflow run that fails (or "
        "times out) on a pull request Neo opened from a branch of this repository is "
        "repaired: Neo reads the failed checks' output, annotations and the end of "
        "their Actions logs, continues the session of the thread that made the pull "
        "request on its branch, pushes a fix and updates that thread's progress "
        "comment. Never when someone else made the head commit, never on a fork, and "
        "at most `attempts` repairs in a row: each repair commit says which attempt it "
        "is (a `Neo-CI-Repair: N` trailer), so the count restarts when Neo pushes "
        "ordinary work. After the last, one comment says CI is still red; `@neo` can "
        "be asked to go on. The App needs `checks: read` and `actions: read`.",
        "",
        *_table(CiRepair),
        "",
        "## Network",
        "",
        "The agent's commands reach the network only through an egress proxy Neo "
        "starts for the job, in the Docker sandbox: `network` says what it lets "
        "through, and the operator's `NEO_NETWORK` is the most it may be. `off` "
        "starts no proxy. Setup reaches any public host (within `NEO_NETWORK`) unless "
        "`network` is `off`. A refused request is listed in the report with the "
        "command that made it. [The network](network.md) has the whole story.",
        "",
        *_table(Network),
        "",
        "| Ecosystem | Hosts |",
        "|---|---|",
        *(
            f"| `{name}` | {', '.join(f'`{h}`' for h in hosts)} |"
            for name, hosts in ECOSYSTEMS.items()
        ),
        "",
        "**How to choose.** Leave `network` out, and the agent reaches the registries "
        "of the ecosystems automatic setup found, with read methods: enough to install "
        "a dependency and run the tests. Name what a task needs beyond that (`allow: "
        "[python, github, docs.example.com]`), starting from the hosts a report listed "
        "as blocked; `network: off` for an agent that should reach nothing. Only the "
        "default branch's file counts. The operator's `NEO_NETWORK` (`off`, or a "
        "comma-separated list as in `allow`) bounds every repository: one that asks "
        "for more gets what both allow, and its report says what was dropped.",
        "",
        "**A blocked request** fails in the command (`403 Forbidden`, or a refused "
        "`CONNECT` tunnel for HTTPS), and the job's report names each refused host "
        "once, with the first command that tried it and the two ways to let it through:",
        "",
        "```text",
        "**Blocked by the network policy:** Neo's proxy refused 1 host.",
        "- `files.example.org`, by `pip install left-pad`",
        "",
        "To let the agent reach a host, add it to `network.allow` in `.github/neo.yml` "
        "on the default branch; or move the step that needs it into `setup`, which "
        "reaches public hosts before the agent starts.",
        "```",
        "",
        "## MCP",
        "",
        "`mcp` gives the agent tools from MCP servers (Model Context Protocol). The "
        "servers run on the service's side, never in the sandbox: a gateway there starts "
        "them, holds their secrets and reaches their hosts, and the agent calls each "
        "allowed tool as `<server>__<tool>`, with its answer quoted as data. A server "
        "that does not start is left out (the progress comment and the report say why) "
        "unless it is `required`. What the operator allows (`NEO_MCP_COMMANDS`, "
        "`NEO_MCP_URLS`, the secrets `NEO_MCP_<NAME>`) and the security model: "
        "[MCP tools](mcp.md).",
        "",
        *_table(Mcp),
        "",
        "Each entry of `servers`:",
        "",
        *_table(McpServer),
        "",
        "## Schedules",
        "",
        "Each entry of `schedules` runs a job when its cron expression fires, "
        "once per time slot, and updates the schedule's open pull request "
        "instead of opening a new one each time.",
        "",
        "Times are UTC. A job is queued up to 5 minutes after its time, at an offset "
        "fixed for each repository and schedule so that many repositories do not all "
        "start at once (and never as late as the schedule's next time). If Neo was "
        "down when a time passed, it runs the latest one it missed once when it is "
        "back, not once for each. A new or edited schedule takes effect within "
        "15 minutes.",
        "",
        *_table(Schedule),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(reference_markdown())
