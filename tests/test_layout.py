"""The layout's rules hold: who may import GitHub's SDK, which way imports run, and
that only the intake knows webhook event names."""

from __future__ import annotations

import ast
import re
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


# Products (what a person runs), parts (what a product is made of), shared
# layers (what every part uses), as docs/architecture.md states them.
_LAYERS = {
    "cli": 2,
    "action": 2,
    "setup": 2,
    "service": 2,
    "intake": 1,
    "worker": 1,
    "runs": 1,
    "config": 0,
    "exits": 0,
    "queue": 0,
    "github": 0,
    "jobs": 0,
    "logs": 0,
}


def test_imports_run_from_products_to_parts_to_shared_layers_never_back() -> None:
    found = []
    for path, tree in _modules("bot"):
        own = _part(path.removesuffix(".py").replace("/", "."))
        if own is None or own == "__init__":
            continue
        for name in _imported(tree):
            other = _part(name)
            if other is not None and _LAYERS[other] > _LAYERS[own]:
                found.append(f"{path}: {name}")
    assert found == [], "products import parts, parts import shared layers, never the reverse"


def test_every_package_of_bot_has_its_layer() -> None:
    packages = {p.name for p in (ROOT / "bot").iterdir() if p.is_dir() and p.name != "__pycache__"}
    modules = {p.stem for p in (ROOT / "bot").glob("*.py") if p.stem != "__init__"}
    assert packages | modules == set(_LAYERS)


# The webhook events triage knows, and the Action's by name: only bot/intake/
# names them; everyone else reads the request's TriggerKind.
_EVENTS = (
    "issue_comment|issues|pull_request|pull_request_review|pull_request_review_comment"
    "|check_run|check_suite|workflow_run|schedule|workflow_dispatch"
)
_EVENT_ACTION = re.compile(rf"(?:{_EVENTS})\.[a-z_]*")
_EVENT = re.compile(rf"(?:{_EVENTS})(?:\.[a-z_]*)?")
_STRING_TESTS = frozenset({"startswith", "endswith", "removeprefix", "partition", "split"})


def _strings(node: ast.AST) -> Iterator[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            yield inner.value


def _trigger_kinds(tree: ast.Module) -> set[int]:
    """The ids of the values of bot.jobs.TriggerKind: the one place an event is a value."""
    return {
        id(value)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "TriggerKind"
        for statement in node.body
        if isinstance(statement, ast.Assign)
        for value in ast.walk(statement.value)
    }


def _tested_events(tree: ast.Module) -> list[tuple[int, str]]:
    """Event names compared, prefix-tested, matched or looked up; `event.action` anywhere."""
    exempt = _trigger_kinds(tree)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in exempt and _EVENT_ACTION.fullmatch(node.value):
                found.add((node.lineno, node.value))
            continue
        tested: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            tested = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _STRING_TESTS:
                tested = list(node.args)
        elif isinstance(node, ast.Subscript):
            tested = [node.slice]
        elif isinstance(node, ast.MatchValue):
            tested = [node.value]
        for part in tested:
            found.update(
                (getattr(part, "lineno", 0), text)
                for text in _strings(part)
                if _EVENT.fullmatch(text)
            )
    return sorted(found)


def test_no_module_outside_intake_tests_a_webhook_event_name() -> None:
    found = [
        f"{path}:{line}: {text!r}"
        for path, tree in _modules("bot")
        if not path.startswith("bot/intake/")
        for line, text in _tested_events(tree)
    ]
    assert found == [], "read the request's trigger (bot.jobs.TriggerKind), not its event"


def test_the_event_rule_sees_the_ways_code_tests_an_event() -> None:
    caught = ast.parse(
        "if request.event == 'schedule': pass\n"
        "request.event.startswith('issue_comment.')\n"
        "TEXTS = {'issues.opened': 'by mentioning Neo'}\n"
        "match event:\n    case 'workflow_dispatch': pass\n"
    )
    assert [text for _, text in _tested_events(caught)] == [
        "schedule",
        "issue_comment.",
        "issues.opened",
        "workflow_dispatch",
    ]
    # A permission or a reaction that shares a word with an event is not one.
    assert list(_tested_events(ast.parse("PERMISSIONS = {'issues': 'write'}"))) == []
