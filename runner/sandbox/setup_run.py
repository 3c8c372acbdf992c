"""Running a setup plan in the container that prepares a docker sandbox's environment.

    outcome = await run_setup(box, plan, env=network.environment)

Each command runs at the tree's root with its time limit. A detected
command that fails is recorded and the others still run; the repository's
own command that fails raises SetupFailed. Around the commands: the virtual
environment is made when the image has none, a Node install's node_modules
leaves the tree for the environment, and the caches are emptied at the end,
so that the environment kept holds what was installed and no download.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from runner.sandbox.base import ExecResult, Sandbox, SandboxError
from runner.sandbox.environment import CACHE, NODE_MODULES, VENV
from runner.sandbox.setup_plan import SetupOutcome, SetupPlan, SetupStep, StepOutcome

__all__ = ["TAIL_LINES", "SetupFailed", "output_tail", "run_setup"]

# A failed command's output is kept as its last lines, each cut to a line's width.
TAIL_LINES = 20
_TAIL_LINE_CHARS = 300
_HOUSEKEEPING_TIMEOUT = 300.0

# Images of Neo's own have the virtual environment; another image gets one
# that sees its own packages. Python's venv module first (it brings pip), uv's when
# the image lacks it.
_MAKE_VENV = (
    f"test -x {VENV}/bin/python || python3 -m venv --system-site-packages {VENV}"
    f" || uv venv --quiet --system-site-packages {VENV}"
)
_EMPTY_CACHE = f"rm -rf {CACHE}"
# The tree's node_modules moves to the environment; a link to a directory of
# the tree (a workspace's package) is made absolute so it still leads there.
_MOVE_NODE_MODULES = """\
import os, shutil, sys
tree, new = sys.argv[1], sys.argv[2]
old = os.path.join(tree, "node_modules")
if not os.path.isdir(old) or os.path.islink(old):
    sys.exit(0)
shutil.rmtree(new, ignore_errors=True)
shutil.move(old, new)
folders = [new] + [os.path.join(new, d) for d in os.listdir(new) if d.startswith("@")]
for folder in folders:
    if not os.path.isdir(folder) or os.path.islink(folder):
        continue
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        target = os.readlink(path) if os.path.islink(path) else None
        if target is None or os.path.isabs(target):
            continue
        was = os.path.normpath(os.path.join(old + folder[len(new):], target))
        if was.startswith(tree + "/") and not was.startswith(old + "/"):
            os.unlink(path)
            os.symlink(was, path)
"""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


class SetupFailed(SandboxError):
    """A repository setup command failed; `result` holds its output, `outcome` what
    setup did up to it and how it ended (its last lines too), for the report."""

    def __init__(
        self, message: str, result: ExecResult, outcome: SetupOutcome | None = None
    ) -> None:
        super().__init__(message)
        self.result = result
        self.outcome = outcome


async def run_setup(
    box: Sandbox, plan: SetupPlan, *, env: Mapping[str, str] | None = None
) -> SetupOutcome:
    """Run `plan`'s commands in `box` with `env` added to their environment; what they did."""
    outcomes: list[StepOutcome] = []
    venv: str | None = None
    for number, step in enumerate(plan.steps, start=1):
        started = time.monotonic()
        if venv is None and step.ecosystem == "python":
            venv = await _quiet(box, ["bash", "-c", _MAKE_VENV], env)
            if venv:
                problem = "the virtual environment could not be made"
                outcomes.append(_outcome(step, started, None, problem=problem, output=venv))
                continue
        result = await box.run(["bash", "-c", step.command], timeout=step.timeout, env=env)
        problem, output = "", ""
        if step.node_modules and result.exit_code == 0 and not result.timed_out:
            argv = ["python3", "-c", _MOVE_NODE_MODULES, box.root, NODE_MODULES]
            output = await _quiet(box, argv, env)
            problem = "its node_modules could not be moved out of the tree" if output else ""
        outcome = _outcome(step, started, result, problem=problem, output=output)
        outcomes.append(outcome)
        if plan.fails_job and not outcome.ok:
            raise SetupFailed(
                f"setup command {number} of {len(plan.steps)} failed ({outcome.ended}):"
                f" {step.command}",
                result,
                SetupOutcome(plan.mode, tuple(outcomes), plan.notes),
            )
    await _quiet(box, ["bash", "-c", _EMPTY_CACHE], env)
    return SetupOutcome(plan.mode, tuple(outcomes), plan.notes)


async def _quiet(box: Sandbox, argv: list[str], env: Mapping[str, str] | None) -> str:
    """Run a step of Neo's own; "" when it succeeded, else its output (never empty)."""
    done = await box.run(argv, timeout=_HOUSEKEEPING_TIMEOUT, env=env)
    if done.exit_code == 0 and not done.timed_out:
        return ""
    return output_tail(done.output) or f"exit code {done.exit_code}"


def _outcome(
    step: SetupStep,
    started: float,
    result: ExecResult | None,
    *,
    problem: str = "",
    output: str = "",
) -> StepOutcome:
    seconds = time.monotonic() - started
    code = result.exit_code if result is not None else -1
    timed_out = result.timed_out if result is not None else False
    failed = problem or code != 0 or timed_out
    tail = output if problem else (output_tail(result.output) if result and failed else "")
    return StepOutcome(step.command, step.ecosystem, seconds, code, timed_out, tail, problem)


def output_tail(output: bytes, lines: int = TAIL_LINES) -> str:
    """The last `lines` non-blank lines of a command's output, terminal codes taken out."""
    text = _ANSI.sub("", output.decode("utf-8", "replace")).replace("\r\n", "\n")
    # A progress line rewritten with \r shows as what it last said.
    kept = [line.rstrip().rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]
    kept = [line[:_TAIL_LINE_CHARS] for line in kept if line.strip()]
    return "\n".join(kept[-lines:])
