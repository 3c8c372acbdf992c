"""What a job's setup phase runs: the repository's own commands, the detected ones, or none.

    plan = plan_setup(config.setup, read_setup_files(tree))   # runner.sandbox.setup_files

`setup` unset (None) detects the commands from the repository's files
(`runner.sandbox.setup_detect`); an explicit list runs as written, and a
failing command fails the job; an empty list turns setup off. Pure values:
the sandbox runs a plan (`runner.sandbox.setup_run`), the prepared
environment is keyed on it (`runner.sandbox.prepared`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "ECOSYSTEMS",
    "STEP_TIMEOUT",
    "SetupFiles",
    "SetupMode",
    "SetupOutcome",
    "SetupPlan",
    "SetupStep",
    "StepOutcome",
    "explicit_plan",
]

# What automatic setup recognises; the network policy's default opens these.
ECOSYSTEMS = ("python", "node", "go", "rust", "ruby")
# The most one setup command may take, in seconds.
STEP_TIMEOUT = 600.0

SetupMode = Literal["auto", "explicit", "off"]


@dataclass(frozen=True, slots=True)
class SetupFiles(Mapping[str, bytes]):
    """The root files setup may read, by name, with what could not be read."""

    contents: Mapping[str, bytes] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __getitem__(self, name: str) -> bytes:
        return self.contents[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.contents)

    def __len__(self) -> int:
        return len(self.contents)


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


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How one setup command ended."""

    command: str
    ecosystem: str | None
    seconds: float
    exit_code: int
    timed_out: bool = False
    # Its output's last lines, kept only when it failed.
    tail: str = ""
    # Why it could not run at all (the environment could not be made for it).
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.problem

    @property
    def ended(self) -> str:
        """How it ended, a few words: `succeeded`, `exit code 4`, `timed out after 600s`."""
        if self.problem:
            return self.problem
        if self.timed_out:
            return f"timed out after {self.seconds:.0f}s"
        return "succeeded" if self.exit_code == 0 else f"exit code {self.exit_code}"

    def to_json(self) -> dict[str, object]:
        return {
            "command": self.command,
            "ecosystem": self.ecosystem,
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "tail": self.tail,
            "problem": self.problem,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> StepOutcome:
        """The inverse of `to_json`; raises ValueError on anything else."""
        command, ecosystem, seconds = (
            data.get("command"),
            data.get("ecosystem"),
            data.get("seconds"),
        )
        code, timed_out = data.get("exit_code"), data.get("timed_out", False)
        tail, problem = data.get("tail", ""), data.get("problem", "")
        if not (
            isinstance(command, str)
            and (ecosystem is None or isinstance(ecosystem, str))
            and isinstance(seconds, int | float)
            and isinstance(code, int)
            and isinstance(timed_out, bool)
            and isinstance(tail, str)
            and isinstance(problem, str)
        ):
            raise ValueError("not a setup step's outcome")
        return cls(command, ecosystem, float(seconds), code, timed_out, tail, problem)


@dataclass(frozen=True, slots=True)
class SetupOutcome:
    """What the setup phase did: the prompt's environment segment and the report say it."""

    mode: SetupMode
    steps: tuple[StepOutcome, ...] = ()
    notes: tuple[str, ...] = ()
    # The environment was an earlier job's, prepared at this time (Unix
    # seconds); `steps` are what ran then. None: set up by this job, if at all.
    reused_from: float | None = None
    # This job kept its environment for the repository's next jobs.
    kept: bool = False

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)

    @property
    def failed(self) -> tuple[StepOutcome, ...]:
        return tuple(step for step in self.steps if not step.ok)

    @property
    def seconds(self) -> float:
        return sum(step.seconds for step in self.steps)

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "steps": [step.to_json() for step in self.steps],
            "notes": list(self.notes),
            "reused_from": self.reused_from,
            "kept": self.kept,
        }
