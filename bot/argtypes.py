"""Argument types the `neo` subcommands share: a bad value is one clear line."""

from __future__ import annotations

import argparse

from runner.sandbox.image import image_problem


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def image_reference(text: str) -> str:
    """A Docker image reference, e.g. `neo-sandbox:local`."""
    problem = image_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text
