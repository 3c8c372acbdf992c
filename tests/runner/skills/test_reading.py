from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.skills import Skill, SkillReader, with_skill_reads
from runner.tools import ReadFileTool, ToolContext, ToolError, default_tools

BUILT_IN = Skill(
    "fix-ci", "d", "built-in fix-ci", "/neo/skills/fix-ci/SKILL.md", "one\ntwo\nthree", "builtin"
)
IN_TREE = Skill(
    "local", "d", ".neo/skills/local/SKILL.md", ".neo/skills/local/SKILL.md", "x", "repository"
)
CTX = ToolContext(call_id="c1", emit=lambda _: None)


async def test_a_virtual_skill_path_is_served_and_any_other_goes_to_read_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("from the tree\n")
    reader = SkillReader(ReadFileTool(LocalSandbox(tmp_path)), [BUILT_IN, IN_TREE])

    served = await reader({"path": "/neo/skills/fix-ci/SKILL.md"}, CTX)
    window = await reader({"path": "/neo/skills/fix-ci/SKILL.md", "offset": 2, "limit": 1}, CTX)
    tree = await reader({"path": "notes.txt"}, CTX)
    with pytest.raises(ToolError, match="outside the working tree"):
        await reader({"path": "/neo/skills/other/SKILL.md"}, CTX)

    assert served.content == "     1\tone\n     2\ttwo\n     3\tthree"
    assert window.content == (
        "     2\ttwo\n"
        "(line 2 of 3 (13 bytes); continue with offset=3, or grep for the part you need)"
    )
    assert tree.content == "     1\tfrom the tree"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_only_read_file_is_wrapped_and_only_when_a_skill_is_virtual(tmp_path: Path) -> None:
    tools = default_tools(LocalSandbox(tmp_path))

    wrapped = with_skill_reads(tools, [BUILT_IN])

    assert [t.spec.name for t in wrapped] == [t.spec.name for t in tools]
    assert [type(t).__name__ for t in wrapped if t.spec.name == "read_file"] == ["SkillReader"]
    assert with_skill_reads(tools, [IN_TREE]) == tools


async def test_a_skill_body_pages_within_the_cap_like_a_file(tmp_path: Path) -> None:
    lines = [f"step {n}: " + "x" * 60 for n in range(1, 301)]
    long = Skill(
        "long", "d", "built-in long", "/neo/skills/long/SKILL.md", "\n".join(lines), "builtin"
    )
    reader = SkillReader(ReadFileTool(LocalSandbox(tmp_path)), [long])
    small = ToolContext(call_id="c1", emit=lambda _: None, output_cap=4096)

    first = await reader({"path": long.path}, small)
    assert isinstance(first.content, str)
    assert len(first.content.encode()) <= 4096
    shown = first.content.splitlines()
    last = int(shown[-2].split("\t")[0])
    assert shown[-1] == (
        f"(lines 1–{last} of 300 (21 KB); continue with offset={last + 1},"
        " or grep for the part you need)"
    )
    second = await reader({"path": long.path, "offset": last + 1}, small)
    assert isinstance(second.content, str)
    assert second.content.startswith(f"{last + 1:>6}\t{lines[last]}\n")
