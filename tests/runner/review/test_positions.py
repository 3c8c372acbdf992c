"""Where a unified diff takes review comments, and how comments are placed on it (pure)."""

from __future__ import annotations

import pytest

from runner.review import InlineDraft, Position, changed_files, commentable, fold, place

DIFF = """\
diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1,4 +1,5 @@
 import os
-import sys
+import sys  # noqa
+import re
\x20
 def main():
@@ -10,2 +11,2 @@ def main():
     x = 1
-    return x
+    return x + 1
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-one
--- two
diff --git a/new.md b/new.md
new file mode 100644
--- /dev/null
+++ b/new.md
@@ -0,0 +1,2 @@
+# New
++++ not a header
\\ No newline at end of file
"""


@pytest.mark.parametrize(
    ("position", "expected"),
    [
        (Position("app.py", "RIGHT", 1), True),  # context: both sides
        (Position("app.py", "LEFT", 1), True),
        (Position("app.py", "LEFT", 2), True),  # removed
        (Position("app.py", "RIGHT", 2), True),  # added
        (Position("app.py", "RIGHT", 3), True),
        (Position("app.py", "RIGHT", 4), True),  # the blank context line
        (Position("app.py", "RIGHT", 5), True),
        (Position("app.py", "RIGHT", 6), False),  # between the hunks
        (Position("app.py", "RIGHT", 10), False),
        (Position("app.py", "RIGHT", 11), True),  # the second hunk starts at +11
        (Position("app.py", "LEFT", 11), True),
        (Position("app.py", "RIGHT", 12), True),
        (Position("app.py", "RIGHT", 13), False),
        (Position("gone.txt", "LEFT", 1), True),  # a deleted file, under its old path
        (Position("gone.txt", "LEFT", 2), True),  # a removed line that looks like a header
        (Position("gone.txt", "RIGHT", 1), False),
        (Position("new.md", "RIGHT", 1), True),
        (Position("new.md", "RIGHT", 2), True),  # an added line that looks like a header
        (Position("new.md", "LEFT", 1), False),
        (Position("other.py", "RIGHT", 1), False),
    ],
)
def test_commentable_positions(position: Position, expected: bool) -> None:
    assert (position in commentable(DIFF)) is expected


def test_an_empty_diff_has_no_positions_and_no_files() -> None:
    assert commentable("") == frozenset()
    assert changed_files("") == ()


def test_changed_files_in_order_a_deleted_one_by_its_old_path() -> None:
    assert changed_files(DIFF) == ("app.py", "gone.txt", "new.md")


@pytest.mark.parametrize(
    ("comment", "inline"),
    [
        (InlineDraft(path="app.py", line=3, body="b"), True),
        (InlineDraft(path="app.py", line=5, start_line=1, body="b"), True),  # a range in a hunk
        (InlineDraft(path="app.py", line=11, start_line=5, body="b"), False),  # spans a gap
        (InlineDraft(path="app.py", line=2, side="LEFT", body="b"), True),
        (InlineDraft(path="app.py", line=7, body="b"), False),
        (InlineDraft(path="README.md", line=1, body="b"), False),
        (InlineDraft(path="app.py", line=2, start_line=4, body="b"), False),  # backwards
    ],
)
def test_place_keeps_inline_only_what_the_diff_holds(comment: InlineDraft, inline: bool) -> None:
    placed, folded = place([comment], commentable(DIFF))
    assert (placed, folded) == (((comment,), ()) if inline else ((), (comment,)))


def test_fold_puts_outside_comments_in_the_summary_with_where_they_were() -> None:
    outside = InlineDraft(path="README.md", line=4, start_line=2, body="Typo here.")
    body = fold("Looks good.", [outside])
    assert body.startswith("Looks good.")
    assert "`README.md:2-4` (not a line of this diff): Typo here." in body
    assert fold("  ", []) == "Review by Neo."


def test_a_range_goes_to_the_api_with_its_start_and_a_single_line_without() -> None:
    ranged = InlineDraft(path="a.py", line=5, start_line=3, body="x").to_json()
    assert ranged == {
        "path": "a.py",
        "line": 5,
        "side": "RIGHT",
        "start_line": 3,
        "start_side": "RIGHT",
        "body": "x",
    }
    assert "start_line" not in InlineDraft(path="a.py", line=5, body="x").to_json()
