"""apply_patch's input as a Lark grammar: what a free-form tool call may hold.

GPT-5-class models were trained to call apply_patch as a custom tool whose
input is the patch itself, constrained by a grammar, rather than a JSON
string they must escape. The grammar says what `patch_format.parse` reads,
strictly: the markers on lines of their own, every hunk opened by `@@`,
each of its lines by a space, `-` or `+`; the parser also takes a few slips
(a first hunk without `@@`, a context line that lost its space, a heredoc
around the patch) that a grammar-bound model never makes. It is written in
the Lark subset OpenAI's custom tools accept: rules, string literals, regular
expressions, no imports.
"""

from __future__ import annotations

from typing import Final

from runner.llm.types import Grammar

__all__ = ["PATCH_GRAMMAR"]

_LARK: Final = r"""
start: begin operation+ end
begin: "*** Begin Patch" LF
end: "*** End Patch" LF?

operation: add_file | delete_file | update_file
add_file: "*** Add File: " PATH LF added*
delete_file: "*** Delete File: " PATH LF
update_file: "*** Update File: " PATH LF move_to? hunk+
move_to: "*** Move to: " PATH LF

hunk: header change+ end_of_file?
header: "@@" CONTEXT? LF
change: (" " | "-" | "+") TEXT? LF
added: "+" TEXT? LF
end_of_file: "*** End of File" LF

PATH: /[^\r\n]+/
CONTEXT: / [^\r\n]*/
TEXT: /[^\r\n]+/
LF: "\n"
"""

PATCH_GRAMMAR: Final = Grammar(syntax="lark", definition=_LARK.strip() + "\n")
