"""The `agent` tool: hands one question to an inspect child and returns its answer.

The child is the ordinary loop on a fresh transcript, with the read-only
tools on the parent's sandbox and the supervisor's budget; what it spends is
reported through `ToolContext.spend`, its transcript saved beside the session.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from pydantic import Field

from runner.agent import Agent, Event, TextDelta, TurnFinished, TurnStarted
from runner.budget import ran_out
from runner.compact import WindowCompactor
from runner.continuation import ContinueCutResponses
from runner.errors import NeoError
from runner.llm.limits import limits_for
from runner.llm.types import JSONObject, ToolSpec, Usage
from runner.sandbox.base import Sandbox
from runner.session import Session, SessionError, SessionMeta, utc_timestamp
from runner.subagent.events import ChildEvent, ChildFinished, ChildStarted, ChildTurn
from runner.subagent.prompt import findings_prompt, inspect_prompt, task_message
from runner.subagent.supervisor import ChildBudget, SubagentBudget, Supervisor
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.glob import GlobTool
from runner.tools.grep import GrepTool
from runner.tools.read_file import ReadFileTool
from runner.tools.schema import ToolInput, input_schema, parse

__all__ = ["SPEC", "AgentTool", "inspect_tools"]

log = logging.getLogger("neo.subagent")

# Why a child's findings are asked for, by the kind of error that stopped it.
_WHY = {
    "max_turns": "You have used all the model calls you may make",
    "subagent_budget": "The subagents' budget is spent",
    "max_cost": "The run's cost limit is reached",
    "max_output_tokens": "Your answers keep hitting the output token limit",
    "context_window_exceeded": "The investigation no longer fits your context window",
    "timeout": "The time for it has run out",
}


class AgentInput(ToolInput):
    description: str = Field(
        min_length=1, max_length=120, description="What the subagent looks into, in 3 to 8 words."
    )
    prompt: str = Field(
        min_length=1,
        description=(
            "The whole task: the question, where to look, and what the answer must contain."
            " The subagent sees nothing of your conversation."
        ),
    )


SPEC = ToolSpec(
    name="agent",
    description=(
        "Hand one investigation to a subagent with a fresh context and only read_file, grep"
        " and glob on the same files: it changes nothing and reports facts with file paths"
        " and line numbers. Use it to explore many files or answer a broad question (where"
        " is X handled, which callers use Y) without filling your own context; its final"
        " answer is all you get back. Several calls in one response run in parallel. Not"
        " for a file you already know: read that yourself."
    ),
    input_schema=input_schema(AgentInput),
)


def inspect_tools(sandbox: Sandbox) -> list[Tool]:
    """An inspect child's tools: exactly these three, and never `agent` (depth 1)."""
    return [ReadFileTool(sandbox), GrepTool(sandbox), GlobTool(sandbox)]


class AgentTool:
    def __init__(self, supervisor: Supervisor, sandbox: Sandbox) -> None:
        self._supervisor = supervisor
        self._sandbox = sandbox

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        request = parse(AgentInput, args)
        supervisor = self._supervisor
        try:
            number = supervisor.admit()
        except SubagentBudget as refused:
            raise ToolError(str(refused)) from None
        watch = _Watch()
        child: Agent | None = None
        error: NeoError | None = None
        findings: str | None = None
        # How the child ended, for the progress comment: None when it answered.
        kind: str | None = "failed"
        try:
            async with supervisor.slot():
                child = self._child(number, ctx, watch)
                ctx.emit(ChildStarted(number, request.description))
                try:
                    await child.send(task_message(request.description, request.prompt))
                    kind = None
                except NeoError as stopped:
                    error, kind = stopped, stopped.kind
                    findings = await self._findings(child, number, stopped)
        except asyncio.CancelledError:
            kind = "interrupted"
            raise
        finally:
            usage = child.usage if child is not None else Usage()
            supervisor.finished(number, usage)
            ctx.spend(usage)
            if child is not None:
                self._save(number, child)
            ctx.emit(ChildFinished(number, request.description, watch.turns, usage, kind))
        text = watch.finished.text if watch.finished else ""
        if error is not None and findings is not None:
            return ToolOutput(
                f"[partial: the subagent stopped before it finished ({error}); what it"
                f" found so far:]\n\n{findings}"
            )
        if error is not None:
            partial = f"\n\nWhat it had found so far:\n{text}" if text else ""
            return ToolOutput(f"the subagent stopped: {error}{partial}", is_error=True)
        return ToolOutput(text or "the subagent ended without an answer")

    async def _findings(self, child: Agent, number: int, error: NeoError) -> str | None:
        """One call without tools for what a child a budget stopped has found; None
        when the children's budget cannot pay for it, or it fails."""
        if not (ran_out(error) or isinstance(error, SubagentBudget)):
            return None
        try:
            self._supervisor.check(upcoming_tokens=child.prompt_tokens())
            last = await child.wrap_up(findings_prompt(_WHY.get(error.kind, str(error))))
        except NeoError as failed:
            log.info("subagent %d: no findings call: %s", number, failed)
            return None
        return last.text.strip() or None

    def _child(self, number: int, ctx: ToolContext, watch: _Watch) -> Agent:
        supervisor = self._supervisor
        settings = supervisor.settings

        def observe(event: Event) -> None:
            if isinstance(event, TurnStarted):
                watch.turns = event.turn
                ctx.emit(ChildTurn(number, event.turn))
            elif isinstance(event, TurnFinished):
                watch.finished = event
            if not isinstance(event, TextDelta):
                ctx.emit(ChildEvent(number, event))

        return Agent(
            supervisor.provider,
            tools=inspect_tools(self._sandbox),
            system=inspect_prompt(self._sandbox.root),
            max_turns=settings.max_turns,
            on_event=observe,
            compactor=WindowCompactor(supervisor.provider),
            effort=supervisor.effort,
            budget=ChildBudget(supervisor, number),
            output_limit=ContinueCutResponses(limits_for(supervisor.provider.model).max_output),
        )

    def _save(self, number: int, child: Agent) -> None:
        placement = self._supervisor.placement
        if placement is None:
            return
        provider = self._supervisor.provider
        now = utc_timestamp()
        meta = SessionMeta(
            f"{placement.session_id}.{number}",
            provider.name,
            provider.model,
            self._sandbox.root,
            now,
            now,
        )
        try:
            placement.store.save_child(
                placement.session_id,
                number,
                Session(replace(meta, usage=child.usage), tuple(child.transcript())),
            )
        except SessionError as failed:
            # The answer matters more than its record: the parent goes on.
            log.warning("%s", failed)


class _Watch:
    """What the tool learns of its child from the child's events."""

    def __init__(self) -> None:
        self.turns = 0
        self.finished: TurnFinished | None = None
