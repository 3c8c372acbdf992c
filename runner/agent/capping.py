"""Caps oversized tool output before it enters the transcript."""

from __future__ import annotations

from runner.tools.base import DEFAULT_OUTPUT_CAP

DEFAULT_CAP_BYTES = DEFAULT_OUTPUT_CAP


def cap_text(
    text: str,
    limit: int = DEFAULT_CAP_BYTES,
    *,
    total_bytes: int | None = None,
    total_lines: int | None = None,
) -> str:
    """Keep the head and tail of `text` within `limit` UTF-8 bytes.

    What is cut is replaced by a marker that gives the output's size in bytes
    and lines, so the model knows what it did not see and can ask for a
    narrower slice. `total_bytes` and `total_lines`, when given, are that size:
    the tool's own output, which `text` may shorten or follow with lines of
    its own (bash's exit code). Text within the limit is returned unchanged,
    unless `total_bytes` is more than it holds: it is already an excerpt.
    """
    # Cheap exits first: most outputs are small, and a str of n characters
    # encodes to at least n bytes.
    if len(text) <= limit // 4 and (total_bytes is None or total_bytes <= len(text)):
        return text
    data = text.encode("utf-8", "surrogatepass")
    excerpt = total_bytes is not None and total_bytes > len(data)
    if len(data) <= limit and not excerpt:
        return text
    limit = min(limit, len(data))
    size = total_bytes if total_bytes is not None else len(data)
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if total_lines is not None:
        lines = total_lines
    marker = (
        f"\n\n[... output truncated: {size:,} bytes in {lines:,} lines in total; "
        f"showing the first and last {limit // 2:,} bytes ...]\n\n"
    )
    half = limit // 2
    head = _cut_at_line(data[:half], keep="head")
    tail = _cut_at_line(data[len(data) - half :], keep="tail")
    return head.decode("utf-8", "ignore") + marker + tail.decode("utf-8", "ignore")


def _cut_at_line(chunk: bytes, *, keep: str) -> bytes:
    """Trim `chunk` to a line boundary when one is near, so lines stay whole."""
    slack = len(chunk) // 8
    if keep == "head":
        newline = chunk.rfind(b"\n")
        return chunk[: newline + 1] if newline >= len(chunk) - slack else chunk
    newline = chunk.find(b"\n")
    return chunk[newline + 1 :] if 0 <= newline < slack else chunk
