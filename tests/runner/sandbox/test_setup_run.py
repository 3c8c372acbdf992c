"""What the report keeps of a failed setup command's output."""

from __future__ import annotations

from runner.sandbox.setup_run import TAIL_LINES, output_tail


def test_the_tail_is_the_last_lines_without_terminal_codes_or_overwritten_progress() -> None:
    output = b"".join(f"line {n}\n".encode() for n in range(50))
    output += b"\x1b[31merror:\x1b[0m no matching distribution\r\n"
    output += b"Downloading 10%\rDownloading 100%\r\n\n   \n"
    tail = output_tail(output).splitlines()
    assert len(tail) == TAIL_LINES
    assert tail[-2:] == ["error: no matching distribution", "Downloading 100%"]
    assert tail[0] == "line 32"


def test_a_long_line_is_cut_and_bad_bytes_are_replaced() -> None:
    tail = output_tail(b"x" * 5000 + b"\n\xff\xfe end")
    first, last = tail.splitlines()
    assert first == "x" * 300
    assert last == "\ufffd\ufffd end"
    assert output_tail(b"") == ""
