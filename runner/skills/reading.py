"""read_file for skills outside the working tree: built-ins and a default branch's.

Their SKILL.md is served from memory at its virtual path (`VIRTUAL_ROOT`),
so nothing is written into the tree and nothing can reach the commit; every
other path goes to the real read_file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from runner.llm.types import JSONObject, ToolSpec
from runner.sandbox.base import Lines
from runner.skills.discovery import VIRTUAL_ROOT
from runner.skills.skill import Skill
from runner.tools.base import Tool, ToolContext, ToolOutput
from runner.tools.paging import page
from runner.tools.read_file import ReadFileInput
from runner.tools.schema import parse

__all__ = ["SkillReader", "with_skill_reads"]


class SkillReader:
    """`inner` (read_file), with the virtual SKILL.md files of `skills` readable too."""

    def __init__(self, inner: Tool, skills: Iterable[Skill]) -> None:
        self._inner = inner
        self._served = {s.path: s.body for s in skills if s.path.startswith(VIRTUAL_ROOT + "/")}

    @property
    def spec(self) -> ToolSpec:
        return self._inner.spec

    async def __call__(self, args: JSONObject, ctx: ToolContext) -> ToolOutput:
        body = self._served.get(str(args.get("path", "")))
        if body is None:
            return await self._inner(args, ctx)
        request = parse(ReadFileInput, args)
        every = body.split("\n")
        texts = every[request.offset - 1 : request.offset - 1 + request.limit]
        window = Lines(
            lines=tuple(text.encode() for text in texts),
            chars=tuple(len(text) for text in texts),
            total_lines=len(every),
            complete=True,
            size=len(body.encode()),
        )
        return ToolOutput(
            page(
                request.path,
                window,
                texts,
                offset=request.offset,
                column=request.column,
                cap=ctx.output_cap,
            )
        )


def with_skill_reads(tools: Sequence[Tool], skills: Sequence[Skill]) -> list[Tool]:
    """`tools` with read_file able to read `skills`' virtual paths; as is when there are none."""
    if not any(skill.path.startswith(VIRTUAL_ROOT + "/") for skill in skills):
        return list(tools)
    return [SkillReader(tool, skills) if tool.spec.name == "read_file" else tool for tool in tools]
