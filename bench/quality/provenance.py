"""Where a task comes from: its `[provenance]` table, and the rules each kind obeys.

An `upstream` task is a real repository's bug and fix, so a reader must be
able to go and see them: the repository and the issue are https URLs, the
fixing commit is a commit id, and `source` names the published package the
base's code was taken from (a release, not a clone: the set is rebuilt from
what the package channels serve), with its version. Its license is an SPDX
expression, and the folder carries the license's text (`LICENSE`).
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["SOURCES", "SPDX", "Provenance"]

# A published package and its version, one shape per channel:
#   pypi:NAME==VERSION      an sdist from PyPI
#   npm:NAME@VERSION        a tarball from the npm registry (NAME may be @scope/name)
#   go:MODULE@VERSION       a module zip from the Go module proxy
#   debian:PACKAGE=VERSION  a Debian source package (upstream tarball and its patches)
SOURCES: dict[str, re.Pattern[str]] = {
    "pypi": re.compile(r"pypi:[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+"),
    "npm": re.compile(r"npm:(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@[0-9A-Za-z.+-]+"),
    "go": re.compile(r"go:[a-z0-9.-]+\.[a-z]+(/[A-Za-z0-9._~-]+)+@v[0-9]+\.[0-9]+\.[0-9]+\S*"),
    "debian": re.compile(r"debian:[a-z0-9][a-z0-9.+-]+=([0-9]+:)?[0-9][A-Za-z0-9.+~-]*"),
}
# https://host/owner/name (GitLab's groups may nest deeper); no `.git`, no trailing slash.
_REPOSITORY = re.compile(r"https://[a-z0-9.-]+\.[a-z]+(/[A-Za-z0-9_.-]+){2,}")
_URL = re.compile(r"https://[a-z0-9.-]+\.[a-z]+/\S*")
_GITHUB_ISSUE = re.compile(
    r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(issues|pull)/[0-9]+"
)
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
_FULL_COMMIT = re.compile(r"[0-9a-f]{40}")
# An SPDX license expression: ids (LicenseRef-... too) joined by AND, OR, WITH.
_SPDX_ID = r"(LicenseRef-)?[A-Za-z0-9][A-Za-z0-9.+-]*"
SPDX = re.compile(rf"\(?{_SPDX_ID}\)?( (AND|OR|WITH) \(?{_SPDX_ID}\)?)*")


class Provenance(BaseModel):
    """Where the task comes from.

    `authored`: written for this set (its code is Neo's, under Neo's license);
    `base_commit` is the bundle's commit.
    `upstream`: a real repository's bug: `repository` and `issue` are its
    URLs, `fix_commit` the upstream commit that fixed it, `source` where the
    base's code was taken from (see SOURCES), `base_commit` the bundle's
    commit (a snapshot of that release).
    `history`: built by `--from-history` from a merged pull request;
    `base_commit` is the repository's commit the snapshot was taken from.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["authored", "upstream", "history"]
    repository: str = Field(min_length=1)
    issue: str = Field(min_length=1)
    fix_commit: str = Field(min_length=1)
    base_commit: str = Field(min_length=1)
    source: str = ""
    note: str = ""

    @model_validator(mode="after")
    def _upstream_is_traceable(self) -> Self:
        if self.kind != "upstream":
            if self.source:
                raise ValueError(f"source is for upstream tasks, not {self.kind} ones")
            return self
        _must(_REPOSITORY, self.repository, "repository", "an https URL of a repository")
        _must(_URL, self.issue, "issue", "an https URL")
        if self.issue.startswith("https://github.com/"):
            _must(_GITHUB_ISSUE, self.issue, "issue", "a GitHub issue or pull request URL")
        _must(_COMMIT, self.fix_commit, "fix_commit", "a commit id (7 to 40 hex digits)")
        _must(_FULL_COMMIT, self.base_commit, "base_commit", "the bundle's commit id (40 hex)")
        if not any(pattern.fullmatch(self.source) for pattern in SOURCES.values()):
            shapes = "pypi:NAME==VERSION, npm:NAME@VERSION, go:MODULE@VERSION, debian:PKG=VERSION"
            raise ValueError(f"source {self.source!r} is not one of {shapes}")
        return self


def _must(pattern: re.Pattern[str], value: str, name: str, what: str) -> None:
    if not pattern.fullmatch(value):
        raise ValueError(f"{name} {value!r} is not {what}")
