"""read_file's pages: within the loop's cap, and together the whole file, with no gap.

The reader here does what a model does: it starts at line 1, and follows every
"continue with" and every cut line's "the rest:" until nothing is left; what
it saw must be the file, character for character.
"""

from __future__ import annotations

import random
import re
import tempfile
from collections import deque
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.agent import Agent, ToolFinished
from runner.llm.types import Message, ToolResult
from runner.sandbox import LocalSandbox
from runner.tools import ReadFileTool, ToolContext, ToolError
from runner.tools.paging import human_size
from tests.fakes.scripted import ScriptedProvider, calls, says

_ROW = re.compile(r"^ *(\d+)\t(.*)$")
_CUT = re.compile(
    r"… \[line (\d+) cut at character ([\d,]+) of ([\d,]+); the rest: offset=(\d+), column=(\d+)\]$"
)
_GO_ON = re.compile(r"continue with offset=(\d+)(?:, column=(\d+))?")


async def read_everything(
    tool: ReadFileTool, path: str, cap: int
) -> tuple[dict[int, str], list[str]]:
    """Every line of `path` as the pages showed it, and the pages."""
    ctx = ToolContext("c", lambda _: None, output_cap=cap)
    parts: dict[tuple[int, int], str] = {}
    pages: list[str] = []
    todo: deque[tuple[int, int]] = deque([(1, 1)])
    seen: set[tuple[int, int]] = set()
    while todo:
        where = todo.popleft()
        if where in seen:
            continue
        seen.add(where)
        line, column = where
        output = await tool({"path": path, "offset": line, "column": column}, ctx)
        assert isinstance(output.content, str)
        pages.append(output.content)
        rows = output.content.split("\n")
        if rows[-1].startswith("("):
            footer = rows.pop()
            if go_on := _GO_ON.search(footer):
                todo.append((int(go_on[1]), int(go_on[2] or 1)))
        for index, row in enumerate(rows):
            match = _ROW.match(row)
            assert match, row
            number, text = int(match[1]), match[2]
            start = column if index == 0 else 1
            if cut := _CUT.search(text):
                text = text[: cut.start()]
                assert (int(cut[4]), int(cut[5])) == (number, start + len(text))
                todo.append((number, int(cut[5])))
            parts[(number, start)] = text
    lines: dict[int, str] = {}
    for number in sorted({n for n, _ in parts}):
        text, column = "", 1
        while (number, column) in parts:
            piece = parts[(number, column)]
            text += piece
            column += len(piece)
            if not piece:
                break
        lines[number] = text
    return lines, pages


def lines_of(rng: random.Random, count: int, long: dict[int, int]) -> list[str]:
    alphabet = ["x", "é", "漢", " ", "\t", "(", ")", "0", "😀"]
    out = []
    for n in range(count):
        size = long.get(n, rng.choice([0, 3, 20, 40, 80, 120]))
        # One draw a line, not a character: half the test's time went to drawing.
        out.append("".join(rng.choices(alphabet, k=size)))
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    long=st.dictionaries(st.integers(0, 2_599), st.integers(1_990, 12_000), max_size=6),
    cap=st.sampled_from([2_048, 8_192, 32 * 1024]),
    final_newline=st.booleans(),
)
async def test_pages_of_a_2600_line_file_cover_it_with_no_gap(
    seed: int, long: dict[int, int], cap: int, final_newline: bool
) -> None:
    lines = lines_of(random.Random(seed), 2_600, long)
    lines[-1] += "end"  # an empty last line without a newline is no line at all
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "module.py").write_text(
            "\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8"
        )
        seen, pages = await read_everything(ReadFileTool(LocalSandbox(Path(tmp))), "module.py", cap)

    assert [seen.get(n + 1) for n in range(len(lines))] == lines
    assert max(len(p.encode()) for p in pages) <= cap


async def test_a_single_50_kb_line_is_read_whole_in_pages(tmp_path: Path) -> None:
    rng = random.Random(7)
    line = "".join(rng.choice("abcdefg ") for _ in range(50_000))
    (tmp_path / "bundle.min.js").write_text(line + "\n")
    tool = ReadFileTool(LocalSandbox(tmp_path))

    seen, pages = await read_everything(tool, "bundle.min.js", 32 * 1024)

    assert seen == {1: line}
    assert len(pages) == 3  # 2,000 characters, then two pages of the rest
    assert all(len(p.encode()) <= 32 * 1024 for p in pages)
    assert pages[0].endswith("(line 1 of 1 (50 KB); continue with offset=1, column=2001)")


async def test_the_2600_line_module_of_the_issue_is_read_from_the_top_with_no_hole(
    tmp_path: Path,
) -> None:
    # Before: lines 1-219 and 1,795-2,000 shown, the loop's cut marker
    # between them, and "continue with offset=2001".
    module = [
        f"    value_{n} = compute_something_with(argument_{n}, other)  # n={n}"
        for n in range(1, 2601)
    ]
    (tmp_path / "big.py").write_text("\n".join(module) + "\n")
    provider = ScriptedProvider(calls(("r1", "read_file", {"path": "big.py"})), says("read it"))
    events: list[object] = []
    agent = Agent(provider, tools=[ReadFileTool(LocalSandbox(tmp_path))], on_event=events.append)

    await agent.send("Read big.py.")

    result = _only_result(agent.transcript())
    rows = result.split("\n")
    numbers = [int(_ROW.match(r)[1]) for r in rows[:-1]]  # type: ignore[index]
    assert numbers == list(range(1, len(numbers) + 1))
    last = numbers[-1]
    assert last > 400
    assert rows[-1] == (
        f"(lines 1–{last} of 2,600 ({human_size((tmp_path / 'big.py').stat().st_size)});"
        f" continue with offset={last + 1}, or grep for the part you need)"
    )
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [e.truncated for e in finished] == [False]


async def test_the_page_fits_the_cap_the_loop_was_given(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("".join(f"line {n} of the module\n" for n in range(5_000)))
    provider = ScriptedProvider(
        calls(("r1", "read_file", {"path": "big.py", "offset": 100})), says("read it")
    )
    agent = Agent(provider, tools=[ReadFileTool(LocalSandbox(tmp_path))], output_cap=2_048)

    await agent.send("Read big.py.")

    result = _only_result(agent.transcript())
    assert "output truncated" not in result
    assert len(result.encode()) <= 2_048
    assert result.startswith("   100\tline 99 of the module\n")


async def test_a_column_past_the_line_is_a_tool_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("short\n")
    tool = ReadFileTool(LocalSandbox(tmp_path))

    with pytest.raises(ToolError) as raised:
        await tool({"path": "a.txt", "column": 7}, ToolContext("c", lambda _: None))
    assert str(raised.value) == "column 7 is past the end of line 1 of a.txt (5 characters)"


def _only_result(transcript: list[Message]) -> str:
    results = [b for m in transcript for b in m.content if isinstance(b, ToolResult)]
    assert len(results) == 1
    return results[0].text


def test_sizes_read_as_people_write_them() -> None:
    assert [human_size(n) for n in (1, 820, 1_000, 9_949, 106_000, 2_400_000)] == [
        "1 byte",
        "820 bytes",
        "1.0 KB",
        "9.9 KB",
        "106 KB",
        "2.4 MB",
    ]
