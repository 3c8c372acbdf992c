"""The package READMEs name every module (the README and docs/: tests/test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path


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
