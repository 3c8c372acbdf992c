"""Prepared environments' pure parts: the key, which entries a prune removes, the label's times."""

from __future__ import annotations

import pytest

from runner.sandbox.prepared import (
    Entry,
    _read_setup,
    _setup_label,
    _timestamp,
    environment_key,
    to_remove,
)
from runner.sandbox.requests import Bounds
from runner.sandbox.setup_plan import SetupOutcome, SetupPlan, SetupStep, StepOutcome

GiB = 1024**3
NOW = 1_800_000_000.0
HOUR = 3600.0

PLAN = SetupPlan(
    "auto", (SetupStep("uv pip install -r requirements.txt", "python", ("requirements.txt",)),)
)
FILES = {"requirements.txt": b"calc==1\n", "README.md": b"# not read"}


def key(**changes: object) -> str:
    arguments: dict[str, object] = {
        "repository": "octo/repo",
        "plan": PLAN,
        "files": FILES,
        "base_image": "sha256:base",
    }
    arguments.update(changes)
    return environment_key(**arguments)  # type: ignore[arg-type]


def test_the_key_follows_the_repository_the_files_setup_reads_the_commands_and_the_base() -> None:
    assert key() == key()
    assert len(key()) == 64
    different = {
        key(repository="octo/other"),
        key(base_image="sha256:newer"),
        key(files={**FILES, "requirements.txt": b"calc==2\n"}),
        key(
            plan=SetupPlan(
                "auto",
                (
                    SetupStep(
                        "uv pip install -r requirements.txt -U", "python", ("requirements.txt",)
                    ),
                ),
            )
        ),
        key(
            plan=SetupPlan(
                "explicit",
                (SetupStep("uv pip install -r requirements.txt"),),
                also_reads=("requirements.txt",),
            )
        ),
    }
    assert key() not in different
    assert len(different) == 5
    # A file setup does not read changes nothing.
    assert key(files={**FILES, "README.md": b"# changed"}) == key()


def entry(
    name: str, *, used: float, size: int = GiB, private: bool = False, tagged: bool = True
) -> Entry:
    return Entry(
        image_id=f"sha256:{name}",
        reference=f"neo-env:{name}" if tagged else "",
        repository="octo/repo",
        created=used - HOUR,
        last_used=used,
        size=size,
        job=f"job-{name}" if private else None,
        owner="host:1",
    )


def names(removed: list[Entry]) -> list[str]:
    return [item.image_id.removeprefix("sha256:") for item in removed]


@pytest.mark.parametrize(
    ("entries", "bounds", "expected"),
    [
        pytest.param([entry("a", used=NOW)], Bounds(), [], id="fresh-kept"),
        pytest.param([entry("a", used=NOW - 25 * HOUR)], Bounds(), ["a"], id="unused-a-day"),
        pytest.param([entry("a", used=NOW - 23 * HOUR)], Bounds(), [], id="used-within-a-day"),
        pytest.param(
            [
                entry("old", used=NOW - 3 * HOUR),
                entry("new", used=NOW),
                entry("mid", used=NOW - HOUR),
            ],
            Bounds(max_entries=2),
            ["old"],
            id="count-least-recently-used-first",
        ),
        pytest.param(
            [entry("old", used=NOW - 3 * HOUR, size=3 * GiB), entry("new", used=NOW, size=3 * GiB)],
            Bounds(max_bytes=5 * GiB),
            ["old"],
            id="bytes",
        ),
        pytest.param(
            [
                entry("big", used=NOW - HOUR, size=9 * GiB),
                entry("new", used=NOW, size=GiB),
                entry("old", used=NOW - 2 * HOUR, size=GiB),
            ],
            Bounds(max_bytes=5 * GiB),
            ["big"],
            id="bytes-skip-the-one-that-does-not-fit",
        ),
        pytest.param([entry("loose", used=NOW, tagged=False)], Bounds(), ["loose"], id="untagged"),
        pytest.param(
            [entry("live", used=NOW - 48 * HOUR, private=True)],
            Bounds(max_entries=0),
            [],
            id="live-private",
        ),
    ],
)
def test_a_prune_removes_expired_untagged_and_least_recently_used_entries(
    entries: list[Entry], bounds: Bounds, expected: list[str]
) -> None:
    assert names(to_remove(entries, bounds, now=NOW, orphan=lambda e: False)) == expected


def test_a_private_image_goes_once_its_job_is_gone_and_everything_spares_live_ones() -> None:
    entries = [
        entry("gone", used=NOW, private=True),
        entry("live", used=NOW, private=True),
        entry("kept", used=NOW),
    ]
    orphan = lambda item: item.job == "job-gone"  # noqa: E731
    assert names(to_remove(entries, Bounds(), now=NOW, orphan=orphan)) == ["gone"]
    assert names(to_remove(entries, Bounds(), now=NOW, orphan=orphan, everything=True)) == [
        "gone",
        "kept",
    ]


def test_the_setup_label_round_trips_without_output() -> None:
    outcome = SetupOutcome(
        "auto",
        (
            StepOutcome("npm ci", "node", 12.5, 0),
            StepOutcome("go mod download", "go", 3.0, 1, tail="secret-ish log"),
        ),
        notes=("package.json is not valid JSON",),
    )
    read = _read_setup(_setup_label(outcome))
    assert read == SetupOutcome(
        "auto",
        (StepOutcome("npm ci", "node", 12.5, 0), StepOutcome("go mod download", "go", 3.0, 1)),
        notes=("package.json is not valid JSON",),
    )
    for broken in (
        "",
        "{",
        '{"mode": "auto", "steps": [{"command": 1}]}',
        '{"mode": "x", "steps": []}',
    ):
        assert _read_setup(broken) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-02T19:25:49.287153368Z", 1796239549.287153),
        ("2026-12-02T20:25:49+01:00", 1796239549.0),
        ("0001-01-01T00:00:00Z", None),
        ("yesterday", None),
        (None, None),
    ],
)
def test_docker_times_are_read_to_the_microsecond(text: object, expected: float | None) -> None:
    assert _timestamp(text) == expected
