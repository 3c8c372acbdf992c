"""runner.imports: an SDK's first import, off the loop and one at a time.

The failure it prevents, made certain: a package whose `__init__` imports a
submodule that imports a name back from the package. Imported from one end
in one thread it works; entered from both ends by two threads at once, each
waits on the module the other holds, and Python hands one of them the other's
half-made module: `from pkg.sub import VALUE` fails with ImportError. The
mcp SDK has such cycles; a job's gateway and its sandbox's sweep imported it
at once and the job failed with "internal error (ImportError)".
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import sys
import threading
import types
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from runner.imports import imported, importing, loaded

_names = itertools.count()

# Long enough for the second importer to enter if nothing stops it; with the
# lock it never can, and the first goes on alone after this.
_WAIT = 0.5


@pytest.fixture
def cyclic(tmp_path: Path) -> Iterator[tuple[str, types.SimpleNamespace]]:
    """A package `name` with the cycle above, and the events its modules signal."""
    name = f"neo_cyclic_{next(_names)}"
    probe = types.SimpleNamespace(in_init=threading.Event(), sub_started=threading.Event())
    sys.modules[f"{name}_probe"] = probe  # type: ignore[assignment]
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(
        f"import {name}_probe as probe\n"
        "probe.in_init.set()\n"
        # Until the other importer is inside the submodule, if it can get there.
        f"probe.sub_started.wait({_WAIT})\n"
        "X = 1\n"
        f"from {name}.sub import VALUE\n"
    )
    (package / "sub.py").write_text(
        f"import {name}_probe as probe\nprobe.sub_started.set()\nfrom {name} import X\nVALUE = X\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield name, probe
    finally:
        sys.path.remove(str(tmp_path))
        for module in [m for m in sys.modules if m.startswith(name)]:
            del sys.modules[module]


async def _from_both_ends(
    name: str, probe: types.SimpleNamespace, second: Callable[[], Awaitable[object]]
) -> None:
    first = asyncio.create_task(imported(name))
    # The second begins once the first is inside the package's __init__.
    assert await asyncio.to_thread(probe.in_init.wait, 30)
    await asyncio.gather(first, second())


async def test_two_importers_entering_a_cycle_from_both_ends_both_succeed(
    cyclic: tuple[str, types.SimpleNamespace],
) -> None:
    name, probe = cyclic
    await _from_both_ends(name, probe, lambda: imported(f"{name}.sub"))

    assert sys.modules[f"{name}.sub"].VALUE == 1
    # The second waited for the first to end: it never entered while it ran.
    assert loaded(name)
    assert loaded(f"{name}.sub")


async def test_a_call_that_imports_waits_for_an_import_under_way(
    cyclic: tuple[str, types.SimpleNamespace],
) -> None:
    name, probe = cyclic

    def make() -> int:  # a provider's constructor, importing its SDK on first use
        module = importlib.import_module(f"{name}.sub")
        return int(module.VALUE)

    await _from_both_ends(name, probe, lambda: importing(make))

    assert sys.modules[f"{name}.sub"].VALUE == 1


async def test_without_the_lock_the_same_two_imports_fail(
    cyclic: tuple[str, types.SimpleNamespace],
) -> None:
    """What the tests above would meet without `runner.imports`: the fixture's
    cycle does break two plain threads."""
    name, probe = cyclic
    first = asyncio.create_task(asyncio.to_thread(importlib.import_module, name))
    assert await asyncio.to_thread(probe.in_init.wait, 30)
    results = await asyncio.gather(
        first, asyncio.to_thread(importlib.import_module, f"{name}.sub"), return_exceptions=True
    )

    # The first is handed the submodule half-made (the second may then fail too).
    assert isinstance(results[0], ImportError)
    assert "partially initialized module" in str(results[0])


def test_loaded_is_false_while_a_module_is_half_imported(tmp_path: Path) -> None:
    name = f"neo_half_{next(_names)}"
    seen: list[bool] = []
    sys.modules[f"{name}_seen"] = seen  # type: ignore[assignment]
    (tmp_path / f"{name}.py").write_text(
        f"import {name}_seen as seen\nfrom runner.imports import loaded\n"
        f"seen.append(loaded({name!r}))\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
        del sys.modules[name]

    assert seen == [False]
    assert not loaded(name)  # gone from sys.modules
    assert loaded("json")


async def test_modules_already_loaded_need_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_thread(*args: object, **kwargs: object) -> None:
        raise AssertionError("a thread was started for loaded modules")

    monkeypatch.setattr(asyncio, "to_thread", no_thread)
    await imported("json", "runner.imports")


async def test_an_import_that_fails_raises_and_frees_the_lock() -> None:
    with pytest.raises(ModuleNotFoundError):
        await imported("neo_no_such_module")
    await imported("runner.text")  # not stuck behind the failed one
