"""What a run whose model writes all it may is billed, against its `--max-cost`.

The scenario of tests/hostile/test_budgets.py, for several limits: `neo run`
(a real process, the real anthropic SDK) against the fake Messages API,
whose model delegates to two subagents, writes a file a turn, overflows its
window once (so the conversation is summarised) and, once a limit stops the
run, is asked for its last word. The subagents, the summary and the last
word write every output token they are allowed; each call is billed at
claude-sonnet-4-6's published price, its prompt counted at four characters
a token. This prints, per limit, what the calls were billed in all and by
kind, and the cost the run reported.

Issue 23's "before" is this script run on the code before the spend ledger
(ed3f61b^), where the summary and the last word were never checked and the
subagents checked only their own share. Measured (billed against the limit):

    limit   before   after
    $0.50   $1.48    $0.38
    $1.00   $1.48    $0.88
    $1.20   $1.48    $1.15
    $2.00   $2.53    $1.94

After, each run ends with its last word written; what is left unspent is
what the next call's worst case and the last word's could not share.

    uv run python -m bench.run_limit [--limits 0.50,1.00,1.20,2.00]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from tests.bot.cli.console import console_env, last_json, neo
from tests.fakes import FakeAnthropicAPI
from tests.hostile.test_budgets import SONNET, WritesAllItMay, git_tree


def billed(limit: str) -> tuple[dict[str, tuple[int, float]], float | None, str]:
    """By kind of call, how many and what they were billed; the run's own
    cost; and how it ended."""
    model = WritesAllItMay()
    with FakeAnthropicAPI() as fake, tempfile.TemporaryDirectory() as scratch:
        fake.script(*([model] * 400))
        done = neo(
            console_env(Path(scratch) / "home", fake.env),
            "run",
            "--model",
            SONNET,
            "--max-cost",
            limit,
            "--repo",
            str(git_tree(Path(scratch) / "tree")),
            "--output-format",
            "json",
            "write files",
            timeout=900,
        )
    try:
        result = last_json(done)
    except (ValueError, IndexError):
        raise SystemExit(f"neo run gave no result: {done.stderr.strip()[-500:]}") from None
    kinds: dict[str, tuple[int, float]] = defaultdict(lambda: (0, 0.0))
    for kind, cost in model.billed:
        calls, total = kinds[kind]
        kinds[kind] = (calls + 1, total + cost)
    error = result.get("error") or {}
    return dict(kinds), result.get("cost_usd"), str(error.get("type", result.get("stop_reason")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limits", default="0.50,1.00,1.20,2.00")
    args = parser.parse_args()
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(
        f"code {revision or '?'}; {SONNET}; every summary, subagent and last word written in full"
    )
    print(f"{'limit':>7} {'billed':>8} {'over':>7} {'reported':>9}  ended     calls by kind")
    for limit in args.limits.split(","):
        kinds, reported, ended = billed(limit)
        total = sum(cost for _, cost in kinds.values())
        over = total - float(limit)
        shown = "-" if reported is None else f"${reported:.2f}"
        by_kind = ", ".join(
            f"{kind} {calls} (${cost:.2f})" for kind, (calls, cost) in sorted(kinds.items())
        )
        print(
            f"${float(limit):>6.2f} ${total:>7.2f} {over:>+7.2f} {shown:>9}  {ended:<9} {by_kind}"
        )


if __name__ == "__main__":
    main()
