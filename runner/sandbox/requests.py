"""What a run asks of its sandbox's environment, and what it gets, as plain values.

Free of the docker SDK, which loads only for runs that use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from runner.sandbox.base import Sandbox
from runner.sandbox.setup_plan import SetupOutcome, SetupPlan

__all__ = ["Bounds", "EnvironmentRequest", "Opened"]

GiB = 1024**3


@dataclass(frozen=True, slots=True)
class Bounds:
    """How long an unused prepared environment is kept, and how many of them
    and how many bytes one host keeps."""

    max_age: float = 24 * 3600.0
    max_entries: int = 20
    max_bytes: int = 20 * GiB


@dataclass(frozen=True, slots=True)
class EnvironmentRequest:
    """What a job asks of its sandbox's environment."""

    plan: SetupPlan
    # The root files the plan read (`read_setup_files`): the key holds their hashes.
    files: Mapping[str, bytes] = field(default_factory=dict)
    # What the kept environment is keyed on (the repository's URL, a tree's
    # path); None: none is reused or kept.
    repository: str | None = None
    # False for a fork's pull request: a kept environment may be reused, but
    # none this job prepared is ever one another job could start from.
    share: bool = True
    bounds: Bounds = Bounds()


def _no_command(ident: int) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class Opened:
    """A sandbox handed out, and what its setup phase did."""

    box: Sandbox
    setup: SetupOutcome
    # The command a request id stands for, in the setup container or the
    # agent's (the egress proxy's log names commands by id).
    command_text: Callable[[int], str | None] = _no_command
