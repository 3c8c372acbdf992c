"""Tail-capping of CI logs: exact tails, a buffer that stays bounded, ZIP members read
as streams."""

from __future__ import annotations

import io
import zipfile

import pytest

from bot.github.downloads import TailBuffer, tail_of, zip_tails


def test_the_tail_is_exactly_the_last_bytes_whatever_the_chunking() -> None:
    data = bytes(range(256)) * 400
    for size in (1, 7, 100, 999, 1000, 1001, 50_000):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        buffer = TailBuffer(1000)
        for chunk in chunks:
            buffer.feed(chunk)
            # Bounded: never more than twice the cap plus one chunk.
            assert buffer.held <= 2000 + size
        assert buffer.tail() == data[-1000:]
        assert buffer.total == len(data)
        assert buffer.cut


def test_a_short_log_is_kept_whole_and_not_cut() -> None:
    tail = tail_of([b"ok\n", b"done\n"], "short", cap=1000)
    assert (tail.text, tail.total_bytes, tail.cut) == ("ok\ndone\n", 8, False)


def test_a_cut_inside_a_character_replaces_it_and_never_fails() -> None:
    tail = tail_of(["é".encode() * 10], "utf8", cap=3)
    assert tail.text == "\ufffdé"


def test_a_cap_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least one byte"):
        TailBuffer(0)


def test_zip_members_come_back_as_tails_the_last_ones_by_name() -> None:
    spool = io.BytesIO()
    with zipfile.ZipFile(spool, "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(5):
            archive.writestr(f"job/{n}_step.txt", f"step {n}\n".encode() * 1000)
        archive.writestr("job/", b"")
    spool.seek(0)
    tails = zip_tails(spool, cap=7, members=2)
    assert [(t.name, t.text, t.total_bytes) for t in tails] == [
        ("job/3_step.txt", "step 3\n", 7000),
        ("job/4_step.txt", "step 4\n", 7000),
    ]


def test_a_file_that_is_no_zip_is_badzipfile() -> None:
    with pytest.raises(zipfile.BadZipFile):
        zip_tails(io.BytesIO(b"plain text, not an archive"))
