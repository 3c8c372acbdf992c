"""One run assembled, the same way for a job (`runner.job`) and `neo run` (`runner.headless`).

    async with open_run(settings) as kit:      # providers (with fallback), budget
        ...                                    # the caller's tree and sandbox
        run = kit.start(box, session, briefing, on_event=...)
        error = await run.send(briefing.skills.first_message(prompt))

`RunSettings` is what both entry points choose alike: the model and its
fallback, the limits, how hard the model thinks, the skills left out, the
subagents. `open_run` opens what the run calls and closes it after: the
provider with its fallback, the subagents' own when they have a model of
their own, the budget. `RunKit.start` builds the agent on a sandbox: the
subagents' supervisor, the skills, the editing tools of the model's family,
the MCP servers' tools once their gateway is ready (`runner.mcp.run`), the
system prompt, and the run recorded into its session. What truly differs
(the working tree, the sandbox, which session is continued, what becomes of
the result) stays with each entry point.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from runner.agent import Agent, Event, Steering
from runner.budget import RunBudget
from runner.compact import WindowCompactor
from runner.context import Environment, build_system_prompt
from runner.context.families import family_segment
from runner.continuation import ContinueCutResponses
from runner.imports import imported, importing
from runner.llm.cache_ttl import LongCacheAfterGaps
from runner.llm.fallback import may_answer, models_of, with_fallback
from runner.llm.limits import limits_for
from runner.llm.price_book import PriceBook
from runner.llm.provider import Provider, close_provider
from runner.llm.registry import DEFAULT_PROVIDER, make_provider
from runner.llm.types import Effort, SystemPrompt
from runner.run import AgentRun
from runner.sandbox.base import Sandbox
from runner.session import Session, SessionMeta, SessionStore
from runner.skills import RunSkills, Skill, with_skill_reads
from runner.spend import PRICES_IN_ENVIRONMENT, Ledger, MeteredProvider
from runner.subagent import (
    AgentTool,
    Placement,
    SubagentSettings,
    Supervisor,
    children_provider,
)
from runner.tools import Checklist, tools_for
from runner.tools.base import Tool
from runner.tools.registry import editing_tools

if TYPE_CHECKING:
    # The SDK only where servers run: `runner.mcp.run` imports it when it starts some.
    from runner.mcp.gateway import Gateway

__all__ = [
    "Briefing",
    "ProviderFactory",
    "RunKit",
    "RunSession",
    "RunSettings",
    "agent_tools",
    "make_agent",
    "open_run",
]


class ProviderFactory(Protocol):
    """(provider name, model or None for its default, how openai signs in) -> a provider."""

    def __call__(
        self, name: str, model: str | None = None, /, *, openai_auth: str = "api_key"
    ) -> Provider: ...


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What a run is allowed and asked: its model, limits, skills and subagents."""

    # None: DEFAULT_PROVIDER (`neo run --resume` takes the session's first).
    provider: str | None = None
    # None: the provider's default model.
    model: str | None = None
    # (provider, model) to turn to when the first is unavailable.
    fallback: tuple[str, str | None] | None = None
    # How the openai provider signs in: "api_key" or "subscription"; None: api_key.
    openai_auth: str | None = None
    max_turns: int = 100
    # Seconds the run may take; None: no limit.
    time_limit: float | None = None
    # How hard the model thinks; None: not at all.
    effort: Effort | None = None
    # US dollars the run's model calls may cost, all told (subagents, compaction,
    # the last word, a fallback's); None: no limit.
    max_cost_usd: float | None = None
    # The prices its calls are charged at; with a cost limit, every model the
    # run may call needs one. `where_prices_go` says, to whoever lacks one, where
    # a price can be given.
    prices: PriceBook = field(default_factory=PriceBook)
    where_prices_go: str = PRICES_IN_ENVIRONMENT
    # Skills left out of the catalog and never invoked.
    disabled_skills: tuple[str, ...] = ()
    subagents: SubagentSettings = field(default_factory=SubagentSettings)

    @property
    def provider_name(self) -> str:
        return self.provider or DEFAULT_PROVIDER


@dataclass(frozen=True, slots=True)
class RunSession:
    """Where a run records its conversation, and the saved one it continues."""

    store: SessionStore
    meta: SessionMeta
    previous: Session | None = None
    # A job's session, under its open mark: as `AgentRun` has it, once the
    # agent compacts, the file keeps its last save.
    hold_after_compaction: bool = False


@dataclass(frozen=True, slots=True)
class Briefing:
    """What the system prompt says beside its base segment.

    `environment` holds the facts only the caller knows (the tree, the
    network, the setup); the kit adds the working directory and the budget.
    """

    project: str
    skills: RunSkills
    environment: Environment = field(default_factory=Environment)
    extra: str = ""


@dataclass(frozen=True, slots=True)
class RunKit:
    """An opened run's providers and budget, under its settings; `start` builds its agent.

    Both providers are metered on the run's `ledger`: every call the agent, its
    compactor, its last word and its subagents make is reserved and counted there.
    """

    settings: RunSettings
    provider: MeteredProvider
    # What the subagents call: the run's provider (their own model's, when they
    # have one), charged to their share of the ledger.
    children: MeteredProvider
    budget: RunBudget
    ledger: Ledger

    def start(
        self,
        box: Sandbox,
        session: RunSession,
        briefing: Briefing,
        *,
        on_event: Callable[[Event], None] | None = None,
        tools: Sequence[Tool] = (),
        mcp: Gateway | None = None,
        steering: Steering | None = None,
    ) -> AgentRun:
        """The agent on `box`, continuing `session`, recorded into it.

        `tools` are a kind of job's own (a review's); `mcp` the gateway whose
        servers' tools the agent gets, once it is ready (`runner.mcp.run`);
        `steering` what people watching the run tell it between turns. The
        invoked skills' notice is the first event, then the servers the
        gateway left out.
        """
        settings, skills = self.settings, briefing.skills
        meta = session.meta
        meta = replace(meta, skills=tuple(dict.fromkeys((*meta.skills, *skills.names))))
        agent = make_agent(
            self.provider,
            agent_tools(
                self.provider.model,
                box,
                skills.discovery.skills,
                self._supervisor(session),
                tools,
                mcp=mcp.tools if mcp is not None else (),
            ),
            system=self._system_prompt(box, briefing),
            budget=self.budget,
            previous=session.previous,
            effort=settings.effort,
            steering=steering,
        )
        run = AgentRun(
            agent,
            session.store,
            meta,
            on_event=on_event,
            hold_after_compaction=session.hold_after_compaction,
            ledger=self.ledger,
        )
        if skills.invoked and on_event is not None:
            on_event(skills.notice())
        notice = mcp.notice() if mcp is not None else None
        if notice is not None and on_event is not None:
            on_event(notice)
        return run

    def _supervisor(self, session: RunSession) -> Supervisor | None:
        """What runs the agent's subagents, their sessions beside `session`; None: none."""
        settings = self.settings
        if not settings.subagents.enabled:
            return None
        return Supervisor(
            settings.subagents,
            self.children,
            effort=settings.effort,
            placement=Placement(session.store, session.meta.id),
        )

    def _system_prompt(self, box: Sandbox, briefing: Briefing) -> SystemPrompt:
        """The system prompt of the agent on `box`: `briefing`, the run's limits, the
        model's editing tools and its family's segment."""
        model, settings = self.provider.model, self.settings
        edit_tool, shell_tool = editing_tools(model)
        environment = replace(
            briefing.environment,
            workdir=box.root,
            max_turns=settings.max_turns,
            time_limit=settings.time_limit,
        )
        return build_system_prompt(
            project=briefing.project,
            environment=environment,
            skills=briefing.skills.catalog,
            extra=briefing.extra,
            edit_tool=edit_tool,
            shell_tool=shell_tool,
            family=family_segment(model),
        )

    def cost(self) -> float | None:
        """What the run's model calls cost, all told; None when none had a price."""
        return self.ledger.cost

    def unpriced(self) -> tuple[tuple[str, int], ...]:
        """The models without a price the run called (only without a limit), with
        how many calls each: `cost` leaves them out."""
        return tuple(self.ledger.unpriced.items())

    def models(self) -> tuple[tuple[str, ...], str | None]:
        """The models that did the run's work, in order, and why a fallback took over."""
        return models_of(self.provider.inner)


@contextlib.asynccontextmanager
async def open_run(
    settings: RunSettings, make: ProviderFactory = make_provider
) -> AsyncIterator[RunKit]:
    """The run's providers and budget, closed when the block ends.

    Raises ConfigError when the settings cannot work (an unknown provider,
    missing credentials, a cost limit on a model without a price).
    """
    make_one: Callable[..., Provider] = functools.partial(
        make, openai_auth=settings.openai_auth or "api_key"
    )
    ledger = Ledger(
        settings.max_cost_usd, settings.prices, where_prices_go=settings.where_prices_go
    )
    # Off the event loop: the first use of an SDK imports it, seconds of work
    # that would starve the heartbeats of a worker's other jobs past their lease;
    # and one importer at a time (`runner.imports` says why).
    provider = await importing(
        with_fallback, make_one, settings.provider_name, settings.model, settings.fallback
    )
    children = provider
    # The price data (half a second of CPU) loads off the loop while the job
    # goes on: the limit's check below and the first priced call read it.
    prices = asyncio.create_task(imported("genai_prices"))
    try:
        children = await importing(
            children_provider, settings.subagents, provider, make_one, settings.provider_name
        )
        if ledger.limit is not None:
            await prices
        # Every model the run may call has a price, or a limit could not hold.
        ledger.require_prices((*may_answer(provider), *may_answer(children)))
        metered = MeteredProvider(provider, ledger)
        share = ledger.share("the subagents' share", settings.subagents.budget_share)
        budget = RunBudget(
            max_turns=settings.max_turns, time_limit=settings.time_limit, spend=metered
        )
        yield RunKit(settings, metered, MeteredProvider(children, ledger, share), budget, ledger)
    finally:
        with contextlib.suppress(Exception):
            await prices  # a thread's import cannot be cancelled: it ends here
        if children is not provider:
            await close_provider(children)
        await close_provider(provider)


def agent_tools(
    model: str,
    box: Sandbox,
    skills: Sequence[Skill] = (),
    subagents: Supervisor | None = None,
    extra: Sequence[Tool] = (),
    *,
    mcp: Sequence[Tool] = (),
) -> list[Tool]:
    """The tools `model`'s family knows on `box`; read_file also reads `skills` not in
    the tree, `subagents` adds the `agent` tool, `extra` a kind of job's own, and
    `mcp` the MCP servers' (`server__tool`, served by the gateway on the host side)."""
    tools = tools_for(model, box, checklist=Checklist())
    if subagents is not None:
        tools.append(AgentTool(subagents, box))
    tools.extend(extra)
    tools.extend(mcp)
    return with_skill_reads(tools, skills)


def make_agent(
    provider: Provider,
    tools: Sequence[Tool],
    *,
    system: SystemPrompt,
    budget: RunBudget,
    previous: Session | None = None,
    effort: Effort | None = None,
    steering: Steering | None = None,
) -> Agent:
    """The agent with `tools`, continuing `previous`'s conversation, within `budget`
    (its turns too), told between turns what `steering` has for it."""
    return Agent(
        # The prompt cache kept an hour once the run waited minutes on a command.
        LongCacheAfterGaps(provider),
        tools=tools,
        system=system,
        max_turns=budget.max_turns,
        messages=previous.messages if previous else (),
        usage=previous.meta.usage if previous else None,
        # A saved conversation that is already large is compacted before the
        # first call, like any that grows too large.
        compactor=WindowCompactor(provider),
        effort=effort,
        budget=budget,
        # A response cut at the output limit gets two more calls before the run fails.
        output_limit=ContinueCutResponses(limits_for(provider.model).max_output),
        steering=steering,
    )
