"""Whatever the calls cost, a run bills no more than its limit: a property, over the real run.

Hypothesis draws the limit, the models (the run's, a fallback's, the
subagents'), the subagents' share and how many run at once, when the first
provider goes down, which of the agent's calls are refused as too long for
the window (each then compacted and retried), how dense the prompts' tokens
are, and a seed for everything each call does: how it splits its prompt
between plain, cached and cache-written tokens (five minutes' or an hour's),
how much of its output allowance it writes (often all), and whether the
agent delegates, keeps working or ends. The run is the one `neo run` and a
job assemble (`open_run`, `RunKit.start`, the last word when a budget ran
out); the models are in-process providers registered like real ones, whose
prompts really are as many tokens as their text bounds allow at the drawn
density, so each call's bill is what a provider would charge for it at the
published prices. The property: the bills add up to no more than the limit.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import random
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.assembly import Briefing, RunSession, RunSettings, open_run
from runner.budget import ran_out
from runner.llm.errors import ContextOverflow, ProviderHTTPError
from runner.llm.limits import limits_for
from runner.llm.pricing import PricedProvider, cost_usd
from runner.llm.provider import Completed, Provider, StreamEvent
from runner.llm.types import (
    END_TURN,
    TOOL_USE,
    JSONObject,
    Request,
    Response,
    Text,
    ToolUse,
    Usage,
)
from runner.run import session_meta
from runner.sandbox.local import LocalSandbox
from runner.session import SessionStore
from runner.skills import RunSkills, run_skills
from runner.spend import bound_request
from runner.subagent import SubagentSettings

# (provider, model), each with a published price; Gemini's rates double past
# 200,000 prompt tokens, Claude's cache writes cost more than its input.
MODELS = [
    ("anthropic", "claude-sonnet-5-5"),
    ("anthropic", "claude-haiku-4-5"),
    ("anthropic", "claude-opus-4-1"),
    ("openai", "gpt-5"),
    ("openai", "gpt-5-mini"),
    ("google", "gemini-2.5-pro"),
    ("google", "gemini-2.5-flash"),
]
_READ_TOOLS = ["glob", "grep", "read_file"]


@dataclass
class World:
    """The truth of one run: how dense prompts are, which calls fail, what each call billed."""

    seed: int
    density: float  # a prompt's true tokens per token of its bound
    down_from: int | None  # the first provider is unavailable from this call on
    too_long: frozenset[int]  # the agent's turns refused as too long, once each
    bills: list[tuple[str, float]] = field(default_factory=list)
    calls: int = 0
    turns: int = 0
    refused: set[int] = field(default_factory=set)

    def rng(self, request: Request, kind: str) -> random.Random:
        last = request.messages[-1] if request.messages else None
        key = f"{self.seed}|{kind}|{len(request.messages)}|{request.max_tokens}|{last!r}"
        return random.Random(hashlib.sha256(key.encode()).digest())


class BilledModel:
    """A model a provider serves: answers by the request's shape, and bills each answer."""

    def __init__(self, world: World, name: str, model: str, *, first: bool) -> None:
        self._world = world
        self.name = name
        self.model = model
        self._first = first

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        world = self._world
        world.calls += 1
        kind = _kind(request)
        if self._first and world.down_from is not None and world.calls >= world.down_from:
            raise ProviderHTTPError(self.name, 529, "overloaded_error", "Overloaded")
        if kind == "turn":
            world.turns += 1
            if world.turns in world.too_long and world.turns not in world.refused:
                world.refused.add(world.turns)
                raise ContextOverflow(self.name, 400, "invalid_request_error", "too long")
        prompt = math.ceil(world.density * bound_request(request))
        if prompt > limits_for(self.model).context_window:
            raise ContextOverflow(self.name, 400, "invalid_request_error", "prompt is too long")
        rng = world.rng(request, kind)
        written = rng.randint(0, prompt) if self.name == "anthropic" else 0
        read = rng.randint(0, prompt - written)
        output = request.max_tokens if rng.random() < 0.5 else rng.randint(0, request.max_tokens)
        usage = Usage(
            input_tokens=prompt - written - read,
            output_tokens=output,
            cache_creation_input_tokens=written,
            cache_read_input_tokens=read,
            cache_creation_1h_input_tokens=written if rng.random() < 0.5 else 0,
        )
        billed = cost_usd(self.model, usage, self.name)
        assert billed is not None
        world.bills.append((kind, billed))
        yield Completed(_answer(kind, rng, world.calls, usage, self.model))
        await asyncio.sleep(0)


def _kind(request: Request) -> str:
    if "condensing the transcript" in request.system.text:
        return "summary"
    if request.tool_choice == "none":
        return "last word"
    if sorted(tool.name for tool in request.tools) == _READ_TOOLS:
        return "subagent"
    return "turn"


def _answer(kind: str, rng: random.Random, n: int, usage: Usage, model: str) -> Response:
    if kind != "turn":
        return Response((Text(f"{kind} {n}"),), END_TURN, usage, model)
    choice = rng.random()
    if choice < 0.3:
        asks = tuple(
            ToolUse(f"a{n}_{i}", "agent", {"description": "look", "prompt": "where is it?"})
            for i in range(rng.randint(1, 3))
        )
        return Response(asks, TOOL_USE, usage, model)
    if choice < 0.85:
        step: JSONObject = {"items": [{"content": f"step {n}", "status": "in_progress"}]}
        return Response((ToolUse(f"w{n}", "workflow", step),), TOOL_USE, usage, model)
    return Response((Text("done"),), END_TURN, usage, model)


@dataclass(frozen=True)
class Case:
    limit: float
    first: tuple[str, str]
    fallback: tuple[str, str] | None
    child_model: str | None
    subagents: bool
    share: float | None
    parallel: int
    max_turns: int
    world: World


@st.composite
def cases(draw: st.DrawFn) -> Case:
    first = draw(st.sampled_from(MODELS))
    same_provider = [m for p, m in MODELS if p == first[0]]
    return Case(
        limit=draw(st.floats(0.01, 4.0)),
        first=first,
        fallback=draw(st.none() | st.sampled_from(MODELS)),
        child_model=draw(st.none() | st.sampled_from(same_provider)),
        subagents=draw(st.booleans()),
        share=draw(st.none() | st.floats(0.05, 1.0)),
        parallel=draw(st.integers(1, 4)),
        max_turns=draw(st.integers(1, 12)),
        world=World(
            seed=draw(st.integers(0, 2**32)),
            density=draw(st.floats(0.05, 1.0)),
            down_from=draw(st.none() | st.integers(1, 20)),
            too_long=frozenset(draw(st.sets(st.integers(1, 12), max_size=3))),
        ),
    )


@functools.cache
def _skills() -> RunSkills:
    # The run's skills: the built-in ones, none invoked. The same (frozen) value
    # for every case, so read once: each read parses the built-in skills' YAML.
    return run_skills((), request="go")


async def run_case(case: Case, tree: Path) -> None:
    world = case.world

    made: list[Provider] = []

    def make(name: str, model: str | None = None, /, *, openai_auth: str = "api_key") -> Provider:
        assert model is not None
        # The run's own provider is made first; only it goes down, and only
        # when there is a fallback to go to.
        first = not made and case.fallback is not None
        made.append(PricedProvider(BilledModel(world, name, model, first=first)))
        return made[-1]

    run_settings = RunSettings(
        provider=case.first[0],
        model=case.first[1],
        fallback=case.fallback,
        max_turns=case.max_turns,
        max_cost_usd=case.limit,
        subagents=SubagentSettings(
            enabled=case.subagents,
            max_turns=3,
            max_parallel=case.parallel,
            model=case.child_model,
            budget_share=case.share,
        ),
    )
    async with open_run(run_settings, make) as kit:
        meta = session_meta(
            None, new_id="s", provider=case.first[0], model=case.first[1], cwd=str(tree)
        )
        briefing = Briefing("", _skills())
        run = kit.start(
            LocalSandbox(tree), RunSession(SessionStore(tree / ".home"), meta), briefing
        )
        error = await run.send("go")
        if error is not None and ran_out(error):
            await run.wrap_up(error)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def test_the_bills_of_a_run_never_add_up_to_more_than_its_limit(case: Case) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run_case(case, Path(tmp)))

    billed = sum(cost for _, cost in case.world.bills)
    assert billed <= case.limit + 1e-9, (
        f"billed ${billed:.4f} against ${case.limit:.4f}: {case.world.bills}"
    )
