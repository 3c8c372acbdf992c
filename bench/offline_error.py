"""How long `neo run` takes to say it cannot reach the provider, and what it says.

Each case runs `neo run "say hi"` as a user would, in a fresh temporary
directory, and times it from the start of the process to its exit:

- offline: the process in a network namespace of its own with no interface
  up (`unshare --net`, needs root), as on a machine with no network;
- refused: ANTHROPIC_BASE_URL at a closed port on loopback;
- bad URL: ANTHROPIC_BASE_URL='http://[::1' (exit 2 expected).

Prints, per case, the median wall time over the runs, the exit status, the
number of retry lines and the last line of the output; then the offline and
refused cases less the bad URL's time, which is Neo's start-up alone (it
exits before any call), so that a loaded machine's slow imports do not hide
what the network part costs. `--source DIR` runs
the code of another checkout of Neo (with this one's environment), to
compare before and after a change:

    uv run python -m bench.offline_error [--runs 3] [--source /path/to/old/checkout]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = "import sys; from bot.cli.main import main; sys.exit(main())"


@dataclass(frozen=True, slots=True)
class Outcome:
    seconds: float
    status: int
    retries: int
    last: str


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_once(source: Path, env: dict[str, str], *, offline: bool) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="neo-bench-offline-") as work:
        argv = [sys.executable, "-c", RUN, "run", "--repo", work, "say hi"]
        if offline:
            argv = ["unshare", "--net", "--", *argv]
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "NEO_"))}
        environment = {
            **clean,
            "PYTHONPATH": str(source),
            "NEO_HOME": str(Path(work) / "home"),
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            **env,
        }
        started = time.perf_counter()
        done = subprocess.run(
            argv, cwd=source, env=environment, capture_output=True, text=True, timeout=900
        )
        seconds = time.perf_counter() - started
    lines = (done.stdout + done.stderr).strip().splitlines()
    errors = [line for line in lines if "error" in line] or lines[-1:]
    retries = sum("retry" in line.lower() for line in lines)
    return Outcome(seconds, done.returncode, retries, errors[-1] if errors else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--source", type=Path, default=ROOT, help="a checkout of Neo to run")
    args = parser.parse_args()
    cases: list[tuple[str, dict[str, str], bool]] = [
        ("refused", {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{closed_port()}"}, False),
        ("bad URL", {"ANTHROPIC_BASE_URL": "http://[::1"}, False),
    ]
    if os.geteuid() == 0 and shutil.which("unshare"):
        cases.insert(0, ("offline", {}, True))
    else:
        print("offline: skipped (needs root and unshare)")
    print(f"neo run from {args.source}, {args.runs} runs each")
    medians: dict[str, float] = {}
    for name, env, offline in cases:
        outcomes = [run_once(args.source, env, offline=offline) for _ in range(args.runs)]
        medians[name] = statistics.median(o.seconds for o in outcomes)
        last = outcomes[-1]
        print(
            f"{name:8} {medians[name]:6.1f} s  exit {last.status}  {last.retries} retry lines"
            f"  {last.last}"
        )
    # The bad URL is refused before any call: its time is Neo's start-up.
    start = medians["bad URL"]
    for name in ("offline", "refused"):
        if name in medians:
            print(f"{name}: {medians[name] - start:.1f} s after start-up ({start:.1f} s)")


if __name__ == "__main__":
    main()
