"""The gateway's end: once its block is left, none of its tasks runs on, whatever a
server or its session does at its end, so that asyncio.run (`neo run`) returns.

Each case runs in an asyncio.run of its own, in a thread: a task left behind
would hang that run's exit, and the test fails with the thread's stack
rather than hang the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from mcp import Client

from runner.mcp import Command, McpSettings, Operator, ServerSpec
from runner.mcp.connect import CLIENT_INFO, Where
from runner.mcp.gateway import Gateway, Skipped
from runner.mcp.link import ServerLink
from runner.network import NetworkPolicy
from tests.runner.mcp.conftest import SERVERS, tasks_left

T = TypeVar("T")

# Far beyond any bounded end (the SDK's stop of a stubborn server takes ~7 s):
# only a run that would never return reaches it.
_HANG = 120.0


def run_to_end(main: Callable[[], Awaitable[T]]) -> T:
    """asyncio.run(main()) in a thread; fails, with the thread's stack, if it never returns."""
    done: list[T] = []
    failed: list[BaseException] = []

    async def wrapped() -> T:
        return await main()

    def target() -> None:
        try:
            done.append(asyncio.run(wrapped()))
        except BaseException as error:
            failed.append(error)

    thread = threading.Thread(target=target, daemon=True, name="run-to-end")
    thread.start()
    thread.join(_HANG)
    if thread.is_alive():
        frame = sys._current_frames().get(thread.ident or 0)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "?"
        raise AssertionError(f"asyncio.run did not return; its thread is at:\n{stack}")
    if failed:
        raise failed[0]
    return done[0]


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def stubborn_gateway(pid_file: Path, job_id: str) -> tuple[McpSettings, Where]:
    """A gateway's settings with one server, the stubborn one (it writes its pid to
    `pid_file`), skipped at a 1 s start-up timeout."""
    stubborn = (sys.executable, str(SERVERS / "stubborn.py"), str(pid_file))
    settings = McpSettings(
        servers=(ServerSpec("stubborn", Command(stubborn), ("*",), startup_timeout=1.0),),
        github=False,
    )
    return settings, Where(Operator(commands=(sys.executable,)), NetworkPolicy(), job_id=job_id)


def test_a_server_that_fails_its_start_and_will_not_stop_is_ended_and_nothing_is_left(
    tmp_path: Path,
) -> None:
    # It answers with an error at once, so the SDK starts stopping it (a
    # grace, SIGTERM, a grace, SIGKILL); its start-up timeout lands meanwhile.
    pid_file = tmp_path / "pid"
    settings, where = stubborn_gateway(pid_file, "stubborn-test")

    async def main() -> tuple[tuple[Skipped, ...], list[str], list[str]]:
        async with Gateway(settings, where) as gateway:
            await gateway.ready()
        return gateway.skipped, [repr(t) for t in gateway.left_running()], tasks_left()

    skipped, running, left = run_to_end(main)

    assert skipped == (Skipped("stubborn", "it did not start within 1s"),)
    assert running == []
    assert left == [], "\n".join(left)
    assert process_gone(int(pid_file.read_text()))


def test_a_session_whose_end_swallows_a_cancel_is_cancelled_again_and_nothing_is_left() -> None:
    from tests.runner.mcp.servers.probe import server

    ended: list[str] = []

    @contextlib.asynccontextmanager
    async def swallowing(stderr: bytearray) -> AsyncIterator[Client]:
        async with Client(server, mode="auto", client_info=CLIENT_INFO, cache=None) as client:
            try:
                yield client
            finally:
                # An end that does not come when asked, swallows the first
                # cancellation, and ends at the next.
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.Event().wait()
                ended.append("swallowed one")
                await asyncio.Event().wait()

    async def main() -> tuple[list[str], list[str]]:
        link = ServerLink(
            "swallowing", swallowing, startup_timeout=30, call_timeout=5, close_timeout=0.5
        )
        link.start()
        assert "echo" in {tool.name for tool in await link.tools()}
        await link.close()
        return [repr(link.running)] if link.running else [], tasks_left()

    running, left = run_to_end(main)

    assert ended == ["swallowed one"]
    assert running == []
    assert left == [], "\n".join(left)


def test_a_gateway_cancelled_while_its_servers_end_lets_them_end_first(tmp_path: Path) -> None:
    # The stubborn server is skipped at 1 s and takes seconds more to end;
    # the block is cancelled meanwhile, as neo run's is on Ctrl-C.
    pid_file = tmp_path / "pid"
    settings, where = stubborn_gateway(pid_file, "cancel-test")
    opened: list[Gateway] = []

    async def body() -> None:
        async with Gateway(settings, where) as gateway:
            await gateway.ready()
            opened.append(gateway)

    async def main() -> tuple[bool, list[str], list[str]]:
        task = asyncio.create_task(body())
        while not opened and not task.done():
            await asyncio.sleep(0.01)
        task.cancel()  # the block is in __aexit__ by now
        with contextlib.suppress(asyncio.CancelledError):
            await task
        running = [repr(t) for t in opened[0].left_running()]
        return task.cancelled(), running, tasks_left()

    cancelled, running, left = run_to_end(main)

    assert cancelled  # the cancel still reaches the caller, after the servers' end
    assert running == []
    assert left == [], "\n".join(left)
    assert process_gone(int(pid_file.read_text()))
