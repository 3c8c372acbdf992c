from __future__ import annotations

import pytest

from runner.sandbox.output_buffer import OutputBuffer


def test_short_output_is_kept_whole() -> None:
    buffer = OutputBuffer(limit=64)
    buffer.append(b"one\n")
    buffer.append(b"two")

    assert buffer.getvalue() == b"one\ntwo"
    assert not buffer.dropped
    assert buffer.total_bytes == 7
    assert buffer.total_lines == 2


@pytest.mark.parametrize("chunk", [1, 7, 100, 10_000])
def test_long_output_keeps_head_and_tail_and_counts_everything(chunk: int) -> None:
    data = b"".join(b"line %05d\n" % i for i in range(1000))  # 11,000 bytes
    buffer = OutputBuffer(limit=200)

    for start in range(0, len(data), chunk):
        buffer.append(data[start : start + chunk])

    assert buffer.dropped
    assert buffer.getvalue() == data[:100] + data[-100:]
    assert buffer.total_bytes == len(data)
    assert buffer.total_lines == 1000
