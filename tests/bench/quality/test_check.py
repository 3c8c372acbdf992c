"""`--check`: every task of the set is sound, and a task whose fix does not fix is caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.quality.check import check_task
from bench.quality.cli import main
from bench.quality.taskset import TASKS_DIR, load_task, load_tasks

SOUND = "py-paginate-exact-pages"


def test_every_task_of_the_set_is_sound_and_the_check_exits_0(
    bench_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--check", "--image", bench_image, "--format", "json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    ids = [task.id for task in load_tasks()]
    assert [(t["id"], t["sound"], t["problem"]) for t in report["tasks"]] == [
        (ident, True, None) for ident in ids
    ]
    assert report["total"]["sound"] == len(ids)


async def test_a_fix_that_does_not_fix_is_unsound(tmp_path: Path, bench_image: str) -> None:
    # The fix of another task: it applies nowhere here.
    folder = tmp_path / SOUND
    shutil.copytree(TASKS_DIR / SOUND, folder)
    shutil.copy(TASKS_DIR / "py-slugify-accents" / "fix.patch", folder / "fix.patch")
    checked = await check_task(load_task(folder), image=bench_image)
    assert not checked.sound
    assert checked.problem is not None
    assert checked.problem.startswith("task py-paginate-exact-pages: fix.patch does not apply")


async def test_a_test_that_passes_without_the_fix_is_unsound(
    tmp_path: Path, bench_image: str
) -> None:
    folder = tmp_path / SOUND
    shutil.copytree(TASKS_DIR / SOUND, folder)
    toml = folder / "task.toml"
    text = toml.read_text()
    # A PASS_TO_PASS test listed as FAIL_TO_PASS: it passes on the base.
    text = text.replace('    "tests/test_core.py::test_first_page",\n', "")
    text = text.replace(
        "fail_to_pass = [\n", 'fail_to_pass = [\n    "tests/test_core.py::test_first_page",\n'
    )
    toml.write_text(text)
    checked = await check_task(load_task(folder), image=bench_image)
    assert (checked.sound, checked.problem) == (
        False,
        "FAIL_TO_PASS test passes without the fix: tests/test_core.py::test_first_page",
    )
