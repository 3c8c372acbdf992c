"""The suite's longest files run first (tests/conftest.py), and the list names real files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from tests.conftest import LONGEST_FIRST, pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Item:
    nodeid: str


def test_every_longest_file_exists_once() -> None:
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]

    assert missing == [], "renamed or removed: update LONGEST_FIRST in tests/conftest.py"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_the_longest_files_go_first_in_their_order_and_each_file_keeps_its_own() -> None:
    first, second = LONGEST_FIRST[:2]
    items = [
        Item("tests/a/test_x.py::test_1"),
        Item(f"{second}::test_b1"),
        Item("tests/a/test_x.py::test_2[row]"),
        Item(f"{first}::test_a1"),
        Item(f"{second}::test_b2"),
        Item("tests/test_y.py::test_3"),
    ]

    pytest_collection_modifyitems(cast(Any, items))

    assert [item.nodeid for item in items] == [
        f"{first}::test_a1",
        f"{second}::test_b1",
        f"{second}::test_b2",
        "tests/a/test_x.py::test_1",
        "tests/a/test_x.py::test_2[row]",
        "tests/test_y.py::test_3",
    ]


def test_xdist_hands_files_out_in_the_collections_order(pytestconfig: pytest.Config) -> None:
    # What xdist's loadfile scheduler reads: when True it sorts files by
    # their number of tests, and the one-test multihost file ran last, alone.
    assert pytestconfig.option.loadscopereorder is False
