"""The task set loads, and a malformed task folder is refused in one line naming it."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.quality.taskset import LANGUAGES, TASKS_DIR, TaskError, load_task, load_tasks, select

SAMPLE = "py-dotenv-quotes"


def test_the_set_is_large_enough_and_spans_three_languages() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 20
    assert {task.language for task in tasks} == set(LANGUAGES)
    for task in tasks:
        provenance = task.spec.provenance
        assert provenance.repository
        assert provenance.issue
        assert provenance.fix_commit
        assert task.spec.license
        assert task.spec.fail_to_pass
    # Checked in whole: the set stays small. Tasks from one release share its
    # bundle, byte for byte, which git stores once.
    stored = {
        hashlib.sha256(path.read_bytes()).digest(): path.stat().st_size
        for task in tasks
        for path in task.folder.iterdir()
        if path.is_file()
    }
    assert sum(stored.values()) < 2_000_000


def test_at_least_twenty_tasks_are_real_projects_fixes_in_three_languages() -> None:
    real = [task for task in load_tasks() if task.kind == "upstream"]
    assert len(real) >= 20
    assert {task.language for task in real} == set(LANGUAGES)


def test_every_upstream_task_carries_its_license() -> None:
    # Its code is not Neo's: the license's text travels with it, in the
    # folder and in the repository the agent works on.
    for task in load_tasks():
        if task.kind != "upstream":
            continue
        assert (task.folder / "LICENSE").stat().st_size > 0
        heads = subprocess.run(
            ["git", "bundle", "list-heads", str(task.bundle)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert heads[1:] == ["refs/heads/main"], task.id
        assert heads[0] == task.spec.provenance.base_commit, task.id


def test_a_task_reads_its_issue_and_patches() -> None:
    task = load_task(TASKS_DIR / SAMPLE)
    assert task.title.startswith("A '#' inside a quoted value")
    assert "PASSWORD" in task.body
    assert task.fix.startswith(b"diff --git ")
    assert b"tests/" in task.tests
    assert task.runner == "pytest"


def test_select_keeps_the_order_asked_and_refuses_an_unknown_id() -> None:
    tasks = load_tasks()
    chosen = select(tasks, ["js-range-float-steps", SAMPLE, SAMPLE])
    assert [task.id for task in chosen] == ["js-range-float-steps", SAMPLE]
    with pytest.raises(TaskError, match=r"^unknown task 'nope' \(--list shows the tasks\)$"):
        select(tasks, [SAMPLE, "nope"])


def _broken(tmp_path: Path, change: Callable[[Path], None]) -> Path:
    folder = tmp_path / SAMPLE
    shutil.copytree(TASKS_DIR / SAMPLE, folder)
    change(folder)
    return folder


def _edit(name: str, old: str, new: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        path = folder / name
        path.write_text(path.read_text().replace(old, new, 1))

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: (f / "repo.bundle").unlink(), "repo.bundle is missing or empty"),
        (lambda f: (f / "fix.patch").write_bytes(b""), "fix.patch is missing or empty"),
        (lambda f: (f / "task.toml").unlink(), "no task.toml or task.yaml"),
        (lambda f: (f / "task.yaml").write_text("id: x\n"), "both task.toml and task.yaml"),
        (_edit("task.toml", 'id = "', 'id = "other-'), "its id is 'other-"),
        (_edit("task.toml", 'language = "python"', 'language = "cobol"'), "task.toml: language:"),
        (_edit("task.toml", "[provenance]", "[provenance]\nextra = 1"), "provenance.extra:"),
        (_edit("task.toml", "id = ", "id = = "), "task.toml cannot be read:"),
        (_edit("issue.md", "# ", ""), "issue.md must begin with a '# title' line"),
        (
            _edit(
                "task.toml",
                "pass_to_pass = [",
                'pass_to_pass = [\n    "tests/test_parser.py::'
                'test_hash_inside_double_quotes_is_kept",',
            ),
            "is in both fail_to_pass and pass_to_pass",
        ),
    ],
)
def test_a_malformed_folder_is_one_line(
    tmp_path: Path, change: Callable[[Path], None], message: str
) -> None:
    assert load_task(_broken(tmp_path, lambda f: None)).id == SAMPLE  # the copy itself loads
    shutil.rmtree(tmp_path / SAMPLE)
    folder = _broken(tmp_path, change)
    with pytest.raises(TaskError) as raised:
        load_task(folder)
    text = str(raised.value)
    assert text.startswith(f"task {SAMPLE}: ")
    assert message in text
    assert "\n" not in text


def test_a_yaml_task_file_is_read_as_the_toml_one(tmp_path: Path) -> None:
    import tomllib

    import yaml

    folder = _broken(tmp_path, lambda f: None)
    data = tomllib.loads((folder / "task.toml").read_text())
    (folder / "task.toml").unlink()
    (folder / "task.yaml").write_text(yaml.safe_dump(data))
    assert load_task(folder).spec == load_task(TASKS_DIR / SAMPLE).spec


UPSTREAM = """\
[provenance]
kind = "upstream"
repository = "https://github.com/octo/dotenv"
issue = "https://github.com/octo/dotenv/issues/12"
fix_commit = "0123abc"
base_commit = "db1bbf14d8d49e14c4aa973e0b14bb4dd354f154"
source = "pypi:octo-dotenv==1.2.0"
"""


def _upstream(folder: Path) -> None:
    path = folder / "task.toml"
    text = path.read_text()
    path.write_text(text[: text.index("[provenance]")] + UPSTREAM)
    (folder / "LICENSE").write_text("MIT License\n")


def test_an_upstream_task_loads_with_its_provenance(tmp_path: Path) -> None:
    task = load_task(_broken(tmp_path, _upstream))
    provenance = task.spec.provenance
    assert (task.kind, provenance.source, provenance.fix_commit) == (
        "upstream",
        "pypi:octo-dotenv==1.2.0",
        "0123abc",
    )


@pytest.mark.parametrize(
    "source",
    [
        "pypi:python-dotenv==1.0.1",
        "pypi:Foo_Bar==2.0.0rc1",
        "npm:left-pad@1.3.0",
        "npm:@sindresorhus/slugify@2.2.1",
        "go:github.com/gobwas/glob@v0.2.3",
        "go:golang.org/x/text@v0.14.0",
        "debian:python-dotenv=1.0.1-1",
        "debian:node-semver=1:7.5.4+~7.5.0-2",
    ],
)
def test_each_channel_names_its_source(tmp_path: Path, source: str) -> None:
    folder = _broken(tmp_path, _upstream)
    _edit("task.toml", "pypi:octo-dotenv==1.2.0", source)(folder)
    assert load_task(folder).spec.provenance.source == source


def _no_license(folder: Path) -> None:
    _upstream(folder)
    (folder / "LICENSE").unlink()


def _upstream_then(old: str, new: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        _upstream(folder)
        _edit("task.toml", old, new)(folder)

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            _upstream_then('https://github.com/octo/dotenv"', 'octo/dotenv"'),
            "repository 'octo/dotenv' is not an https URL of a repository",
        ),
        (
            _upstream_then('https://github.com/octo/dotenv"', 'https://github.com/octo"'),
            "is not an https URL of a repository",
        ),
        (
            _upstream_then("/issues/12", "/commit/12"),
            "is not a GitHub issue or pull request URL",
        ),
        (_upstream_then('issue = "https:', 'issue = "http:'), "is not an https URL"),
        (_upstream_then('"0123abc"', '"0123"'), "fix_commit '0123' is not a commit id"),
        (_upstream_then('"0123abc"', '"v1.2.1"'), "fix_commit 'v1.2.1' is not a commit id"),
        (_upstream_then('"db1bbf14', '"main'), "base_commit 'main"),
        (_upstream_then("pypi:octo-dotenv==1.2.0", "octo-dotenv"), "source 'octo-dotenv'"),
        (_upstream_then("==1.2.0", ""), "source 'pypi:octo-dotenv' is not one of"),
        (_upstream_then('source = "pypi:octo-dotenv==1.2.0"\n', ""), "source '' is not"),
        (_upstream_then('license = "MIT"', 'license = "the MIT one"'), "not an SPDX expression"),
        (
            _no_license,
            "an upstream task needs its license's text in LICENSE",
        ),
        (
            _edit("task.toml", "[provenance]", '[provenance]\nsource = "pypi:dotenv==1.0"'),
            "source is for upstream tasks, not authored ones",
        ),
    ],
)
def test_an_upstream_task_must_be_traceable(
    tmp_path: Path, change: Callable[[Path], None], message: str
) -> None:
    folder = _broken(tmp_path, change)
    with pytest.raises(TaskError) as raised:
        load_task(folder)
    text = str(raised.value)
    assert text.startswith(f"task {SAMPLE}: ")
    assert message in text
    assert "\n" not in text
