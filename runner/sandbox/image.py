"""Sandbox image references, checked against Docker's grammar before the engine sees them.

Every setting that names an image checks it here, so a bad one is one line naming the
setting, not the engine's 400 (docs/architecture.md, "Sandboxes").
"""

from __future__ import annotations

import re

__all__ = ["MAX_NAME_LENGTH", "image_problem"]

MAX_NAME_LENGTH = 255

# ASCII only: Go's \w, unlike Python's, matches no other letters.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

_PATH_RE = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_DOMAIN_RE = re.compile(_DOMAIN)
_TAG_RE = re.compile(_TAG)
_DIGEST_RE = re.compile(_DIGEST)

_EXAMPLE = "e.g. neo-sandbox:local or registry.example.com/team/sandbox:1.2"


def image_problem(reference: str) -> str | None:
    """Why `reference` is not a Docker image reference, one line that quotes it; None if it is.

    Callers put the setting's name in front: `--image: 'x!' is not a valid image ...`.
    """
    problem = _problem(reference)
    if problem is None:
        return None
    shown = repr(reference if len(reference) <= 60 else reference[:57] + "...")
    return f"{shown} is not a valid image reference: {problem}"


def _problem(reference: str) -> str | None:
    if not reference:
        return "must not be empty"
    if any(not " " < c < "\x7f" for c in reference):
        return "must not contain spaces or other characters outside printable ASCII"
    if reference.startswith("-"):
        return "must not start with '-'"
    name, _, digest = reference.partition("@")
    if "@" in reference and not _DIGEST_RE.fullmatch(digest):
        return "the digest must be algorithm:hex, e.g. sha256:<64 hex digits>"
    domain, path = _split_domain(name)
    tag = ""
    last_slash = path.rfind("/")
    if ":" in path[last_slash + 1 :]:
        path, _, tag = path.rpartition(":")
        if not _TAG_RE.fullmatch(tag):
            return (
                "the tag must be 1 to 128 letters, digits, '_', '.' or '-', "
                "not starting with '.' or '-'"
            )
    if domain is not None and not _DOMAIN_RE.fullmatch(domain):
        return "the registry must be a host name with an optional :port"
    if not _PATH_RE.fullmatch(path):
        if _PATH_RE.fullmatch(path.lower()):
            return "the repository name must be lowercase"
        return (
            "the repository name must be lowercase letters and digits separated by "
            f"'/', '.', '_' or '-' ({_EXAMPLE})"
        )
    if len(name) - len(tag) - (1 if tag else 0) > MAX_NAME_LENGTH:
        return f"the repository name is longer than {MAX_NAME_LENGTH} characters"
    return None


def _split_domain(name: str) -> tuple[str | None, str]:
    """The registry part of `name`, if any, and the rest, as Docker tells them apart."""
    first, slash, rest = name.partition("/")
    # Only a part with a '.' or ':', or `localhost`, names a registry.
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return None, name
