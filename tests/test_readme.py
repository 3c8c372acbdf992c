"""The READMEs hold: every `.github/neo.yml` example is valid; every module is listed."""

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


def _package_rows(readme: Path) -> dict[str, str]:
    """Each table row of a package README, by the folder its first cell names ("" for the top)."""
    rows: dict[str, str] = {}
    for line in readme.read_text().splitlines():
        cells = line.split("|")
        if len(cells) < 3 or not line.startswith("| "):
            continue
        folder = re.fullmatch(r"\*\*([a-z_]+)/\*\*", cells[1].strip())
        rows[folder[1] if folder else cells[1].strip()] = line
    return rows


def test_the_package_readmes_name_every_module() -> None:
    root = Path(__file__).resolve().parents[1]
    missing = []
    for package in ("bot", "runner"):
        readme = root / package / "README.md"
        text = readme.read_text()
        rows = _package_rows(readme)
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root / package)
            if path.name == "__init__.py" or "__pycache__" in relative.parts:
                continue
            named = f"`{relative.as_posix()}`" in text
            if not named and len(relative.parts) == 2:
                named = f"`{relative.name}`" in rows.get(relative.parts[0], "")
            if not named and len(relative.parts) == 1:
                named = f"`{relative.name}`" in text
            if not named:
                missing.append(f"{package}/{relative.as_posix()}")
    assert missing == [], f"add a line for each to its package's README.md: {missing}"
