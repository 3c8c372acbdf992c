"""Git on the host: clone, branch, commit, diffstat and push for one job.

Tokens reach one git process at a time through its environment; every tree
is treated as hostile (clean environment, allow-listed config, no blocking
files). docs/architecture.md, "Host git", gives the mirror and spare-tree
strategy and every protection with its reason.

`process.py` runs git, `sanitize.py` makes a tree safe to run it in,
`mirrors.py` keeps the mirrors and spare trees, `trees.py` clones and checks
out, `commits.py` stages, commits and pushes.
"""

from runner.git.commits import (
    GENERATED,
    Author,
    DiffStat,
    FileStat,
    Staged,
    commit_all,
    commit_staged,
    diffstat,
    push,
    stage_all,
)
from runner.git.mirrors import RECENT_COMMITS, STALE_STAGING_SECONDS, MirrorCache
from runner.git.process import LOCAL_TIMEOUT, NETWORK_TIMEOUT, GitError
from runner.git.sanitize import trusting
from runner.git.trees import (
    checkout_branch,
    clone,
    clone_branch,
    fetch_blobs,
    fetch_pull_head,
    fetch_pull_request,
    run_local,
)

__all__ = [
    "GENERATED",
    "LOCAL_TIMEOUT",
    "NETWORK_TIMEOUT",
    "RECENT_COMMITS",
    "STALE_STAGING_SECONDS",
    "Author",
    "DiffStat",
    "FileStat",
    "GitError",
    "MirrorCache",
    "Staged",
    "checkout_branch",
    "clone",
    "clone_branch",
    "commit_all",
    "commit_staged",
    "diffstat",
    "fetch_blobs",
    "fetch_pull_head",
    "fetch_pull_request",
    "push",
    "run_local",
    "stage_all",
    "trusting",
]
