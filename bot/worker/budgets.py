"""Daily spending limits: which apply to a job, whether it may start, what it may spend.

Pure: the worker reads the day's spend from the queue and the time from its
clock, then these decide. A repository's `budgets:` replaces the operator's
defaults, and is lowered to the owner's (`Budgets.bound_by`, read from the
owner's `.github` repository) and to the operator's ceilings. Windows are
UTC days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from bot.config import Budgets
from bot.config.settings import Settings
from bot.queue import SpendRecord
from runner.job import JobResult

__all__ = [
    "Allowance",
    "Limit",
    "OperatorBudgets",
    "Over",
    "Scope",
    "allowance",
    "bounded_cost",
    "day_window",
    "limits",
    "operator_budgets",
    "over_text",
    "spend_records",
    "usd",
]

Scope = Literal["repository", "installation"]


@dataclass(frozen=True, slots=True)
class OperatorBudgets:
    """The service's own limits (NEO_BUDGET_*): defaults, and ceilings no repository can raise."""

    repo_daily_usd: float | None = None
    repo_daily_ceiling_usd: float | None = None
    installation_daily_usd: float | None = None
    installation_daily_ceiling_usd: float | None = None


def operator_budgets(settings: Settings) -> OperatorBudgets:
    """The service's NEO_BUDGET_* settings."""
    return OperatorBudgets(
        repo_daily_usd=settings.budget_repo_daily_usd,
        repo_daily_ceiling_usd=settings.budget_repo_daily_ceiling_usd,
        installation_daily_usd=settings.budget_installation_daily_usd,
        installation_daily_ceiling_usd=settings.budget_installation_daily_ceiling_usd,
    )


@dataclass(frozen=True, slots=True)
class Limit:
    """One daily limit that applies to a job, and where it comes from."""

    scope: Scope
    usd: float
    # For the reader: "`budgets.repo_daily_usd` in `.github/neo.yml`", "NEO_BUDGET_…".
    source: str
    # The repository asked for more than the ceiling allows: what it asked.
    clamped_from: float | None = None

    @property
    def note(self) -> str | None:
        """One line saying the repository's value was lowered, or None."""
        if self.clamped_from is None:
            return None
        return (
            f"The {self.source} of {usd(self.clamped_from)} is above this service's"
            f" ceiling, so the ceiling of {usd(self.usd)} applies."
        )


@dataclass(frozen=True, slots=True)
class Over:
    """A limit the day's spend has reached: the job is not run."""

    limit: Limit
    spent: float
    resets_at: datetime


@dataclass(frozen=True, slots=True)
class Allowance:
    """What a job may still spend today, and the limit that leaves the least."""

    usd: float
    limit: Limit


def limits(config: Budgets, operator: OperatorBudgets, *, config_path: str) -> tuple[Limit, ...]:
    """The daily limits of a job whose repository's config (at `config_path`) holds
    `config`, the owner's binding ones included."""

    def where(name: str) -> str:
        return f"`budgets.{name}` in `{config.source(name) or config_path}`"

    found = (
        _limit(
            "repository",
            config.repo_daily_usd,
            operator.repo_daily_usd,
            operator.repo_daily_ceiling_usd,
            where("repo_daily_usd"),
            "NEO_BUDGET_REPO_DAILY",
        ),
        _limit(
            "installation",
            config.installation_daily_usd,
            operator.installation_daily_usd,
            operator.installation_daily_ceiling_usd,
            where("installation_daily_usd"),
            "NEO_BUDGET_INSTALLATION_DAILY",
        ),
    )
    return tuple(limit for limit in found if limit is not None)


def _limit(
    scope: Scope,
    own: float | None,
    default: float | None,
    ceiling: float | None,
    own_source: str,
    variable: str,
) -> Limit | None:
    if own is not None:
        if ceiling is not None and own > ceiling:
            return Limit(scope, ceiling, own_source, clamped_from=own)
        return Limit(scope, own, own_source)
    if default is not None:
        if ceiling is not None and default > ceiling:
            return Limit(scope, ceiling, f"{variable}_CEILING_USD")
        return Limit(scope, default, f"{variable}_USD")
    if ceiling is not None:
        return Limit(scope, ceiling, f"{variable}_CEILING_USD")
    return None


def day_window(now: float) -> tuple[float, datetime]:
    """The start of `now`'s UTC day (unix time), and the next 00:00 UTC, when it resets."""
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today.timestamp(), today + timedelta(days=1)


def allowance(
    spent: dict[Scope, float], found: tuple[Limit, ...], now: float
) -> Over | Allowance | None:
    """The first limit `spent` has reached, else the least that is left; None: no limit."""
    least: Allowance | None = None
    for limit in found:
        so_far = spent.get(limit.scope, 0.0)
        left = limit.usd - so_far
        if left <= 0:
            return Over(limit, so_far, day_window(now)[1])
        if least is None or left < least.usd:
            least = Allowance(left, limit)
    return least


def over_text(over: Over, *, repository: str, installation_id: int | None) -> str:
    """The one comment: which limit, its window, what was spent, when it resets."""
    limit = over.limit
    if limit.scope == "repository":
        whose = f"the daily budget of `{repository}`"
    else:
        account = repository.split("/", 1)[0]
        whose = f"the daily budget of the App installation of `{account}`"
        if installation_id is not None:
            whose += f" ({installation_id})"
    resets = over.resets_at.strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"Neo did not run: {whose}, {usd(limit.usd)} per UTC day ({limit.source}), is spent:"
        f" {usd(over.spent)} since 00:00 UTC today. It resets at {resets}; ask again then,"
        " or raise the limit."
    )
    note = limit.note
    return text if note is None else f"{text} {note}"


def usd(amount: float) -> str:
    return f"${amount:,.2f}"


def spend_records(
    job_id: int, repository: str, installation_id: int | None, result: JobResult, at: float
) -> tuple[SpendRecord, ...]:
    """What a finished run cost, for the queue; nothing when it made no model call.

    The runner sums a run's cost over its models: a run that fell back is one
    record, its model "first → fallback". A model without a known price
    records its tokens at no cost.
    """
    usage = result.usage
    cost = result.cost_usd or 0.0
    if cost == 0 and usage.input_tokens == 0 and usage.output_tokens == 0:
        return ()
    model = " → ".join(result.models) if result.models else "unknown"
    return (
        SpendRecord(
            job_id=job_id,
            repository=repository,
            installation_id=installation_id,
            model=model,
            at=at,
            cost_usd=cost,
            input_tokens=usage.input_tokens
            + usage.cache_creation_input_tokens
            + usage.cache_read_input_tokens,
            output_tokens=usage.output_tokens,
        ),
    )


def bounded_cost(max_cost_usd: float | None, left: Allowance | None) -> float | None:
    """A run's cost limit: its config's, or what is left today, whichever is less."""
    if left is None:
        return max_cost_usd
    return left.usd if max_cost_usd is None else min(max_cost_usd, left.usd)
