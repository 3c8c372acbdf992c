"""Who may run Neo, from a table: roles, allow-listed bots, the repository's own jobs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.jobs import JobRequest, Thread
from bot.worker.access import authorised, unauthorised_run, unauthorised_stop
from tests.bot.worker.test_spec import REQUEST

BOT = "neo-app[bot]"
ROLES = ("admin", "maintain", "write")


@pytest.mark.parametrize(
    ("number", "author", "level", "bots", "expected"),
    [
        (12, "mona", "write", (), True),
        (12, "mona", "read", (), False),
        (12, "mona", None, (), False),
        (12, "dependabot[bot]", None, (), False),
        (12, "dependabot[bot]", None, ("Dependabot[bot]",), True),
        # Neo never answers itself, listed or not.
        (12, BOT, None, (BOT,), False),
        # A thread-less job by Neo or nobody: the repository's own files asked.
        (0, BOT, None, (), True),
        (0, "", None, (), True),
        (0, "mona", "read", (), False),
        (0, "mona", "admin", (), True),
    ],
)
def test_who_may_run(
    number: int, author: str, level: str | None, bots: tuple[str, ...], expected: bool
) -> None:
    request: JobRequest = replace(REQUEST, thread=Thread("octo/hello", number), author=author)
    assert authorised(request, level=level, allowed=ROLES, bots=bots, bot=BOT) is expected


@pytest.mark.parametrize(
    ("level", "allowed", "expected"),
    [
        # `allowed_users` widened to triage, and as the file had it.
        ("triage", ("triage", "write"), True),
        ("triage", ("maintain", "write"), False),
        # Narrowed to admins: a writer may neither run nor stop Neo.
        ("write", ("admin",), False),
        ("admin", ("admin",), True),
    ],
)
def test_allowed_users_names_the_roles_that_may_run_or_stop(
    level: str, allowed: tuple[str, ...], expected: bool
) -> None:
    assert authorised(REQUEST, level=level, allowed=allowed, bots=(), bot=BOT) is expected


def test_the_replies_name_the_roles_and_where_they_are_set() -> None:
    assert unauthorised_run(REQUEST, ROLES, "`.github/neo.yml`") == (
        "Sorry @mona, Neo only works for people with admin, maintain, write access to this"
        " repository (set by `allowed_users` in `.github/neo.yml`). Nothing was run."
    )
    assert unauthorised_stop(REQUEST, ("admin",), "the workflow's inputs") == (
        "Sorry @mona, only people with admin access to this repository can stop Neo's work"
        " (set by `allowed_users` in the workflow's inputs). The work goes on."
    )
