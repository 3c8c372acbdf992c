"""The README's examples hold: each `.github/neo.yml` it shows is a valid config."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config import parse_repo_config

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_yaml_example_in_the_readme_is_a_valid_repo_config() -> None:
    # Other YAML blocks (workflows) are not configs: these start with a comment naming the file.
    blocks = re.findall(
        r"```yaml\n(# \.github/neo\.yml\n.*?)```", README.read_text(), flags=re.DOTALL
    )

    assert blocks, "the README shows a .github/neo.yml example"
    for block in blocks:
        parse_repo_config(block)
