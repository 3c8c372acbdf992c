"""The task set loads, and a malformed task folder is refused in one line naming it."""

from __future__ import annotations

import shutil
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
    # Checked in whole: the set stays small.
    assert sum(task.size for task in tasks) < 2_000_000


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
