"""A review's first message (`review_message`): the diff and its files, bounded whatever
the pull request holds, with one line saying what was left out."""

from __future__ import annotations

from runner.review.prompt import MAX_DIFF_CHARS, MAX_FILES_LISTED, review_message


def many_files(count: int) -> str:
    return "".join(
        f"diff --git a/bomb/f{i}.txt b/bomb/f{i}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/bomb/f{i}.txt\n@@ -0,0 +1 @@\n+x\n"
        for i in range(count)
    )


def test_a_diff_of_twenty_thousand_files_makes_a_bounded_message_saying_what_it_left_out() -> None:
    diff = many_files(20_000)

    message = review_message(diff)

    assert len(message) < MAX_DIFF_CHARS + MAX_FILES_LISTED * 40 + 3_000
    assert message.count("\n- `bomb/") == MAX_FILES_LISTED
    assert (
        f"[{20_000 - MAX_FILES_LISTED:,} more files in the diff shown are not listed:"
        " `git diff --stat` against the base in the tree lists them all]"
    ) in message
    assert f"only the first {MAX_DIFF_CHARS:,} are shown" in message


def test_a_diff_held_in_part_is_said_to_be_as_long_as_it_was() -> None:
    diff = many_files(10)

    message = review_message(diff, total_chars=9_000_000)

    assert "[the diff is 9,000,000 characters; only the first 200,000 are shown" in message
    assert message.count("\n- `bomb/") == 10
