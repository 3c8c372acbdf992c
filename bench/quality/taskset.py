"""The task set: one folder per task, read and validated into `Task` values.

A task folder holds:

    task.toml (or task.yaml)  id, language, license, provenance, the hidden tests' ids
    repo.bundle               the repository at its base commit, as branch `main`
    issue.md                  the issue: a `# title` line, then the body
    fix.patch                 the real fix (non-test files), applied by `--check` and the oracle
    tests.patch               the hidden tests, applied after the run
    LICENSE                   an upstream task's license text (its code is not Neo's)

A malformed folder is refused with one line naming the folder and what is
wrong (`TaskError`); nothing is run until the whole selection has loaded.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench.quality.provenance import SPDX, Provenance

__all__ = [
    "LANGUAGES",
    "RUNNERS",
    "TASKS_DIR",
    "Language",
    "Provenance",
    "Task",
    "TaskError",
    "TaskFile",
    "load_task",
    "load_tasks",
    "select",
]

TASKS_DIR = Path(__file__).resolve().parent / "tasks"

Language = Literal["python", "go", "javascript"]
Runner = Literal["pytest", "go", "node"]
LANGUAGES: tuple[str, ...] = ("python", "go", "javascript")
# The test runner each language's tasks use: how the hidden tests are run and read.
RUNNERS: dict[str, Runner] = {"python": "pytest", "go": "go", "javascript": "node"}

_ID = r"[a-z0-9][a-z0-9._-]{0,63}"
_FILES = ("repo.bundle", "issue.md", "fix.patch", "tests.patch")


class TaskError(Exception):
    """A task folder or a selection that cannot be used; one line."""


class TaskFile(BaseModel):
    """What task.toml / task.yaml says."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=f"^{_ID}$")
    language: Language
    license: str = Field(min_length=1)
    provenance: Provenance
    fail_to_pass: tuple[str, ...] = Field(min_length=1)
    pass_to_pass: tuple[str, ...] = ()
    # Seconds one run of the hidden tests may take.
    test_timeout: float = Field(default=120.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _upstream_license_is_spdx(self) -> Self:
        if self.provenance.kind == "upstream" and not SPDX.fullmatch(self.license):
            raise ValueError(f"license {self.license!r} is not an SPDX expression (e.g. MIT)")
        return self


@dataclass(frozen=True, slots=True)
class Task:
    """A task as loaded: its file's fields, its folder, and its issue split into title and body."""

    spec: TaskFile
    folder: Path
    title: str
    body: str

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def language(self) -> str:
        return self.spec.language

    @property
    def kind(self) -> str:
        """Where it comes from: authored, upstream or history."""
        return self.spec.provenance.kind

    @property
    def runner(self) -> Runner:
        return RUNNERS[self.spec.language]

    @property
    def bundle(self) -> Path:
        return self.folder / "repo.bundle"

    @property
    def fix(self) -> bytes:
        return (self.folder / "fix.patch").read_bytes()

    @property
    def tests(self) -> bytes:
        return (self.folder / "tests.patch").read_bytes()

    @property
    def size(self) -> int:
        """Bytes of the task's folder."""
        return sum(path.stat().st_size for path in self.folder.iterdir() if path.is_file())


def load_task(folder: Path) -> Task:
    """The task in `folder`; TaskError when it is malformed."""
    name = folder.name
    if not folder.is_dir():
        raise TaskError(f"task {name}: no such folder {folder}")
    folder = folder.resolve()
    spec = _read_spec(folder)
    if spec.id != name:
        raise TaskError(f"task {name}: its id is {spec.id!r}, not its folder's name")
    for file in _FILES:
        path = folder / file
        if not path.is_file() or path.stat().st_size == 0:
            raise TaskError(f"task {name}: {file} is missing or empty")
    if spec.provenance.kind == "upstream":
        path = folder / "LICENSE"
        if not path.is_file() or path.stat().st_size == 0:
            raise TaskError(f"task {name}: an upstream task needs its license's text in LICENSE")
    overlap = sorted(set(spec.fail_to_pass) & set(spec.pass_to_pass))
    if overlap:
        raise TaskError(f"task {name}: {overlap[0]!r} is in both fail_to_pass and pass_to_pass")
    title, body = _issue(folder / "issue.md", name)
    return Task(spec, folder, title, body)


def load_tasks(root: Path = TASKS_DIR) -> list[Task]:
    """Every task under `root`, by id."""
    if not root.is_dir():
        raise TaskError(f"no task folder at {root}")
    folders = sorted(path for path in root.iterdir() if path.is_dir())
    return [load_task(folder) for folder in folders]


def select(tasks: Sequence[Task], ids: Iterable[str]) -> list[Task]:
    """The tasks named by `ids`, in that order; TaskError naming the first unknown id."""
    by_id = {task.id: task for task in tasks}
    chosen: list[Task] = []
    for ident in ids:
        if ident not in by_id:
            raise TaskError(f"unknown task {ident!r} (--list shows the tasks)")
        if by_id[ident] not in chosen:
            chosen.append(by_id[ident])
    return chosen


def _read_spec(folder: Path) -> TaskFile:
    name = folder.name
    found = [folder / file for file in ("task.toml", "task.yaml") if (folder / file).is_file()]
    if len(found) != 1:
        what = "both task.toml and task.yaml" if found else "no task.toml or task.yaml"
        raise TaskError(f"task {name}: {what}")
    path = found[0]
    data: Any
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise TaskError(f"task {name}: {path.name} cannot be read: {detail}") from None
    try:
        return TaskFile.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        # A validator's own sentence, without pydantic's "Value error, " before it.
        message = first["msg"].removeprefix("Value error, ")
        raise TaskError(f"task {name}: {path.name}: {where}: {message}") from None


def _issue(path: Path, name: str) -> tuple[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"task {name}: issue.md is not UTF-8") from None
    first, _, rest = text.partition("\n")
    title = re.sub(r"^#\s*", "", first).strip()
    if not first.startswith("#") or not title:
        raise TaskError(f"task {name}: issue.md must begin with a '# title' line")
    return title, rest.strip()
