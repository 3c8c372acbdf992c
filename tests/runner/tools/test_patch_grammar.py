"""apply_patch's Lark grammar (what a GPT-5-class model's free-form call may hold)
against the patch parser: every patch the grammar takes reads back as written."""

from __future__ import annotations

from dataclasses import dataclass

import lark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.tools.patch_format import AddFile, DeleteFile, UpdateFile, parse
from runner.tools.patch_grammar import PATCH_GRAMMAR

GRAMMAR = lark.Lark(PATCH_GRAMMAR.definition, parser="earley", lexer="dynamic")

_CHARS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n")
_PATHS = st.text(_CHARS, min_size=1, max_size=30).map(str.strip).filter(bool)
# A context line reading like a marker ("*** ...") is not one a patch can hold.
_BODIES = st.text(_CHARS, max_size=40).filter(lambda t: not t.lstrip().startswith("***"))


@dataclass(frozen=True)
class _Hunk:
    context: str | None
    lines: tuple[tuple[str, str], ...]
    end_of_file: bool


_HUNKS = st.builds(
    _Hunk,
    st.none() | _PATHS,
    st.lists(st.tuples(st.sampled_from(" -+"), _BODIES), min_size=1, max_size=5).map(tuple),
    st.booleans(),
)
_OPS = st.one_of(
    st.tuples(st.just("add"), _PATHS, st.lists(_BODIES, max_size=5)),
    st.tuples(st.just("delete"), _PATHS),
    st.tuples(
        st.just("update"), _PATHS, st.none() | _PATHS, st.lists(_HUNKS, min_size=1, max_size=3)
    ),
)


def render(ops: list[tuple[object, ...]]) -> str:
    out = ["*** Begin Patch"]
    for op in ops:
        if op[0] == "add":
            out.append(f"*** Add File: {op[1]}")
            out += [f"+{line}" for line in op[2]]  # type: ignore[attr-defined]
        elif op[0] == "delete":
            out.append(f"*** Delete File: {op[1]}")
        else:
            out.append(f"*** Update File: {op[1]}")
            if op[2] is not None:
                out.append(f"*** Move to: {op[2]}")
            for hunk in op[3]:  # type: ignore[attr-defined]
                out.append("@@" if hunk.context is None else f"@@ {hunk.context}")
                out += [marker + body for marker, body in hunk.lines]
                if hunk.end_of_file:
                    out.append("*** End of File")
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


@settings(max_examples=150, deadline=None)
@given(st.lists(_OPS, min_size=1, max_size=4))
def test_every_patch_in_the_grammar_reads_back_as_written(ops: list[tuple[object, ...]]) -> None:
    text = render(ops)

    GRAMMAR.parse(text)
    parsed = parse(text).ops

    assert len(parsed) == len(ops)
    for op, got in zip(ops, parsed, strict=True):
        if op[0] == "add":
            assert got == AddFile(str(op[1]), "".join(f"{line}\n" for line in op[2]))  # type: ignore[attr-defined]
        elif op[0] == "delete":
            assert got == DeleteFile(str(op[1]))
        else:
            assert isinstance(got, UpdateFile)
            assert (got.path, got.move_to) == (op[1], op[2])
            expected = [
                (
                    () if h.context is None else (h.context,),
                    tuple(b for m, b in h.lines if m != "+"),
                    tuple(b for m, b in h.lines if m != "-"),
                    h.end_of_file,
                )
                for h in op[3]  # type: ignore[attr-defined]
            ]
            assert [(h.contexts, h.old, h.new, h.end_of_file) for h in got.hunks] == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"input": "*** Begin Patch\\n*** End Patch"}', id="json-wrapped"),
        pytest.param("*** Begin Patch\n*** Delete File: a.py\n", id="no-end"),
        pytest.param("*** Begin Patch\n*** End Patch\n", id="no-operation"),
        pytest.param(
            "*** Begin Patch\n*** Update File: a.py\n@@\nno marker\n*** End Patch\n",
            id="hunk-line-without-marker",
        ),
        pytest.param("*** Begin Patch\n*** Update File: a.py\n*** End Patch\n", id="no-hunk"),
        pytest.param(
            "*** Begin Patch\n*** Update File: a.py\n-old\n+new\n*** End Patch\n",
            id="hunk-without-@@",
        ),
        pytest.param(
            "<<'EOF'\n*** Begin Patch\n*** Delete File: a.py\n*** End Patch\nEOF\n", id="heredoc"
        ),
    ],
)
def test_what_is_not_a_patch_is_outside_the_grammar(text: str) -> None:
    with pytest.raises(lark.exceptions.LarkError):
        GRAMMAR.parse(text)
