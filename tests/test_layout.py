"""The layout's rules hold: who may import GitHub's SDK, and which way imports run."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules(package: str) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _imported(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _part(module: str) -> str | None:
    """The part of bot/ a module belongs to: `bot.worker.job` → "worker", `bot.jobs` → "jobs"."""
    names = module.split(".")
    return names[1] if names[0] == "bot" and len(names) > 1 else None


def test_only_bot_github_imports_githubkit() -> None:
    found = [
        f"{path}: {name}"
        for path, tree in _modules("bot")
        if not path.startswith("bot/github/")
        for name in _imported(tree)
        if name.split(".")[0] in ("githubkit", "githubkit_schemas")
    ]
    assert found == [], "GitHub is called through bot/github/ alone"


def test_runner_never_imports_bot() -> None:
    found = [
        f"{path}: {name}"
        for path, tree in _modules("runner")
        for name in _imported(tree)
        if name.split(".")[0] == "bot"
    ]
    assert found == []


def test_the_parts_of_bot_import_one_another_without_a_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for path, tree in _modules("bot"):
        own = _part(path.removesuffix(".py").replace("/", "."))
        if own is None:
            continue
        for name in _imported(tree):
            other = _part(name)
            if other is not None and other != own:
                edges.setdefault(own, set()).add(other)

    def cycle_from(start: str, node: str, seen: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return (*seen, nxt)
            if nxt not in seen:
                found = cycle_from(start, nxt, (*seen, nxt))
                if found:
                    return found
        return None

    cycles = [" → ".join(c) for part in sorted(edges) if (c := cycle_from(part, part, (part,)))]
    assert cycles == []
