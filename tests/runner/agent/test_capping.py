"""The head-and-tail cap with its size marker."""

from __future__ import annotations

import pytest

from runner.agent.capping import cap_text


def test_text_within_the_limit_is_unchanged() -> None:
    text = "short\n" * 10
    assert cap_text(text, 1024) is text


def test_long_text_keeps_whole_lines_at_both_ends() -> None:
    text = "".join(f"{i:04d}\n" for i in range(2000))  # 10,000 bytes

    capped = cap_text(text, 1000)

    assert "[... output truncated: 10,000 bytes in 2,000 lines in total;" in capped
    head, tail = capped.split("\n\n[...", 1)
    assert head.startswith("0000\n")
    assert head.endswith("\n") or head.split("\n")[-1] in {f"{i:04d}" for i in range(2000)}
    assert tail.endswith("1999\n")
    assert len(capped.encode()) < 1000 + 120


def test_multibyte_text_is_never_cut_inside_a_character() -> None:
    text = "é" * 5000  # 10,000 bytes, no newline

    capped = cap_text(text, 1001)

    assert "10,000 bytes in 1 lines" in capped
    assert capped.replace("é", "").strip().startswith("[... output truncated")


def test_an_excerpt_reports_the_full_size_even_when_short() -> None:
    capped = cap_text("head\ntail\n", 1024, total_bytes=5_000_000, total_lines=70_000)

    assert "5,000,000 bytes in 70,000 lines" in capped
    assert capped.startswith("head")
    assert capped.endswith("tail\n")


@pytest.mark.parametrize(
    ("text", "total_bytes", "total_lines"),
    [
        pytest.param("hello\nexit code: 0", 6, 1, id="output-and-footer"),
        pytest.param("exit code: 0", 0, 0, id="footer-only"),
        pytest.param("é\nexit code: 0", 2, 1, id="multibyte"),
        pytest.param("x" * 20_000 + "\nexit code: 0", 20_000, 1, id="within-the-limit"),
    ],
)
def test_text_that_holds_all_of_its_total_is_unchanged(
    text: str, total_bytes: int, total_lines: int
) -> None:
    assert cap_text(text, 32 * 1024, total_bytes=total_bytes, total_lines=total_lines) is text
