"""The SDKs a run loads on first use, imported off the event loop one at a time.

    await imported("runner.mcp.container")         # then a plain import is a lookup
    provider = await importing(make_provider, ...)  # a call whose first use imports

Python locks each module while it is imported, not a package: two threads
that enter a package's import cycle from different ends are each handed the
other's half-made module, and `from module import name` fails with
ImportError ("partially initialized module"). The mcp SDK has such cycles; a
job importing it in a thread while another part of the job (or another job)
imported it on the event loop failed that way. Every lazy import of an SDK
(a provider's, the mcp SDK, genai-prices) goes through here: in a thread, so
its second or more of CPU does not stall the loop's other jobs, and under
one process-wide lock, so no two run at once.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import sys
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["imported", "importing", "loaded"]

P = ParamSpec("P")
T = TypeVar("T")

# Held by one importing thread at a time; never taken on the event loop.
_LOCK = threading.Lock()


def loaded(name: str) -> bool:
    """Whether module `name` is imported to the end (not half-way, in some thread)."""
    module = sys.modules.get(name)
    if module is None:
        return False
    spec = getattr(module, "__spec__", None)
    return not getattr(spec, "_initializing", False)


async def imported(*names: str) -> None:
    """Import the modules `names`, off the loop and one importer at a time;
    at once when they are all loaded."""
    if all(loaded(name) for name in names):
        return
    await asyncio.to_thread(_import, names)


async def importing(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)` in a thread, as the process's only import under
    way: for a call whose first use imports an SDK (a provider's constructor)."""
    return await asyncio.to_thread(_holding, functools.partial(call, *args, **kwargs))


def _import(names: tuple[str, ...]) -> None:
    with _LOCK:
        for name in names:
            importlib.import_module(name)


def _holding(call: Callable[[], T]) -> T:
    with _LOCK:
        return call()
