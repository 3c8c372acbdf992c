"""Two scripted models that prove the harness without a key: an oracle and a no-op.

The oracle applies the task's real fix through the agent's own shell tool,
then says it is done: every sound task must grade resolved. The no-op says it
changes nothing: every task must grade unresolved. Both go through the whole
job path (clone, sandbox, tools, commit, push), as a real model would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from bench.quality.taskset import Task
from runner.llm.provider import Completed, Provider, StreamEvent, TextDelta
from runner.llm.types import END_TURN, TOOL_USE, Request, Response, Text, ToolResult, ToolUse, Usage
from runner.tools.registry import editing_tools

__all__ = ["SCRIPTED", "ScriptedModel", "scripted_factory"]

SCRIPTED = ("oracle", "noop")
_EOF = "NEO_ORACLE_PATCH_EOF"


class ScriptedModel:
    """A provider whose every answer is `answer(request)`."""

    def __init__(self, name: str, answer: Callable[[Request], Response]) -> None:
        self._name = name
        self._answer = answer
        self.requests = 0

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def model(self) -> str:
        return f"{self._name}-model"

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.requests += 1
        response = self._answer(request)
        if response.text:
            yield TextDelta(response.text)
        yield Completed(response)


def _oracle(task: Task) -> Callable[[Request], Response]:
    patch = task.fix.decode()
    patch = patch if patch.endswith("\n") else patch + "\n"
    if _EOF in patch:
        raise ValueError(f"task {task.id}: fix.patch holds the oracle's heredoc marker")
    shell = editing_tools("oracle-model")[1]

    def answer(request: Request) -> Response:
        last = request.messages[-1] if request.messages else None
        if last is not None and any(isinstance(block, ToolResult) for block in last.content):
            return Response((Text("Applied the fix."),), END_TURN, Usage(10, 5))
        command = f"git apply --whitespace=nowarn <<'{_EOF}'\n{patch}{_EOF}\n"
        use = ToolUse("oracle-1", shell, {"command": command})
        return Response((Text("Applying the known fix."), use), TOOL_USE, Usage(10, 5))

    return answer


def _noop(request: Request) -> Response:
    return Response((Text("I change nothing."),), END_TURN, Usage(10, 5))


def scripted_factory(kind: str, task: Task) -> Callable[..., Provider]:
    """A provider factory (as `runner.job.run` takes) for scripted model `kind` on `task`."""
    if kind not in SCRIPTED:
        raise ValueError(f"unknown scripted model {kind!r}")
    answer = _oracle(task) if kind == "oracle" else _noop

    def factory(
        name: str, model: str | None = None, /, *, openai_auth: str = "api_key"
    ) -> Provider:
        return ScriptedModel(kind, answer)

    return factory
