"""The exec server: runs one sandbox's commands and file operations from inside it.

A standalone script for the image's own `python3` (3.8+, standard library
only: it must not import Neo). The docker sandbox sends its source over the
container's stdin; on the host, the local sandbox's init (`local_init.py`) runs it.
The JSON-lines protocol is in docs/architecture.md, "Sandboxes".
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any, NoReturn

PROTOCOL = 1
ROOT = "/workspace"
OUTPUT_LIMIT = 16 * 1024 * 1024
# How long output may keep arriving after a command exits (a background
# process holding its output pipe) before its process group is killed, and
# how long to wait for the pipe to close after a kill: as LocalSandbox does.
DRAIN_SECONDS = 1.0
READ_CHUNK = 65536
# How often a running command that prints nothing is checked for its exit.
EXIT_POLL_SECONDS = 0.05
# A file read travels as one base64 line; larger files are refused (EFBIG)
# rather than ending the channel on the runner's side.
MAX_READ = 512 * 1024 * 1024
# What `lines` reads at a time: all it holds besides the lines it keeps.
LINES_CHUNK = 1024 * 1024
# UTF-8 continuation bytes: a character is any other byte.
CONTINUATION = bytes(range(0x80, 0xC0))


# What a background command's unread output keeps: its newest bytes.
BACKGROUND_KEPT = 1024 * 1024


class Outside(Exception):
    """A path resolves outside the working tree."""


class Unknown(Exception):
    """No background command has that id (never started, or stopped)."""


class Output:
    """The head and tail of a command's output, and its full size.

    The same algorithm as runner.sandbox.output_buffer.OutputBuffer, which this
    script cannot import.
    """

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0
        self.newlines = 0
        self.last = b""

    def append(self, data: bytes) -> None:
        if not data:
            return
        self.total_bytes += len(data)
        self.newlines += data.count(b"\n")
        self.last = data[-1:]
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            # Trim in batches: each byte is moved a bounded number of times.
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def dropped(self) -> bool:
        return self.total_bytes > len(self.head) + len(self.tail[-self.half :])

    @property
    def total_lines(self) -> int:
        return self.newlines + (0 if self.last in (b"", b"\n") else 1)

    def getvalue(self) -> bytes:
        return bytes(self.head) + (bytes(self.tail[-self.half :]) if self.half else b"")


def shown(path: str) -> str:
    """`path` fit for a one-line message."""
    return path if path.isprintable() else repr(path)


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve(root: str, path: str) -> str:
    """The real path `path` names, following symlinks; it may not exist yet.

    Raises Outside unless it lies inside `root`, with LocalSandbox's messages.
    """
    if "\0" in path:
        raise Outside(f"{shown(path)} is not a valid path (NUL byte)")
    # An absolute `path` replaces the root in the join.
    joined = os.path.join(root, path)
    # realpath follows every symlink that exists, including a dangling final
    # one, and resolves `..` after them, as the kernel would.
    resolved = os.path.realpath(joined)
    if inside(resolved, root):
        return resolved
    if inside(os.path.normpath(joined), root):
        raise Outside(f"{shown(path)} resolves outside the working tree via a symlink")
    raise Outside(f"{shown(path)} is outside the working tree")


def directory(root: str, path: str) -> str:
    target = resolve(root, path)
    if not os.path.exists(target):
        raise FileNotFoundError(errno.ENOENT, "no such directory", path)
    if not os.path.isdir(target):
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
    return target


def read_file(root: str, path: str, offset: int = 0, limit: Any = None) -> bytes:
    """Up to `limit` bytes from `offset`; without a limit, the whole file."""
    too_large = OSError(errno.EFBIG, f"File too large (the sandbox reads at most {MAX_READ} bytes)")
    with open(resolve(root, path), "rb") as handle:
        if limit is not None:
            handle.seek(max(0, int(offset)))
            return handle.read(min(max(0, int(limit)), MAX_READ))
        if os.fstat(handle.fileno()).st_size > MAX_READ:
            raise too_large
        data = handle.read(MAX_READ + 1)
    if len(data) > MAX_READ:
        raise too_large
    return data


def read_lines(
    handle: IO[bytes],
    start: int,
    count: int,
    max_line_bytes: int,
    max_bytes: int,
    max_scan: int,
    chunk_size: int = LINES_CHUNK,
) -> dict[str, Any]:
    """Lines `start` .. `start + count - 1` (1-based) of an open file, holding
    no more of it than `chunk_size` bytes and the lines kept.

    A line ends at `\n` (a `\r` before it is dropped too); each is kept up to
    `max_line_bytes`, with its full length in characters in `chars`. Lines
    stop once `max_bytes` are kept (one line at least). The file is scanned
    to count its lines up to `max_scan` bytes; `complete` says whether that
    reached its end (else `total_lines` counts the lines seen so far).
    """
    stop = start + count
    lines: list[bytes] = []
    chars: list[int] = []
    kept = 0
    number = 1
    line = bytearray()
    line_chars = line_bytes = 0
    last = b""
    pending = False  # the current line has bytes
    scanned = 0

    def finish(ended: bool) -> None:
        nonlocal kept, line_chars
        if ended and last == b"\r":
            line_chars -= 1
            if len(line) == line_bytes:
                del line[-1:]
        lines.append(bytes(line))
        chars.append(line_chars)
        kept += len(line)

    while True:
        room = max_scan - scanned
        chunk = handle.read(min(chunk_size, room)) if room > 0 else b""
        if not chunk:
            complete = room > 0 or not handle.read(1)
            break
        scanned += len(chunk)
        pos = 0
        while pos < len(chunk):
            showing = start <= number < stop and kept < max_bytes
            if not showing:
                newlines = chunk.count(b"\n", pos)
                if number < start <= number + newlines:
                    # The window starts in this chunk: find its first line.
                    for _ in range(start - number):
                        pos = chunk.index(b"\n", pos) + 1
                    number, pending = start, False
                    continue
                # Before the window or past it: only count.
                number += newlines
                pending = not chunk.endswith(b"\n") if newlines else True
                break
            end = chunk.find(b"\n", pos)
            cut = len(chunk) if end < 0 else end
            if cut > pos:
                piece = chunk[pos:cut]
                line += piece[: max(0, max_line_bytes - len(line))]
                line_chars += len(piece.translate(None, CONTINUATION))
                line_bytes += len(piece)
                last = piece[-1:]
                pending = True
            if end < 0:
                break
            finish(True)
            number += 1
            line, line_chars, line_bytes, last, pending = bytearray(), 0, 0, b"", False
            pos = end + 1
    if pending:
        # A last line without a newline, or the one the scan stopped in.
        if start <= number < stop and kept < max_bytes:
            finish(complete)
        number += 1
    return {
        "lines": lines,
        "chars": chars,
        "total_lines": number - 1,
        "complete": complete,
        "size": os.fstat(handle.fileno()).st_size,
    }


def write_file(root: str, path: str, data: bytes) -> None:
    target = resolve(root, path)
    parent, name = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    # Readers see the old content or the new, never a torn file. The name
    # says where a leftover after a crash came from.
    # (os.urandom, not uuid: importing uuid, and platform with it, is ~5 ms of a start.)
    temp = os.path.join(parent, f".{name[:64]}.{os.urandom(6).hex()}.tmp")
    # 0o666 lets the umask decide a new file's mode, as open() would.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def kill_group(pgid: int) -> None:
    # The group outlives its leader while any member runs; once it is empty
    # there is nothing left to kill.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def set_oom_score_adj(value: int) -> None:
    with contextlib.suppress(OSError):
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, str(value).encode())
        finally:
            os.close(fd)


# Commands get oom_score_adj 1000, so the OOM killer takes them, and all they
# start, before the agent. The agent raises its own score while it spawns a
# command, which inherits it, and lowers it back after (allowed down to the
# score it started with). Without a preexec_fn, Popen can use vfork: a
# command starts in a fraction of the time.
SPAWN_LOCK = threading.Lock()


def read_oom_score_adj() -> int:
    try:
        with open("/proc/self/oom_score_adj") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 0


def start_thread(target: Any, *args: Any) -> None:
    """Start a daemon thread; under the pids limit that can fail."""
    thread = threading.Thread(target=target, args=args, daemon=True)
    try:
        thread.start()
    except RuntimeError:
        raise BlockingIOError(errno.EAGAIN, "cannot start a thread: too many processes") from None


# How many of the processes a command left behind are named in its result.
STOPPED_NAMED = 10


def group_members(pgid: int) -> list[str]:
    """The command lines of the live processes in process group `pgid`, by pid."""
    try:
        pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                # After the name in parentheses: state, ppid, pgrp, ...
                fields = handle.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid or fields[0] in (b"Z", b"X"):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read(4096).split(b"\0")
        except (OSError, IndexError, ValueError):
            continue  # gone in between
        line = " ".join(arg.decode("utf-8", "replace") for arg in argv if arg)
        found.append(" ".join(line.split())[:200] or f"pid {pid}")
    return found


def collect(
    process: subprocess.Popen[bytes], pipe: IO[bytes], output: Output, timeout: float
) -> tuple[bool, list[str]]:
    """Read the command's output until its pipe closes and it has exited;
    whether it timed out, and the processes it left running that were stopped.

    One thread does it all, woken by the pipe or by the process's exit (a
    pidfd; without one, it looks every EXIT_POLL_SECONDS), so a command costs
    no thread of its own. As in LocalSandbox: on timeout the process group is
    killed; once the command has exited, output may keep coming for
    DRAIN_SECONDS (a background process holding the pipe) before the group
    is killed; a process that left the group may hold the pipe forever, so
    its output is given up after DRAIN_SECONDS more.
    """
    poller = select.poll()
    poller.register(pipe.fileno(), select.POLLIN)
    exit_fd = pidfd(process.pid)
    if exit_fd is not None:
        poller.register(exit_fd, select.POLLIN)
    try:
        return watch(process, exit_fd, poller, output, timeout)
    finally:
        if exit_fd is not None:
            os.close(exit_fd)


def watch(
    process: subprocess.Popen[bytes],
    exit_fd: int | None,
    poller: select.poll,
    output: Output,
    timeout: float,
) -> tuple[bool, list[str]]:
    deadline = time.monotonic() + timeout
    timed_out = False
    stopped: list[str] = []
    pipe_open = True
    exited_at: float | None = None
    killed_at: float | None = None
    while True:
        now = time.monotonic()
        if exited_at is None:
            if now >= deadline:
                timed_out = True
                kill_group(process.pid)
                process.wait()
                exited_at = killed_at = now
                continue
            wait = deadline - now if exit_fd is not None else min(EXIT_POLL_SECONDS, deadline - now)
        elif not pipe_open:
            return timed_out, stopped
        elif killed_at is None:
            wait = exited_at + DRAIN_SECONDS - now
            if wait <= 0:
                # Left running, holding the output: named, so the model knows.
                stopped = group_members(process.pid)
                kill_group(process.pid)
                killed_at = now
                continue
        else:
            wait = killed_at + DRAIN_SECONDS - now
            if wait <= 0:
                return timed_out, stopped
        for fd, _ in poller.poll(wait * 1000):
            if fd == exit_fd:
                poller.unregister(fd)
                process.wait()
                exited_at = time.monotonic()
                continue
            chunk = os.read(fd, READ_CHUNK)
            if chunk:
                output.append(chunk)
            else:
                poller.unregister(fd)
                pipe_open = False
        if exit_fd is None and exited_at is None and process.poll() is not None:
            exited_at = time.monotonic()


def pidfd(pid: int) -> int | None:
    """A descriptor that polls readable when `pid` exits (Linux 5.3, Python 3.9)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def exec_result(
    code: int, data: bytes, timed_out: bool, output: Output | None, stopped: Any = ()
) -> dict[str, Any]:
    dropped = output is not None and output.dropped
    return {
        "exit_code": code,
        "output": data,
        "timed_out": timed_out,
        "total_bytes": output.total_bytes if output is not None and dropped else None,
        "total_lines": output.total_lines if output is not None and dropped else None,
        "stopped": list(stopped)[:STOPPED_NAMED],
        "stopped_count": len(stopped),
    }


def encode_line(message: dict[str, Any]) -> bytes:
    """`message` as a JSON line, its bytes values as base64 strings.

    Base64 needs no JSON escaping, so it is spliced in as it is rather than
    scanned again by the JSON encoder, which would double the cost of a file.
    """
    plain = {key: value for key, value in message.items() if not isinstance(value, bytes)}
    parts = [json.dumps(plain, separators=(",", ":")).encode()[:-1]]
    separator = b"," if plain else b""
    for key, value in message.items():
        if isinstance(value, bytes):
            parts += [separator, json.dumps(key).encode(), b':"', base64.b64encode(value), b'"']
            separator = b","
    parts.append(b"}\n")
    return b"".join(parts)


def os_error(error: OSError) -> dict[str, Any]:
    return {"type": "os", "errno": error.errno, "message": error.strerror or str(error)}


def internal(message: str) -> dict[str, Any]:
    return {"type": "internal", "message": message}


class Background:
    """A command started by `spawn`: its process and the output not yet read."""

    def __init__(self, process: subprocess.Popen[bytes], ident: Any = None) -> None:
        self.process = process
        # The id of the request that started it, which names it in the proxy's log.
        self.ident = ident
        self.lock = threading.Lock()
        self.unread = bytearray()
        self.dropped = 0
        self.closed = threading.Event()
        self.drained = False

    def pump(self) -> None:
        """Read the output until the pipe closes (its own thread)."""
        pipe = self.process.stdout
        assert pipe is not None
        try:
            while True:
                chunk = os.read(pipe.fileno(), READ_CHUNK)
                if not chunk:
                    break
                with self.lock:
                    self.unread += chunk
                    excess = len(self.unread) - BACKGROUND_KEPT
                    if excess > 0:
                        del self.unread[:excess]
                        self.dropped += excess
        except OSError:
            pass
        finally:
            pipe.close()
            self.closed.set()

    def take(self) -> dict[str, Any]:
        code = self.process.poll()
        if code is not None and not self.drained:
            # What it printed just before it exited may still be in the pipe;
            # a process it left holding the pipe may never close it.
            self.closed.wait(DRAIN_SECONDS)
            self.drained = True
        with self.lock:
            data, dropped = bytes(self.unread), self.dropped
            self.unread.clear()
            self.dropped = 0
        return {"output": data, "exit_code": code, "dropped": dropped}


class Agent:
    def __init__(self, root: str, out: IO[bytes]) -> None:
        self.root = root
        self.out = out
        self.write_lock = threading.Lock()
        self.groups_lock = threading.Lock()
        # Running commands' process groups by request id, for cancel and exit.
        self.groups: dict[Any, int] = {}
        # Cancelled before their process group was known.
        self.cancelled: set[Any] = set()
        # Background commands by the id `spawn` gave them.
        self.background: dict[str, Background] = {}
        self.spawned = 0
        # Commands between their start and their record above, and whether
        # stdin has closed: the shutdown waits for those records, so no
        # command started as it came escapes its kill.
        self.starting_now = 0
        self.closing = False
        self.recorded = threading.Condition(self.groups_lock)
        self.oom_score_adj = read_oom_score_adj()
        # Why the egress relay could not start (see Relay), for the ready message.
        self.relay_error: str | None = None

    def send(self, message: dict[str, Any]) -> None:
        line = encode_line(message)
        with self.write_lock:
            self.out.write(line)
            self.out.flush()

    def serve(self, requests: Iterable[bytes]) -> None:
        ready: dict[str, Any] = {
            "id": 0,
            "ok": True,
            "ready": True,
            "protocol": PROTOCOL,
            "pid": os.getpid(),
        }
        if self.relay_error is not None:
            ready["relay_error"] = self.relay_error
        self.send(ready)
        for line in requests:
            try:
                request = json.loads(line)
                ident = request["id"]
                op = request["op"]
            except (ValueError, KeyError, TypeError):
                self.send({"id": None, "ok": False, "error": internal("bad request line")})
                continue
            if op == "cancel":
                self.cancel(request.get("target"))
                continue
            try:
                start_thread(self.handle, ident, op, request)
            except OSError as error:
                self.send({"id": ident, "ok": False, "error": os_error(error)})
        # stdin closed: the runner is gone, and nothing may outlive it. Nothing
        # more is said either: an answer for a command killed now would read as
        # the command's own end (a second at most for a write in progress).
        self.write_lock.acquire(timeout=1)
        with self.groups_lock:
            self.closing = True
            while self.starting_now:
                self.recorded.wait()
            groups = list(self.groups.values())
            groups += [command.process.pid for command in self.background.values()]
        for pgid in groups:
            kill_group(pgid)

    def leave(self) -> NoReturn:
        """Exit now (after `serve`, which has silenced the answers).

        Not through the interpreter's shutdown: the threads still answering
        for the commands just killed are daemons, and one holding stdout's
        lock as the shutdown flushes stdout aborts the process (SIGABRT)."""
        os._exit(0)

    def owners(self) -> dict[int, Any]:
        """The request id of each running command, by its process group."""
        with self.groups_lock:
            found = {pgid: ident for ident, pgid in self.groups.items()}
            for command in self.background.values():
                found[command.process.pid] = command.ident
        return found

    def owner(self, pid: int) -> Any:
        """The request id of the command process `pid` belongs to (see owning_command).

        A command is recorded just after its process starts, and on a loaded
        host the command may run, and connect, first: a process found unowned
        while commands are starting is looked up again once they are recorded
        (for OWNER_WAIT at most), not taken for one that escaped its command."""
        deadline = time.monotonic() + OWNER_WAIT
        while True:
            # Read before the owners: a start that ended by then is in them.
            with self.groups_lock:
                starting = self.starting_now
            found = owning_command(pid, self.owners())
            left = deadline - time.monotonic()
            if found is not None or not starting or left <= 0:
                return found
            with self.groups_lock:
                if self.starting_now:
                    self.recorded.wait(left)

    def cancel(self, target: Any) -> None:
        with self.groups_lock:
            pgid = self.groups.get(target)
            if pgid is None:
                self.cancelled.add(target)
        if pgid is not None:
            kill_group(pgid)

    def handle(self, ident: Any, op: str, request: dict[str, Any]) -> None:
        response: dict[str, Any] = {"id": ident, "ok": True}
        try:
            if op == "run":
                response.update(self.run(ident, request))
            elif op == "read":
                response["data"] = read_file(
                    self.root, request["path"], request.get("offset", 0), request.get("limit")
                )
            elif op == "lines":
                response.update(self.lines(request))
            elif op == "write":
                data = base64.b64decode(request["data"], validate=True)
                write_file(self.root, request["path"], data)
            elif op == "spawn":
                response.update(self.spawn(request))
            elif op == "output":
                response.update(self.find(request.get("target")).take())
            elif op == "stop":
                response.update(self.stop(request.get("target")))
            else:
                raise ValueError(f"unknown op {op!r}")
        except Outside as error:
            response = {
                "id": ident,
                "ok": False,
                "error": {"type": "outside", "message": str(error)},
            }
        except Unknown as error:
            response = {
                "id": ident,
                "ok": False,
                "error": {"type": "unknown", "message": str(error)},
            }
        except OSError as error:
            response = {"id": ident, "ok": False, "error": os_error(error)}
        except Exception as error:
            message = f"{type(error).__name__}: {error}"
            response = {"id": ident, "ok": False, "error": internal(message)}
        # A closed stdout means the runner is gone; the main loop ends on EOF.
        with contextlib.suppress(OSError, ValueError):
            self.send(response)

    def lines(self, request: dict[str, Any]) -> dict[str, Any]:
        numbers = [
            int(request[key])
            for key in ("start", "count", "max_line_bytes", "max_bytes", "max_scan")
        ]
        with open(resolve(self.root, request["path"]), "rb") as handle:
            window = read_lines(handle, *numbers)
        # The lines hold no newline: joined by one, they travel as one base64 value.
        shown = window.pop("lines")
        return {**window, "data": b"\n".join(shown), "count": len(shown)}

    def command(self, request: dict[str, Any]) -> tuple[list[str], str]:
        """The request's argv and working directory, checked."""
        argv = [str(arg) for arg in request["argv"]]
        if not argv:
            raise ValueError("argv is empty")
        cwd = self.root if request.get("cwd") is None else directory(self.root, request["cwd"])
        return argv, cwd

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Around starting a command and recording it; refused once stdin has closed."""
        with self.groups_lock:
            if self.closing:
                raise OSError(errno.ESHUTDOWN, "the agent is shutting down")
            self.starting_now += 1
        try:
            yield
        finally:
            with self.groups_lock:
                self.starting_now -= 1
                self.recorded.notify_all()

    def popen(self, argv: list[str], cwd: str, request: dict[str, Any]) -> subprocess.Popen[bytes]:
        """Start `argv` in a process group of its own, its output piped."""
        env = dict(os.environ) if request.get("inherit_env", True) else {}
        env.update(request.get("env") or {})
        with SPAWN_LOCK:
            set_oom_score_adj(1000)
            try:
                return subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            finally:
                set_oom_score_adj(self.oom_score_adj)

    def spawn(self, request: dict[str, Any]) -> dict[str, Any]:
        # A missing program is bash's to report: the tools always run bash.
        with self.starting():
            process = self.popen(*self.command(request), request)
            command = Background(process, request.get("id"))
            with self.groups_lock:
                self.spawned += 1
                target = f"bash_{self.spawned}"
                self.background[target] = command
        try:
            start_thread(command.pump)
        except OSError:
            with self.groups_lock:
                self.background.pop(target, None)
            kill_group(process.pid)
            process.wait()
            raise
        return {"target": target, "pid": process.pid}

    def find(self, target: Any) -> Background:
        with self.groups_lock:
            command = self.background.get(target)
        if command is None:
            raise Unknown(f"no background command {target}")
        return command

    def stop(self, target: Any) -> dict[str, Any]:
        with self.groups_lock:
            command = self.background.pop(target, None)
        if command is None:
            raise Unknown(f"no background command {target}")
        kill_group(command.process.pid)
        command.process.wait()
        # A process that left the group may hold the pipe: its output is given up.
        command.closed.wait(DRAIN_SECONDS)
        command.drained = True
        return command.take()

    def run(self, ident: Any, request: dict[str, Any]) -> dict[str, Any]:
        argv, cwd = self.command(request)
        timeout = float(request["timeout"])
        output = Output(int(request.get("limit", OUTPUT_LIMIT)))
        with self.starting():
            try:
                process = self.popen(argv, cwd, request)
            except FileNotFoundError:
                return exec_result(127, f"{argv[0]}: command not found\n".encode(), False, None)
            except PermissionError:
                return exec_result(126, f"{argv[0]}: permission denied\n".encode(), False, None)
            # start_new_session makes the child the leader of a new process group
            # whose id is its pid: killing the group reaches everything it started.
            pgid = process.pid
            with self.groups_lock:
                self.groups[ident] = pgid
                cancelled = ident in self.cancelled
                self.cancelled.discard(ident)
        pipe = process.stdout
        assert pipe is not None
        if cancelled:
            kill_group(pgid)
        try:
            timed_out, stopped = collect(process, pipe, output, timeout)
        except BaseException:
            kill_group(pgid)
            process.wait()
            raise
        finally:
            with self.groups_lock:
                self.groups.pop(ident, None)
            pipe.close()
        code = process.returncode
        code = -9 if code is None else code
        return exec_result(code, output.getvalue(), timed_out, output, stopped)


# --- the egress relay ---------------------------------------------------------
# A docker sandbox has no network but loopback. Its one way out is Neo's egress
# proxy, whose unix socket is mounted at a path the runner names with
# `--egress`: the relay listens on 127.0.0.1:RELAY_PORT, where the commands'
# HTTP(S)_PROXY points, and forwards each connection to that socket, first
# stating in a PROXY protocol header which command opened it, as an address
# (runner.network.accesses decodes it). The proxy decides what is allowed.

RELAY_PORT = 3128
RELAY_CHUNK = 1024 * 1024
# 10.0.0.0 + request id + 1; 10.0.0.0 when no command owns the connection.
RELAY_BASE = 10 << 24
RELAY_SPAN = 1 << 24
# How long the relay waits for commands being started to be recorded (Agent.owner).
OWNER_WAIT = 10.0


def command_address(ident: Any) -> str:
    known = isinstance(ident, int) and 0 <= ident < RELAY_SPAN - 1
    value = RELAY_BASE + (ident + 1 if known else 0)
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


def socket_inode(local_port: int, remote_port: int) -> int | None:
    """The inode of the loopback TCP socket from `local_port` to `remote_port`:
    asked of the kernel's socket diagnostics, one exact lookup, where reading
    /proc/net/tcp walks every TCP socket of the host, whatever its namespace
    (a millisecond and more on each connection the relay accepts)."""
    try:
        return diagnosed_inode(local_port, remote_port)
    except (OSError, struct.error):
        return listed_inode(local_port, remote_port)


# linux/sock_diag.h and linux/inet_diag.h.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLMSG_ERROR = 2
INET_DIAG_NOCOOKIE = 0xFFFFFFFF
INET_DIAG_INODE = 84  # nlmsghdr (16), then inet_diag_msg's idiag_inode at 68
LOOPBACK = socket.inet_aton("127.0.0.1") + bytes(12)


def diagnosed_inode(local_port: int, remote_port: int) -> int | None:
    """socket_inode through NETLINK_SOCK_DIAG (None: no such socket)."""
    request = (
        struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
        + struct.pack("!HH", local_port, remote_port)
        + LOOPBACK
        + LOOPBACK
        + struct.pack("=III", 0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE)
    )
    header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, 1, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as diag:
        diag.settimeout(1.0)
        diag.send(header + request)
        answer = diag.recv(4096)
    (kind,) = struct.unpack_from("=H", answer, 4)
    if kind == NLMSG_ERROR:
        (code,) = struct.unpack_from("=i", answer, 16)
        if code == -errno.ENOENT:
            return None
        raise OSError(-code, os.strerror(-code))
    (inode,) = struct.unpack_from("=I", answer, INET_DIAG_INODE)
    return inode or None


def listed_inode(local_port: int, remote_port: int) -> int | None:
    """socket_inode from /proc/net/tcp, where the kernel has no socket diagnostics."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            try:
                local = int(fields[1].rsplit(":", 1)[1], 16)
                remote = int(fields[2].rsplit(":", 1)[1], 16)
                if (local, remote) == (local_port, remote_port):
                    return int(fields[9])
            except (IndexError, ValueError):
                continue
    return None


def socket_owner(inode: int) -> int | None:
    """A process holding socket `inode` open (commands run as the agent's user)."""
    target = f"socket:[{inode}]"
    own = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        if pid == own:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


def process_ids(pid: int) -> tuple[int, int, int] | None:
    """`pid`'s parent, process group and session."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[2]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


def owning_command(pid: int, owners: dict[int, Any]) -> Any:
    """The request id of the command `pid` belongs to: its group's, its
    session's, or the nearest ancestor's (`timeout` starts a group of its own)."""
    for _ in range(64):
        ids = process_ids(pid)
        if ids is None:
            return None
        parent, group, session = ids
        for key in (group, session):
            if key in owners:
                return owners[key]
        if parent <= 1:
            return None
        pid = parent
    return None


class Relay:
    """127.0.0.1:RELAY_PORT to the egress proxy's socket: a thread accepts, and
    each connection is two threads, one per direction, each blocking on its
    socket (a thread per direction never deadlocks on a full buffer the other
    way, and costs less per byte than an event loop)."""

    def __init__(self, agent: Agent, path: str, port: int = RELAY_PORT) -> None:
        self.agent = agent
        self.path = path
        self.port = port

    def start(self) -> None:
        """Listen now (so a failure is known at once), accept on a daemon thread."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        start_thread(self.serve, listener)

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                client, peer = listener.accept()
            except OSError:
                time.sleep(0.1)  # out of descriptors: the next accept may do
                continue
            try:
                start_thread(self.connection, client, peer[1])
            except OSError:
                client.close()  # out of threads: the client sees a reset

    def identify(self, peer_port: int) -> Any:
        inode = socket_inode(peer_port, self.port)
        pid = socket_owner(inode) if inode is not None else None
        return self.agent.owner(pid) if pid is not None else None

    def connection(self, client: socket.socket, port: int) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # squid answers in pieces (its headers, then the body): with Nagle
            # the relay held a small piece back until the client acknowledged
            # the last, which a client waiting for the rest delays by 40 ms.
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            ident = self.identify(port)
            upstream.connect(self.path)
            header = f"PROXY TCP4 {command_address(ident)} 127.0.0.1 {port} {self.port}\r\n"
            upstream.sendall(header.encode())
            link = Link(client, upstream)
            start_thread(pipe, link, upstream, client)
        except OSError:
            client.close()
            upstream.close()
            return
        pipe(link, client, upstream)


class Link:
    """The two sockets of a relayed connection, closed once both directions end."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.ends = (client, upstream)
        self.lock = threading.Lock()
        self.ended = 0

    def abort(self) -> None:
        """Wake the other direction too: a failure either way ends the connection."""
        for end in self.ends:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def end(self) -> None:
        with self.lock:
            self.ended += 1
            last = self.ended == 2
        if last:
            for end in self.ends:
                end.close()


def pipe(link: Link, source: socket.socket, target: socket.socket) -> None:
    """Copy until end of file, then pass the end on (HTTP clients half-close).
    Through a pipe with splice where Python has it (3.10), so the bytes never
    enter Python."""
    try:
        if hasattr(os, "splice"):
            spliced(source, target)
        else:
            copied(source, target)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        link.abort()
    finally:
        link.end()


def spliced(source: socket.socket, target: socket.socket) -> None:
    read_end, write_end = os.pipe()
    try:
        while True:
            moved = os.splice(source.fileno(), write_end, RELAY_CHUNK)
            if moved == 0:
                return
            while moved:
                moved -= os.splice(read_end, target.fileno(), moved)
    finally:
        os.close(read_end)
        os.close(write_end)


def copied(source: socket.socket, target: socket.socket) -> None:
    buffer = memoryview(bytearray(RELAY_CHUNK))
    while True:
        size = source.recv_into(buffer)
        if size == 0:
            return
        target.sendall(buffer[:size])


def quiet_signals() -> None:
    """Survive a command's `pkill`: tini forwards the signals it gets to the
    agent. A handler, unlike SIG_IGN, is reset in the commands it starts."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda number, frame: None)


def name_process(name: str) -> None:
    """Set the process name, so a command's `killall python3` misses the agent."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME


def main(argv: list[str]) -> None:
    root = os.path.realpath(argv[1] if len(argv) > 1 else ROOT)
    name_process("neo-agent")
    quiet_signals()
    agent = Agent(root, sys.stdout.buffer)
    if "--egress" in argv[2:-1]:
        try:
            Relay(agent, argv[argv.index("--egress", 2) + 1]).start()
        except OSError as error:
            agent.relay_error = f"cannot listen on 127.0.0.1:{RELAY_PORT}: {error}"
    agent.serve(sys.stdin.buffer)
    agent.leave()


if __name__ in ("__main__", "__neo_agent__"):
    main(sys.argv)
