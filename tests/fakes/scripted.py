"""A provider that plays back scripted responses, registered like a real one.

For tests and benchmarks that exercise the loop without any network: each
call to `stream` takes the next scripted reply, records the request, and
streams the reply's text before completing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeAlias

from runner.llm.provider import Completed, StreamEvent, TextDelta
from runner.llm.types import END_TURN, TOOL_USE, JSONObject, Request, Response, Text, ToolUse, Usage

Reply: TypeAlias = Response | BaseException | Callable[[Request], Response]


class ScriptedProvider:
    name = "scripted"

    def __init__(self, *replies: Reply, model: str = "scripted-1") -> None:
        self._model = model
        self._replies: deque[Reply] = deque(replies)
        self.requests: list[Request] = []

    @property
    def model(self) -> str:
        return self._model

    def script(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if not self._replies:
            raise AssertionError("scripted provider: no reply left")
        reply = self._replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        response = reply if isinstance(reply, Response) else reply(request)
        if response.text:
            yield TextDelta(response.text)
        yield Completed(response)


class AnsweringProvider:
    """A provider that answers each request with `answer(request)`, awaited.

    For callers that overlap (subagents in parallel): the answer depends on
    the request, not on the order the calls arrive in, and may wait.
    """

    name = "scripted"

    def __init__(
        self, answer: Callable[[Request], Awaitable[Response]], *, model: str = "scripted-1"
    ) -> None:
        self._model = model
        self._answer = answer
        self.requests: list[Request] = []

    @property
    def model(self) -> str:
        return self._model

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        response = await self._answer(request)
        if response.text:
            yield TextDelta(response.text)
        yield Completed(response)


def says(text: str, stop_reason: str | None = END_TURN) -> Response:
    return Response((Text(text),), stop_reason, Usage(10, 5))


def calls(*uses: tuple[str, str, JSONObject], text: str = "") -> Response:
    """A response asking for tools: (call id, tool name, input) each."""
    content = ((Text(text),) if text else ()) + tuple(ToolUse(*use) for use in uses)
    return Response(content, TOOL_USE, Usage(10, 5))
