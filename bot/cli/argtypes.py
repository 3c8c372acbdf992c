"""Argument types the `neo` subcommands share: a bad value is one clear line."""

from __future__ import annotations

import argparse
import math


def _shown(text: str, limit: int = 40) -> str:
    """`text` quoted for an error line, shortened: a flag's value may be any length."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # also a number past the int-from-str digit limit
        raise argparse.ArgumentTypeError(f"expected a whole number, not {_shown(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {_shown(text)}")
    return value


def positive_float(text: str) -> float:
    """A number of seconds, more than 0 and finite."""
    return _positive(text, "a number of seconds", "a finite number of seconds")


def dollars(text: str) -> float:
    """An amount of US dollars, more than 0 and finite (e.g. `2.50`)."""
    return _positive(text.removeprefix("$"), "an amount of US dollars", "a finite amount")


def seconds(text: str) -> float:
    """A number of seconds, 0 or more and finite (a grace period, which may be none)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds, not {_shown(text)}"
        ) from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, not {_shown(text)}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {_shown(text)}")
    return value


def _positive(text: str, what: str, finite: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, not {_shown(text)}") from None
    # inf and nan parse as floats; neither is a limit (and `1e999` is inf).
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {finite}, not {_shown(text)}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {_shown(text)}")
    return value


def session_id(text: str) -> str:
    """A session's id, as `neo run` prints it: never empty (that would start a new one)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a session id, not an empty string")
    return text


def image_reference(text: str) -> str:
    """A Docker image reference, e.g. `neo-sandbox:local`."""
    # Only for a command line that names one: runner.sandbox loads the sandboxes' code.
    from runner.sandbox.image import image_problem

    problem = image_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def port(text: str) -> int:
    """A TCP port; 0 asks the system for any free one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, not {_shown(text)}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, not {value}")
    return value
