"""Making a task folder from a git repository: a base commit and the commit that fixed it.

The change from base to fix is split in two: the test files (the hidden
tests) and the rest (the fix). The bundle holds one commit, a snapshot of the
base's tree (small, and no history for the agent to find the fix in). Which
tests are FAIL_TO_PASS and PASS_TO_PASS is not guessed: the hidden tests are
run on the base and on the base with the fix, in the sandbox, and a test
belongs to FAIL_TO_PASS when it passes only with the fix, to PASS_TO_PASS
when it passes on both (SWE-bench's rule). A change no test catches makes no
task.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.quality.gitops import IDENTITY, apply_patch, checkout_bundle, git
from bench.quality.taskset import Language, Provenance, Task, TaskFile, load_task
from bench.quality.testrun import TestRun, run_hidden_tests_side_by_side

__all__ = [
    "AuthoringError",
    "Draft",
    "base_and_fixed",
    "build_task",
    "detect_language",
    "is_test_path",
    "render_toml",
]

_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testdata|spec)/"
    r"|(^|/)test_[^/]*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]s$|(^|/)conftest\.py$"
)


class AuthoringError(Exception):
    """The commits make no sound task; one line."""


def is_test_path(path: str) -> bool:
    """Whether `path` is a test file: the hidden half of a change."""
    return _TEST_PATH.search(path) is not None


def detect_language(files: Sequence[str]) -> Language:
    """The task's language from its base tree's files; AuthoringError when none fits."""
    names = {os.path.basename(path) for path in files}
    if "go.mod" in names:
        return "go"
    if "package.json" in names:
        return "javascript"
    if names & {"pyproject.toml", "setup.py", "setup.cfg"} or any(
        path.endswith(".py") for path in files
    ):
        return "python"
    raise AuthoringError("no go.mod, package.json or Python files: no test runner for this tree")


@dataclass(frozen=True, slots=True)
class Draft:
    """What a task says about itself before its tests are run."""

    id: str
    title: str
    body: str
    license: str
    provenance: Provenance
    language: Language | None = None  # None: detected from the base tree
    test_timeout: float = 120.0
    # The upstream license's text, written to the folder's LICENSE (an
    # upstream task must carry it: its code is not Neo's).
    license_text: str | None = None


async def build_task(
    repo: Path, base: str, fix: str, draft: Draft, *, dest: Path, image: str | None
) -> Task:
    """Write task `draft.id` into `dest/<id>` from `repo`'s commits `base` and `fix`.

    Raises AuthoringError when the change has no test half or no fix half, or
    when no hidden test fails on the base and passes with the fix;
    BenchGitError when git fails; SandboxError when the sandbox does.
    """
    changed = await git("diff", "--name-only", "-z", "--no-renames", base, fix, "--", cwd=repo)
    paths = [os.fsdecode(path) for path in changed.split(b"\0") if path]
    tests = [path for path in paths if is_test_path(path)]
    code = [path for path in paths if not is_test_path(path)]
    if not tests:
        raise AuthoringError("the change touches no test file")
    if not code:
        raise AuthoringError("the change touches nothing but tests")
    tests_patch = await _diff(repo, base, fix, tests)
    fix_patch = await _diff(repo, base, fix, code)
    listed = await git("ls-tree", "-r", "-z", "--name-only", base, cwd=repo)
    files = [os.fsdecode(path) for path in listed.split(b"\0") if path]
    language = draft.language or detect_language(files)

    staging = await asyncio.to_thread(_staging, dest, draft.id)
    try:
        snapshot = await _bundle(repo, base, staging / "repo.bundle")
        provenance = draft.provenance
        if provenance.kind != "history":  # its base_commit is the bundle's commit
            provenance = provenance.model_copy(update={"base_commit": snapshot})
        issue = f"# {draft.title}\n\n{draft.body.strip()}\n"
        await asyncio.to_thread(_write, staging, issue, fix_patch, tests_patch, draft.license_text)
        probe = Task(
            TaskFile.model_construct(
                id=draft.id,
                language=language,
                license=draft.license,
                provenance=provenance,
                fail_to_pass=(),
                pass_to_pass=(),
                test_timeout=draft.test_timeout,
            ),
            staging,
            draft.title,
            draft.body,
        )
        before, after = await _both(probe, image)
        passed = [test for test, outcome in after.outcomes.items() if outcome == "passed"]
        fail_to_pass = sorted(t for t in passed if before.outcomes.get(t) != "passed")
        pass_to_pass = sorted(t for t in passed if before.outcomes.get(t) == "passed")
        if not fail_to_pass:
            raise AuthoringError("no hidden test fails on the base and passes with the fix")
        spec = TaskFile.model_validate(
            {
                "id": draft.id,
                "language": language,
                "license": draft.license,
                "provenance": provenance,
                "fail_to_pass": fail_to_pass,
                "pass_to_pass": pass_to_pass,
                "test_timeout": draft.test_timeout,
            }
        )
        folder = await asyncio.to_thread(_install, staging, draft.id, render_toml(spec))
    finally:
        await asyncio.to_thread(shutil.rmtree, staging, True)
    return load_task(folder)


def _staging(dest: Path, ident: str) -> Path:
    """A new hidden folder in `dest`, where the task is made before it takes its name."""
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{ident}-", dir=dest.resolve()))
    staging.chmod(0o755)  # mkdtemp's 0700 would travel into the repository
    return staging


def _write(staging: Path, issue: str, fix: bytes, tests: bytes, license: str | None) -> None:
    (staging / "issue.md").write_text(issue, encoding="utf-8")
    if license is not None:
        (staging / "LICENSE").write_text(license, encoding="utf-8")
    (staging / "fix.patch").write_bytes(fix)
    (staging / "tests.patch").write_bytes(tests)


def _install(staging: Path, ident: str, toml: str) -> Path:
    """The staged task under its own name, replacing any task of that name."""
    (staging / "task.toml").write_text(toml, encoding="utf-8")
    folder = staging.parent / ident
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    return folder


async def _diff(repo: Path, base: str, fix: str, paths: Sequence[str]) -> bytes:
    return await git(
        "diff",
        "--binary",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        base,
        fix,
        "--",
        *paths,
        cwd=repo,
    )


async def _bundle(repo: Path, base: str, out: Path) -> str:
    """A bundle of one commit, branch `main`, holding `base`'s tree; that commit's id."""
    message = f"Snapshot of the base commit {base}\n"
    tree = (await git("rev-parse", f"{base}^{{tree}}", cwd=repo)).decode().strip()
    commit = (
        (await git("commit-tree", tree, cwd=repo, input=message.encode(), env=IDENTITY))
        .decode()
        .strip()
    )
    with tempfile.TemporaryDirectory(prefix="neo-bundle-") as scratch:
        bare = Path(scratch) / "snapshot.git"
        await git("init", "--quiet", "--bare", str(bare), cwd=Path(scratch))
        await git("push", "--quiet", str(bare), f"{commit}:refs/heads/main", cwd=repo)
        await git("bundle", "create", "--quiet", str(out), "main", cwd=bare)
    return commit


async def _both(task: Task, image: str | None) -> tuple[TestRun, TestRun]:
    """The hidden tests on the base, and on the base with the fix."""
    with tempfile.TemporaryDirectory(prefix=f"neo-author-{task.id}-") as scratch:
        return await base_and_fixed(task, Path(scratch), image=image)


async def base_and_fixed(
    task: Task, scratch: Path, *, image: str | None
) -> tuple[TestRun, TestRun]:
    """The hidden tests on a checkout of the base and on one with the fix, both
    under `scratch` (empty), in one sandbox: one start and stop instead of two.

    Raises BenchGitError when the fix or the tests do not apply, SandboxError
    or ConfigError when the sandbox cannot start.
    """
    trees = scratch / "base", scratch / "fixed"
    base, _ = await asyncio.gather(*(checkout_bundle(task.bundle, tree) for tree in trees))
    await apply_patch(trees[1], task.fix, what=f"task {task.id}: fix.patch")
    before, after = await run_hidden_tests_side_by_side(
        task, scratch, [(tree, base) for tree in trees], image=image, name=f"bench-{task.id}"
    )
    return before, after


def render_toml(spec: TaskFile) -> str:
    """task.toml for `spec`: its strings as TOML basic strings (JSON's escapes are TOML's)."""

    def value(item: object) -> str:
        if isinstance(item, str):
            return json.dumps(item, ensure_ascii=False)
        if isinstance(item, tuple | list):
            if not item:
                return "[]"
            return "[\n" + "".join(f"    {value(x)},\n" for x in item) + "]"
        return repr(item)

    lines = [
        f"id = {value(spec.id)}",
        f"language = {value(spec.language)}",
        f"license = {value(spec.license)}",
        f"test_timeout = {spec.test_timeout:g}",
        f"fail_to_pass = {value(spec.fail_to_pass)}",
        f"pass_to_pass = {value(spec.pass_to_pass)}",
        "",
        "[provenance]",
    ]
    for name, item in spec.provenance.model_dump().items():
        if item != "":
            lines.append(f"{name} = {value(item)}")
    return "\n".join(lines) + "\n"
