"""A discarded directory is gone from its place at once and deleted in the background."""

from __future__ import annotations

from pathlib import Path

from runner.trash import discard


def _tree(root: Path, files: int = 50) -> Path:
    for n in range(files):
        path = root / f"d{n % 5}" / f"f{n}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(n))
    return root


def test_a_discarded_tree_leaves_its_place_at_once_and_is_deleted(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "workspaces" / "job-1")
    trash = tmp_path / "trash"

    thread = discard(tree, trash)

    # Its name is free before the deletion ends: the next job may take it.
    assert not tree.exists()
    tree.mkdir()
    assert thread is not None
    thread.join(60)
    assert list(trash.iterdir()) == []
    assert tree.is_dir()  # the new one is untouched


def test_what_a_dead_process_left_in_the_trash_goes_with_the_next_discard(
    tmp_path: Path,
) -> None:
    trash = tmp_path / "trash"
    _tree(trash / "job-0.0badc0de")
    (trash / "a-file").write_text("left")

    thread = discard(tmp_path / "workspaces" / "never-made", trash)

    assert thread is not None
    thread.join(60)
    assert list(trash.iterdir()) == []


def test_nothing_to_discard_starts_nothing(tmp_path: Path) -> None:
    assert discard(tmp_path / "missing", tmp_path / "trash") is None
    assert not (tmp_path / "trash").exists()


def test_a_symlink_is_discarded_not_followed(tmp_path: Path) -> None:
    kept = _tree(tmp_path / "kept")
    link = tmp_path / "workspaces" / "job-1"
    link.parent.mkdir()
    link.symlink_to(kept, target_is_directory=True)

    thread = discard(link, tmp_path / "trash")

    assert thread is not None
    thread.join(60)
    assert not link.is_symlink()
    assert not link.exists()
    assert len(list(kept.rglob("*.txt"))) == 50
