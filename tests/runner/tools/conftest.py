from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runner.sandbox import LocalSandbox
from runner.tools import ToolContext


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The working tree, next to an `outside` directory it must not reach."""
    root = tmp_path / "tree"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("alpha secret\n")
    return root


@pytest.fixture
def sandbox(tree: Path) -> LocalSandbox:
    return LocalSandbox(tree)


@pytest.fixture
def events() -> list[object]:
    return []


@pytest.fixture
def ctx(events: list[object]) -> ToolContext:
    return ToolContext(call_id="call-1", emit=events.append)


Files = Callable[[dict[str, str | bytes]], None]


@pytest.fixture
def files(tree: Path) -> Files:
    """Writes files, given by tree-relative name, creating their directories."""

    def write(contents: dict[str, str | bytes]) -> None:
        for name, content in contents.items():
            path = tree / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)

    return write
