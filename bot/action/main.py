"""`neo action`'s start: the workflow's inputs, context and event, checked before the engine.

A bad input is the user's to fix and is found from the environment alone, so it
is refused before `bot.action.run` loads the worker, the queue and the GitHub
client: that import cost every refused start about a second of CPU.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.action.inputs import ActionContext, InputError, read_context, read_inputs
from bot.action.outputs import ActionOutcome, finish_step
from bot.exits import EXIT_USAGE
from bot.logs import log_to_stderr
from runner.setting_file import read_setting_file

__all__ = ["MAX_EVENT_FILE", "main", "read_event"]

# GitHub delivers webhook payloads of at most 25 MB; an event file is one.
MAX_EVENT_FILE = 25 * 1024 * 1024


def main(env: Mapping[str, str]) -> int:
    """`neo action` on the workflow run `env` describes; its exit status."""
    if env.get("RUNNER_DEBUG") == "1":
        log_to_stderr("neo", fmt="%(name)s %(levelname)s %(message)s")
    context: ActionContext | None = None
    try:
        context = read_context(env)
        inputs = read_inputs(env)
        payload = read_event(context.event_path)
    except InputError as error:
        finish_step(context, ActionOutcome(conclusion="failed", reason=str(error)))
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    from bot.action.run import act  # the worker's engine, for inputs that passed

    return act(context, inputs, payload)


def read_event(path: Path) -> dict[str, Any]:
    """The event payload at GITHUB_EVENT_PATH: a JSON object."""
    try:
        data = json.loads(read_setting_file(path, MAX_EVENT_FILE))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputError(f"GITHUB_EVENT_PATH: cannot read {path}: {reason}") from None
    except ValueError:
        raise InputError(f"GITHUB_EVENT_PATH: {path} is not JSON") from None
    if not isinstance(data, dict):
        raise InputError(f"GITHUB_EVENT_PATH: {path} does not hold a JSON object")
    return data
