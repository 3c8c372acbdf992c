"""The README and docs/ stay true: every fenced block is checked by what it is.

"Runnable or parseable" means, by the block's language:

- `yaml`: parses; a `.github/neo.yml` example (first line `# .github/neo.yml`)
  is a valid repository config by the real model; a workflow using this
  repository's action passes only inputs action.yml declares.
- `sh`: valid bash (`bash -n`); every `neo ...` command in it parses with
  Neo's own argument parser (its type checks included); every script of this
  repository it runs exists. Commands are not run: they need keys, GitHub, a
  host; the install command is run for real by tests/scripts/test_install.py.
- `json`: parses. `python`: compiles. `markdown`: a SKILL.md example is a
  valid skill by the real parser.
- no language: a diagram, or a synopsis starting with `neo`, whose options
  must all exist (and, for a whole command, be all there).
- `text`: output shown as an example; not checked.

Links: every relative link leads to a file, and every `#anchor` to a heading.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.cli.main import build_parser
from bot.config import parse_repo_config
from runner.skills.skill import Skill, parse_skill

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 250
LANGUAGES = {"yaml", "sh", "json", "toml", "python", "markdown", "text", ""}

_MARKDOWN = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _tokens(page: Path) -> list[Token]:
    return _MARKDOWN.parse(page.read_text())


def _blocks() -> list[Block]:
    found = []
    for page in PAGES:
        for token in _tokens(page):
            if token.type == "fence":
                line = token.map[0] + 1 if token.map else 0
                language = token.info.strip().split(" ")[0]
                found.append(Block(page, line, language, token.content))
    return found


BLOCKS = _blocks()


def _by_language(*languages: str) -> list[Any]:
    return [pytest.param(block, id=block.where) for block in BLOCKS if block.language in languages]


def test_the_readme_is_read_in_a_minute() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())

    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move a topic into docs/"


def test_every_block_has_a_language_this_test_knows() -> None:
    unknown = [f"{b.where} ({b.language})" for b in BLOCKS if b.language not in LANGUAGES]

    assert unknown == [], "give each a rule in tests/test_docs.py, or a known language"


def test_the_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text()
    missing = [p.name for p in PAGES[1:] if p.name != "README.md" and f"]({p.name})" not in index]

    assert missing == [], "add each to docs/README.md's table of contents"


# -- YAML ---------------------------------------------------------------------


@pytest.mark.parametrize("block", _by_language("yaml"))
def test_yaml_blocks_parse_and_configs_are_valid(block: Block) -> None:
    data = yaml.safe_load(block.text)

    if block.text.startswith("# .github/neo.yml"):
        parse_repo_config(block.text)
    if isinstance(data, dict) and "jobs" in data:
        _check_workflow(data, block)


def test_the_readme_shows_a_repository_config() -> None:
    readme = [b for b in BLOCKS if b.page.name == "README.md" and b.page.parent == ROOT]

    assert any(b.text.startswith("# .github/neo.yml") for b in readme)


def _check_workflow(workflow: dict[str, Any], block: Block) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    inputs = set(action["inputs"])
    for job in workflow["jobs"].values():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("OWNER/neo@"):
                unknown = set(step.get("with", {})) - inputs
                assert not unknown, f"{block.where}: not inputs of action.yml: {unknown}"


# -- shell ----------------------------------------------------------------------


@pytest.mark.parametrize("block", _by_language("sh"))
def test_shell_blocks_are_valid_bash(block: Block) -> None:
    checked = subprocess.run(
        ["bash", "-n"], input=block.text, capture_output=True, text=True, timeout=30
    )

    assert checked.returncode == 0, f"{block.where}: {checked.stderr}"


def _commands(script: str) -> Iterator[list[str]]:
    """Each simple command of `script`, its words without leading assignments."""
    lexer = shlex.shlex(script.replace("\\\n", " "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    command: list[str] = []
    for word in [*lexer, ";"]:
        if word in (";", "&&", "||", "|", "&", "(", ")", "\n") or set(word) <= set(";&|()"):
            while command and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", command[0]):
                command.pop(0)
            if command:
                yield command
            command = []
        else:
            command.append(word)


def _lines(script: str) -> Iterator[str]:
    yield from script.replace("\\\n", " ").splitlines()


def _shell_commands(block: Block) -> Iterator[list[str]]:
    for line in _lines(block.text):
        yield from _commands(line)


@pytest.mark.parametrize("block", _by_language("sh"))
def test_neo_commands_in_shell_blocks_parse(block: Block) -> None:
    for command in _shell_commands(block):
        if command[0] == "neo":
            _parse_neo(command[1:], block)


@pytest.mark.parametrize("block", _by_language("sh"))
def test_scripts_that_shell_blocks_run_exist(block: Block) -> None:
    for command in _shell_commands(block):
        words = command[1:] if command[0] in ("python3", "bash", "sh") else command[:1]
        for word in words:
            if re.fullmatch(r"(\./)?(scripts|\.ci)/[\w.-]+", word):
                path = ROOT / word
                assert path.is_file(), f"{block.where}: {word} does not exist"
                if command[0] == word:
                    assert path.stat().st_mode & 0o111, f"{block.where}: {word} is not executable"


def _parse_neo(argv: list[str], block: Block) -> argparse.Namespace | None:
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exit:
        if exit.code == 0:  # --help
            return None
        raise AssertionError(f"{block.where}: `neo {shlex.join(argv)}` does not parse") from None


# -- synopses, JSON, Python, skills ------------------------------------------------


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise AssertionError("neo has no subcommands")


@pytest.mark.parametrize(
    "block",
    [p for p in _by_language("") if p.values[0].text.startswith("neo ")],
)
def test_synopses_name_the_options_there_are(block: Block) -> None:
    command = block.text.split()[1]
    parser = _subparser(command)
    options = {o for action in parser._actions for o in action.option_strings} - {"-h", "--help"}
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", block.text))

    assert shown - options == set(), f"{block.where}: options neo {command} does not have"
    assert options - shown == set(), f"{block.where}: the synopsis leaves these out"


def _check_skill(block: Block) -> None:
    first, _, rest = block.text.partition("\n")
    path = re.fullmatch(r"<!-- (\S+/SKILL\.md) -->", first)
    assert path, f"{block.where}: a markdown block starts with <!-- path/SKILL.md -->"
    folder = Path(path[1]).parent.name

    skill = parse_skill(rest.encode(), folder=folder, path=path[1], source="repository")

    assert isinstance(skill, Skill), f"{block.where}: {skill}"


@pytest.mark.parametrize("block", _by_language("json", "toml", "python", "markdown"))
def test_json_toml_python_and_skill_blocks_parse(block: Block) -> None:
    if block.language == "json":
        json.loads(block.text)
    elif block.language == "toml":
        tomllib.loads(block.text)
    elif block.language == "python":
        compile(block.text, block.where, "exec")
    else:
        _check_skill(block)


# -- inline commands and links -----------------------------------------------------


def _inline(page: Path) -> Iterator[Token]:
    for token in _tokens(page):
        if token.type == "inline":
            yield from token.children or []


def test_inline_neo_commands_name_real_subcommands() -> None:
    parser = build_parser()
    names = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names = set(action.choices)
    wrong = []
    for page in PAGES:
        for child in _inline(page):
            words = child.content.split()
            if child.type != "code_inline" or len(words) < 2 or words[0] != "neo":
                continue
            if words[1] not in names and not words[1].startswith(("-", "...")):
                wrong.append(f"{page.relative_to(ROOT)}: `{child.content}`")
    assert wrong == [], f"neo has no such command: {wrong}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    tokens = _tokens(page)
    found: set[str] = set()
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            text = "".join(c.content for c in tokens[index + 1].children or [])
            anchor = slug(text)
            count = 0
            while (anchor if count == 0 else f"{anchor}-{count}") in found:
                count += 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def test_slugs_are_githubs() -> None:
    assert slug("Register the App: `neo setup-app`".replace("`", "")) == (
        "register-the-app-neo-setup-app"
    )
    assert slug("Context: AGENTS.md") == "context-agentsmd"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_somewhere(page: Path) -> None:
    broken = []
    for child in _inline(page):
        href = str(child.attrs.get("href", "")) if child.type == "link_open" else ""
        if not href or re.match(r"[a-z]+:", href):
            continue
        target, _, anchor = href.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{href} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{href} (no such heading)")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"
