"""bot.config.reference: the generated `.github/neo.yml` reference and its module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.config import RepoConfig, Schedule, parse_repo_config
from bot.config.reference import EXAMPLE_YAML, reference_markdown

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "docs" / "configuration.md"


def test_the_reference_doc_matches_the_model() -> None:
    expected = reference_markdown()

    assert REFERENCE.read_text(encoding="utf-8") == expected, (
        "docs/configuration.md is stale: run "
        "`uv run python -m bot.config.reference > docs/configuration.md`"
    )


def test_the_reference_describes_every_field() -> None:
    text = reference_markdown()

    assert text == reference_markdown()
    for model in (RepoConfig, Schedule):
        for name, info in model.model_fields.items():
            assert info.description, name
            row = next(line for line in text.splitlines() if line.startswith(f"| `{name}` |"))
            assert info.description.replace("|", "\\|") in row
    assert "| `max_turns` | integer, 1 to 500 | `100` |" in text
    assert "| `cron` | string | required |" in text
    assert "uv run python -m bot.config.reference > docs/configuration.md" in text


def test_the_reference_example_is_a_valid_file() -> None:
    assert EXAMPLE_YAML in reference_markdown()
    config = parse_repo_config(EXAMPLE_YAML)
    assert config.schedules[0].name == "weekly dependency update"
    # It sets every setting, so it shows them all.
    # (setup_network is the old spelling of network, shown only in the table.)
    shown = set(RepoConfig.model_fields) - {"sandbox_image", "setup_network"}
    assert shown <= config.model_fields_set


def test_the_module_prints_the_reference() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot.config.reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert result.stdout == reference_markdown()
