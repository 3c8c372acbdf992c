"""What a job's setup phase runs: the repository's own commands, the detected ones, or none.

    plan = plan_setup(config.setup, read_setup_files(tree))

`setup` unset (None) detects the commands from the repository's files
(`runner.sandbox.setup_detect`); an explicit list runs as written, and a
failing command fails the job; an empty list turns setup off. Pure values:
the sandbox runs a plan (`runner.sandbox.setup_run`), the prepared
environment is keyed on it (`runner.sandbox.prepared`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ECOSYSTEMS",
    "STEP_TIMEOUT",
    "SetupMode",
    "SetupPlan",
    "SetupStep",
    "explicit_plan",
]

# What automatic setup recognises; the network policy's default opens these.
ECOSYSTEMS = ("python", "node", "go", "rust", "ruby")
# The most one setup command may take, in seconds.
STEP_TIMEOUT = 600.0

SetupMode = Literal["auto", "explicit", "off"]


@dataclass(frozen=True, slots=True)
class SetupStep:
    """One setup command: a bash command line run at the tree's root."""

    command: str
    # The ecosystem a detected command installs; None for the repository's own.
    ecosystem: str | None = None
    # Root files whose content decides what it installs (the prepared
    # environment's key holds their hashes).
    reads: tuple[str, ...] = ()
    timeout: float = STEP_TIMEOUT
    # The command installs into ./node_modules: once it succeeds, the sandbox
    # moves that out of the tree into the environment (docs/setup.md).
    node_modules: bool = False


@dataclass(frozen=True, slots=True)
class SetupPlan:
    mode: SetupMode
    steps: tuple[SetupStep, ...] = ()
    # What detection saw but could not use, one line each (an invalid
    # pyproject.toml, a lockfile too large to read): shown in the report.
    notes: tuple[str, ...] = ()
    # The root files the plan depends on beyond its steps' own (for an
    # explicit plan: every manifest and lockfile, and the files its commands name).
    also_reads: tuple[str, ...] = ()

    @property
    def ecosystems(self) -> tuple[str, ...]:
        """The ecosystems the detected steps install, in `ECOSYSTEMS` order."""
        found = {step.ecosystem for step in self.steps}
        return tuple(name for name in ECOSYSTEMS if name in found)

    @property
    def reads(self) -> tuple[str, ...]:
        """Every root file whose content the plan's outcome depends on, sorted."""
        names = {name for step in self.steps for name in step.reads}
        return tuple(sorted(names | set(self.also_reads)))

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(step.command for step in self.steps)

    @property
    def fails_job(self) -> bool:
        """Whether a failing step fails the job: only the repository's own commands do."""
        return self.mode == "explicit"


def explicit_plan(
    commands: Sequence[str], files: Mapping[str, bytes], *, timeout: float = STEP_TIMEOUT
) -> SetupPlan:
    """The repository's own `setup` commands; `files` are the root files read for the key."""
    steps = tuple(SetupStep(command, timeout=timeout) for command in commands)
    if not steps:
        return SetupPlan("off")
    return SetupPlan("explicit", steps, also_reads=tuple(sorted(files)))
