"""Neo's handle, what people type to ask it (`@neo`): one rule wherever it is set.

`NEO_HANDLE`, the Action's `trigger_phrase` and the triage `Rules` all ask
`handle_problem`, so a handle one accepts is never refused by another later.
"""

from __future__ import annotations

import re

__all__ = ["handle_problem"]

# A login as GitHub makes them today, which an App's slug also fits: ASCII
# letters and digits, with single hyphens between them, or underscores, as in
# Enterprise Managed Users' `mona_octo`. The mention pattern reads `-`, `_` and
# `.` before a letter as part of a longer name, so a handle ending in one, or
# holding a dot, could never be mentioned.
_LOGIN = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")
_MAX_LOGIN = 39
_PROBLEM = (
    f"must be @ followed by a GitHub login (letters and digits, single - or _ between them, "
    f"at most {_MAX_LOGIN}), e.g. @neo"
)


def handle_problem(handle: str) -> str | None:
    """Why `handle` cannot be Neo's handle; None when it can."""
    login = handle.removeprefix("@")
    if login == handle or len(login) > _MAX_LOGIN or _LOGIN.fullmatch(login) is None:
        return _PROBLEM
    return None
