"""The local sandbox's helper: the exec server as a process holding no secret,
in namespaces where no other process is visible (`isolation`).

Every command is the helper's child, and no process outside the helper's
namespaces exists for it, so none it can read holds the API key or the
App's key (docs/architecture.md, "Sandboxes").
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import ctypes
import json
import os
import subprocess
import threading
import weakref
from collections.abc import Mapping
from typing import IO, Any

from runner.sandbox import exec_server, isolation
from runner.sandbox.base import SandboxError, UnknownBackground

PR_SET_DUMPABLE = 4
# How much longer than a command's own timeout to wait for its answer
# before judging the helper hung.
_ANSWER_MARGIN = 30.0
# How long the helper may take to say it is ready (an interpreter's start).
_START_TIMEOUT = 60.0
# What is kept of the helper's stderr: where unshare says why it failed.
_STDERR_KEPT = 4096


def make_undumpable() -> None:
    """Hide this process's environment and memory from other processes of its user."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class _Helper:
    """One helper process and the calls waiting for its answers.

    Held by the reader thread and by Spawner; it never refers back to the
    Spawner, so dropping the sandbox ends the helper.
    """

    def __init__(self, root: str, env: Mapping[str, str]) -> None:
        argv = isolation.sandbox_command(root)
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=root,
                env=dict(env),
                start_new_session=True,
            )
        except OSError as error:
            raise SandboxError(
                f"cannot start the local sandbox's command runner: {error}"
            ) from None
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self._stdin: IO[bytes] = self.process.stdin
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._next_id = 1
        self.ended = False
        # Settled by the first line: the exec server's ready line, or why not.
        self.started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stderr = bytearray()
        self._stderr_read = threading.Thread(
            target=self._drain, args=(self.process.stderr,), daemon=True
        )
        self._stderr_read.start()
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def register(self) -> tuple[int, asyncio.Future[Any]]:
        """A new request id, and the future its answer settles."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            if self.ended:
                raise SandboxError("the local sandbox's command runner has exited")
            ident = self._next_id
            self._next_id += 1
            self._pending[ident] = (loop, future)
        return ident, future

    def send(self, message: dict[str, Any]) -> None:
        line = exec_server.encode_line(message)
        try:
            with self._lock:
                self._stdin.write(line)
                self._stdin.flush()
        except (OSError, ValueError):
            # The reader sees the helper gone and fails what waits.
            pass

    def forget(self, ident: int) -> None:
        with self._lock:
            self._pending.pop(ident, None)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError), self._lock:
            self._stdin.close()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            try:
                answer = json.loads(line)
                ident = answer["id"]
            except (ValueError, KeyError, TypeError):
                continue
            if ident == 0 and not self.started.done():
                self._start(answer)
                continue
            with self._lock:
                waiting = self._pending.pop(ident, None) if isinstance(ident, int) else None
            if waiting is not None:
                _settle(*waiting, answer)
        with self._lock:
            self.ended = True
            pending, self._pending = list(self._pending.values()), {}
        for loop, future in pending:
            _settle(loop, future, SandboxError("the local sandbox's command runner exited"))
        self.close()
        self.process.wait()
        if not self.started.done():
            # What unshare said, if it said anything: it has exited.
            self._stderr_read.join(timeout=5)
            reason = isolation.why_not(bytes(self._stderr), os.geteuid(), isolation.read_sysctls())
            self._started(isolation.SandboxUnavailable(reason))

    def _start(self, answer: dict[str, Any]) -> None:
        if answer.get("ready") is True:
            self._started(None)
            return
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        self._started(isolation.SandboxUnavailable(str(message or "its init refused to start")))

    def _started(self, error: BaseException | None) -> None:
        # A caller that gave up waiting has cancelled the future.
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            if error is None:
                self.started.set_result(None)
            else:
                self.started.set_exception(error)

    def _drain(self, stderr: IO[bytes]) -> None:
        """Keep the start of stderr; read the rest away, so no writer ever blocks."""
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: os.read(stderr.fileno(), 65536), b""):
                room = _STDERR_KEPT - len(self._stderr)
                if room > 0:
                    self._stderr += chunk[:room]
            stderr.close()


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], outcome: object) -> None:
    def resolve() -> None:
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    # The loop may be closed: nobody waits any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(resolve)


async def _started(helper: _Helper) -> None:
    """Return once `helper` is ready; raise why it never will be."""
    if not helper.started.done():
        try:
            await asyncio.wait_for(asyncio.wrap_future(helper.started), _START_TIMEOUT)
        except TimeoutError:
            helper.close()
            raise SandboxError(
                f"the local sandbox did not start within {_START_TIMEOUT:g}s"
            ) from None
    helper.started.result()


class Spawner:
    """Runs commands as children of the helper, started on first use and
    again if a command killed it."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._helper: _Helper | None = None
        self._start_lock = threading.Lock()
        self._finalizer: weakref.finalize[Any, Spawner] | None = None

    async def run(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        timeout: float,
        helper_env: Mapping[str, str],
    ) -> dict[str, Any]:
        """The agent's answer to `run`: the fields of an ExecResult, `output` as bytes.

        `env` is the command's whole environment; `helper_env` the helper's,
        should it have to start (what a command gets without overrides).
        """
        request = {
            "op": "run",
            "argv": argv,
            "cwd": cwd,
            "env": dict(env),
            "inherit_env": False,
            "timeout": timeout,
        }
        wait = timeout + 2 * exec_server.DRAIN_SECONDS + _ANSWER_MARGIN
        answer = await self.call(request, timeout=wait, helper_env=helper_env)
        answer["output"] = base64.b64decode(answer["output"], validate=True)
        return answer

    async def call(
        self, request: dict[str, Any], *, timeout: float, helper_env: Mapping[str, str]
    ) -> dict[str, Any]:
        """The agent's answer to `request`; an error answer raises, an unknown
        background id as UnknownBackground."""
        helper = self._current(helper_env)
        await _started(helper)
        ident, future = helper.register()
        try:
            await asyncio.to_thread(helper.send, {"id": ident, **request})
            answer: dict[str, Any] = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise SandboxError(f"the local sandbox did not answer within {timeout:g}s") from None
        except asyncio.CancelledError:
            if request["op"] == "run":
                # The caller gave up: end the command and all it started.
                helper.send({"id": 0, "op": "cancel", "target": ident})
            raise
        finally:
            helper.forget(ident)
        if answer.get("ok") is not True:
            error = answer.get("error")
            error = error if isinstance(error, dict) else {}
            if error.get("type") == "unknown":
                raise UnknownBackground(str(error.get("message")))
            message = error.get("message")
            raise SandboxError(f"the local sandbox's command runner failed: {message}")
        return answer

    async def start(self, helper_env: Mapping[str, str]) -> None:
        """Start the helper now rather than at the first call.

        Raises SandboxUnavailable when this system cannot hide other
        processes from it.
        """
        await _started(self._current(helper_env))

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

    def _current(self, env: Mapping[str, str]) -> _Helper:
        """The running helper, or a new one with `env` as its environment."""
        with self._start_lock:
            helper = self._helper
            if helper is None or helper.ended:
                make_undumpable()
                helper = self._helper = _Helper(self._root, env)
                if self._finalizer is not None:
                    self._finalizer.detach()
                self._finalizer = weakref.finalize(self, helper.close)
            return helper
