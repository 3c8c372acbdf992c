"""Install Neo from this clone with nothing but the system's python3 (3.8+).

    python3 scripts/install.py [--bin-dir DIR] [--no-modify-path]

1. uv: the one on PATH, else the one in the bin directory, else uv's wheel
   from PyPI (version UV_VERSION, checked against the index's sha256), whose
   binary goes into the bin directory. No pip, no venv module, no curl: a
   fresh Debian or Ubuntu python3 has none of them, and PEP 668 refuses pip.
2. Neo: `uv sync --locked --no-dev` in the clone's `.venv` (uv fetches a
   Python 3.11+ when the system's is older).
3. `neo` on PATH: a link to `.venv/bin/neo` in the bin directory,
   /usr/local/bin for root, else $XDG_BIN_HOME or ~/.local/bin, which
   `uv tool update-shell` adds to the shell's startup files when a new shell
   would not have it.

`--print-uv` only does step 1 and prints uv's path (scripts/test uses it).
Every failure is one line on stderr and exit status 1 (2 for bad usage).
This file is run by the system's python3, so it keeps to the standard library
and to Python 3.8's syntax.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Keep in step with the Dockerfile, action.yml and .github/workflows/ci.yml
# (tests/scripts/test_install.py checks).
UV_VERSION = "0.13.9"
INDEX = "https://pypi.org/simple/uv/"
_TIMEOUT = 60.0
_SYNC_TIMEOUT = 1800.0
REPO = Path(__file__).resolve().parent.parent

if TYPE_CHECKING:
    # ("glibc", (2, 36)) or ("musl", (1, 2)).
    Libc = tuple[str, tuple[int, int]]


class InstallError(Exception):
    """A reason the installation cannot go on, as the one line the user sees."""


# -- choosing uv's wheel (pure) ---------------------------------------------

# The platforms a Linux wheel tag names, by the `uname -m` that runs them.
_MACHINES = {"amd64": "x86_64", "arm64": "aarch64", "i386": "i686"}
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def wheel_fits(
    filename: str, system: str, machine: str, libc: Libc | None
) -> tuple[int, int] | None:
    """How well `filename` (a wheel) runs here: a sort key (higher is better), or
    None when it does not run at all.

    `system` and `machine` are platform.system() and platform.machine();
    `libc` is ("glibc", version) or ("musl", version) on Linux.
    """
    if not filename.endswith(".whl"):
        return None
    platforms = filename[: -len(".whl")].split("-")[-1].split(".")
    best: tuple[int, int] | None = None
    for tag in platforms:
        score = _tag_fits(tag, system, machine, libc)
        if score is not None and (best is None or score > best):
            best = score
    return best


def _tag_fits(tag: str, system: str, machine: str, libc: Libc | None) -> tuple[int, int] | None:
    if system == "Darwin":
        match = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", tag)
        if match is None:
            return None
        arch = match.group(3)
        if arch == machine:
            return (1, 0)
        return (0, 0) if arch == "universal2" else None
    if system != "Linux" or libc is None:
        return None
    machine = _MACHINES.get(machine, machine)
    family, (major, minor) = libc
    match = re.fullmatch(r"(manylinux|musllinux)_(\d+)_(\d+)_(\w+)", tag)
    if match is not None:
        kind, need, arch = (
            match.group(1),
            (int(match.group(2)), int(match.group(3))),
            match.group(4),
        )
    else:
        legacy = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", tag)
        if legacy is None:
            return None
        kind, need, arch = "manylinux", _LEGACY_MANYLINUX[legacy.group(1)], legacy.group(2)
    wanted = "manylinux" if family == "glibc" else "musllinux"
    if kind != wanted or arch != machine or need > (major, minor):
        return None
    # The newest baseline that still runs here is the best-built one.
    return need


def pick_wheel(
    files: Sequence[dict[str, Any]],
    version: str,
    system: str,
    machine: str,
    libc: Libc | None,
) -> dict[str, Any]:
    """The index entry of uv `version`'s wheel for this platform."""
    prefix = f"uv-{version}-"
    scored = []
    for entry in files:
        name = str(entry.get("filename", ""))
        if not name.startswith(prefix) or entry.get("yanked"):
            continue
        score = wheel_fits(name, system, machine, libc)
        if score is not None:
            scored.append((score, name, entry))
    if not scored:
        raise InstallError(
            f"PyPI has no uv {version} for {system} {machine}: install uv yourself "
            "(https://docs.astral.sh/uv/) and run this again"
        )
    return max(scored, key=lambda item: (item[0], item[1]))[2]


def this_libc() -> Libc | None:
    """("glibc", version) or ("musl", (1, 2)) on Linux; None elsewhere."""
    if platform.system() != "Linux":
        return None
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        found = ""
    match = re.fullmatch(r"glibc (\d+)\.(\d+).*", found)
    if match is not None:
        return ("glibc", (int(match.group(1)), int(match.group(2))))
    # Not glibc: musl (Alpine), whose wheels ask for 1.1 or 1.2.
    return ("musl", (1, 2))


# -- where things go ----------------------------------------------------------


def default_bin_dir(euid: int, env: dict[str, str], home: Path) -> Path:
    """Root's links go where every shell looks; a user's where uv puts its tools."""
    if euid == 0:
        return Path("/usr/local/bin")
    if env.get("XDG_BIN_HOME"):
        return Path(env["XDG_BIN_HOME"])
    return home / ".local" / "bin"


def on_path(directory: Path, path: str) -> bool:
    wanted = os.path.realpath(str(directory))
    return any(os.path.realpath(entry) == wanted for entry in path.split(os.pathsep) if entry)


# -- I/O ------------------------------------------------------------------------


def say(message: str) -> None:
    # stderr: --print-uv's stdout is the path alone.
    print("install: " + message, file=sys.stderr, flush=True)


def _fetch(url: str, accept: str) -> bytes:
    if not url.startswith("https://"):
        raise InstallError(f"refusing to download {url}: not https")
    headers = {"Accept": accept, "User-Agent": "neo-install"}
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - https only, above
    host = urllib.request.urlparse(url).hostname or url
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:  # noqa: S310
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as error:
        raise InstallError(f"{host} answered {error.code} for {url}") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise InstallError(
                f"cannot verify {host}'s certificate: {reason.verify_message} (install "
                "the system's CA certificates, e.g. apt-get install ca-certificates, "
                "or set SSL_CERT_FILE)"
            ) from None
        raise InstallError(
            f"cannot reach {host}: {reason} (check the network, or HTTPS_PROXY)"
        ) from None
    except (OSError, ValueError) as error:
        raise InstallError(f"cannot download {url}: {error}") from None


def download_uv(bin_dir: Path) -> Path:
    """uv UV_VERSION's binary from its PyPI wheel, verified, as bin_dir/uv."""
    say(f"downloading uv {UV_VERSION} from PyPI")
    try:
        index = json.loads(_fetch(INDEX, "application/vnd.pypi.simple.v1+json"))
        files = index["files"]
    except (ValueError, KeyError, TypeError):
        raise InstallError("PyPI's index for uv is not the JSON expected") from None
    entry = pick_wheel(files, UV_VERSION, platform.system(), platform.machine(), this_libc())
    wheel = _fetch(str(entry["url"]), "application/octet-stream")
    expected = str(entry.get("hashes", {}).get("sha256", ""))
    if not expected or hashlib.sha256(wheel).hexdigest() != expected:
        raise InstallError(f"{entry['filename']} does not match PyPI's sha256; not installed")
    member = f"uv-{UV_VERSION}.data/scripts/uv"
    try:
        with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
            binary = archive.read(member)
    except (KeyError, zipfile.BadZipFile):
        raise InstallError(f"{entry['filename']} holds no {member}") from None
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / "uv"
    # Written beside its place and renamed: never half a binary on PATH.
    handle, temporary = tempfile.mkstemp(prefix=".uv-", dir=str(bin_dir))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(binary)
        os.chmod(temporary, 0o755)  # noqa: S103 - an executable for everyone, as uv's own installer
        os.replace(temporary, str(target))
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    say(f"uv {UV_VERSION} installed in {target}")
    return target


def find_uv(bin_dir: Path) -> Path:
    found = shutil.which("uv") or shutil.which("uv", path=str(bin_dir))
    if found:
        return Path(found)
    return download_uv(bin_dir)


def run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> None:
    try:
        result = subprocess.run(argv, cwd=str(REPO), timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise InstallError(f"{' '.join(argv[:2])} took over {timeout:.0f}s") from None
    except OSError as error:
        raise InstallError(f"cannot run {argv[0]}: {error}") from None
    if result.returncode != 0:
        raise InstallError(
            "`{}` failed (exit status {}; its output is above)".format(
                " ".join(argv[1:]), result.returncode
            )
        )


def link_neo(bin_dir: Path) -> Path:
    """bin_dir/neo → the clone's .venv/bin/neo; another program of that name is kept."""
    source = REPO / ".venv" / "bin" / "neo"
    if not source.exists():
        raise InstallError(f"uv sync made no {source}")
    bin_dir.mkdir(parents=True, exist_ok=True)
    link = bin_dir / "neo"
    if link.exists() and not link.is_symlink():
        raise InstallError(f"{link} exists and is not a link to a Neo: remove it first")
    temporary = bin_dir / f".neo-link-{os.getpid()}"
    os.symlink(str(source), str(temporary))
    os.replace(str(temporary), str(link))
    return link


def ensure_on_path(uv: Path, bin_dir: Path) -> None:
    """Have new shells find bin_dir: uv writes the line to the shell's startup files."""
    if on_path(bin_dir, os.environ.get("PATH", "")):
        return
    env = dict(os.environ, UV_TOOL_BIN_DIR=str(bin_dir))
    result = subprocess.run(
        [str(uv), "tool", "update-shell"], env=env, timeout=_TIMEOUT, check=False
    )
    if result.returncode != 0:
        say(f'add {bin_dir} to your PATH: export PATH="{bin_dir}:$PATH"')


def install(bin_dir: Path, *, modify_path: bool) -> None:
    if platform.system() not in ("Linux", "Darwin"):
        raise InstallError("Neo runs on Linux and macOS, not on " + platform.system())
    if not (REPO / "pyproject.toml").is_file() or not (REPO / "uv.lock").is_file():
        raise InstallError("run this from a clone of Neo's repository: no uv.lock beside it")
    uv = find_uv(bin_dir)
    say(f"installing Neo and its locked dependencies in {REPO / '.venv'}")
    run([str(uv), "sync", "--locked", "--no-dev", "--quiet"], _SYNC_TIMEOUT)
    link = link_neo(bin_dir)
    if modify_path:
        ensure_on_path(uv, bin_dir)
    say(f"neo is {link} (open a new shell, then: neo --help)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="install.py", description="Install Neo from this clone and put `neo` on PATH."
    )
    parser.add_argument("--bin-dir", type=Path, help="where `neo` (and uv, if fetched) go")
    parser.add_argument(
        "--no-modify-path", action="store_true", help="never edit the shell's startup files"
    )
    parser.add_argument(
        "--print-uv", action="store_true", help="only find or fetch uv, and print its path"
    )
    args = parser.parse_args(argv)
    bin_dir = args.bin_dir or default_bin_dir(os.geteuid(), dict(os.environ), Path.home())
    try:
        if args.print_uv:
            print(find_uv(bin_dir))
        else:
            install(bin_dir.absolute(), modify_path=not args.no_modify_path)
    except InstallError as error:
        print("install: " + str(error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
