"""Automatic setup: the commands that install a repository's dependencies, from its root files.

    files = read_setup_files(tree)              # on the host (runner.sandbox.setup_files)
    plan = detect_setup(files)                  # pure: which commands, for which ecosystems
    plan.ecosystems                             # ("python", "node"): the network's default

One command per ecosystem (two for Python when requirements files sit beside
an installable project), each with its time limit. Installs go to the
sandbox's environment (`runner.sandbox.environment`), never the tree.
The table: docs/setup.md.
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from runner.sandbox.setup_plan import SetupFiles, SetupPlan, SetupStep, explicit_plan

__all__ = ["detect_setup", "is_setup_file", "plan_setup"]

# Root files detection reads; `requirements*.txt` are matched by pattern.
_NAMES = frozenset(
    {
        *("uv.lock", "poetry.lock", "Pipfile.lock", "Pipfile", "pyproject.toml"),
        *("setup.py", "setup.cfg", "uv.toml"),
        *("package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml"),
        *("pnpm-workspace.yaml", "yarn.lock", ".npmrc", ".yarnrc", ".yarnrc.yml"),
        *("go.mod", "go.sum", "Cargo.toml", "Cargo.lock", "Gemfile", "Gemfile.lock"),
    }
)
_REQUIREMENTS = re.compile(r"requirements[\w.-]*\.txt")
# The extra (or dependency group) an editable install adds, first found wins.
_TEST_EXTRAS = ("test", "tests", "testing", "dev")
# Files that configure a package manager: part of what a step reads, when present.
_NODE_CONFIG = (".npmrc", ".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml")


def is_setup_file(name: str) -> bool:
    """Whether detection reads the root file `name`."""
    return name in _NAMES or _REQUIREMENTS.fullmatch(name) is not None


def plan_setup(setting: Sequence[str] | None, files: Mapping[str, bytes]) -> SetupPlan:
    """The plan for `setup` as configured: None detects, [] is off, a list runs as written."""
    if setting is None:
        return detect_setup(files)
    return explicit_plan(setting, files)


def detect_setup(files: Mapping[str, bytes]) -> SetupPlan:
    """The commands that install what the root `files` (name -> content) declare."""
    notes = list(files.notes) if isinstance(files, SetupFiles) else []
    steps = [
        *_python(files, notes),
        *_node(files, notes),
        *_simple(files, "go", "go.mod", "go mod download", ("go.mod", "go.sum")),
        *_simple(files, "rust", "Cargo.lock", "cargo fetch --locked", ("Cargo.lock", "Cargo.toml")),
        # Frozen: a Gemfile out of step with its lock fails rather than rewrites the lock.
        *_simple(
            files,
            "ruby",
            "Gemfile.lock",
            "BUNDLE_FROZEN=true bundle install",
            ("Gemfile.lock", "Gemfile"),
        ),
    ]
    return SetupPlan("auto", tuple(steps), tuple(notes))


def _present(files: Mapping[str, bytes], *names: str) -> tuple[str, ...]:
    return tuple(name for name in names if name in files)


def _simple(
    files: Mapping[str, bytes], ecosystem: str, marker: str, command: str, reads: Sequence[str]
) -> list[SetupStep]:
    if marker not in files:
        return []
    return [SetupStep(command, ecosystem, _present(files, *reads))]


def _python(files: Mapping[str, bytes], notes: list[str]) -> list[SetupStep]:
    pyproject = _toml(files, "pyproject.toml", notes)
    extra = _test_name(_extras(pyproject, files))
    group = _test_name(_groups(pyproject))
    if "uv.lock" in files:
        command = "uv sync --locked --inexact"  # --inexact keeps the venv's own pip
        command += f" --extra {shlex.quote(extra)}" if extra else ""
        command += f" --group {shlex.quote(group)}" if group and group != "dev" else ""
        return [
            SetupStep(command, "python", _present(files, "uv.lock", "pyproject.toml", "uv.toml"))
        ]
    if "poetry.lock" in files:
        command = "poetry install --no-interaction"
        command += f" --extras {shlex.quote(extra)}" if extra else ""
        return [SetupStep(command, "python", _present(files, "poetry.lock", "pyproject.toml"))]
    if "Pipfile.lock" in files:
        return [
            SetupStep("pipenv sync --dev", "python", _present(files, "Pipfile.lock", "Pipfile"))
        ]
    steps = []
    requirements = sorted(
        (name for name in files if _REQUIREMENTS.fullmatch(name)),
        key=lambda name: (name != "requirements.txt", name),
    )
    if requirements:
        flags = " ".join(f"-r {shlex.quote(name)}" for name in requirements)
        steps.append(SetupStep(f"uv pip install {flags}", "python", tuple(requirements)))
    if _installable(pyproject, files):
        target = f".[{extra}]" if extra else "."
        command = f"uv pip install -e {shlex.quote(target)}"
        command += f" --group {shlex.quote(group)}" if group else ""
        reads = _present(files, "pyproject.toml", "setup.py", "setup.cfg", "uv.toml")
        steps.append(SetupStep(command, "python", reads))
    return steps


def _toml(files: Mapping[str, bytes], name: str, notes: list[str]) -> dict[str, Any] | None:
    if name not in files:
        return None
    try:
        return tomllib.loads(files[name].decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        notes.append(f"{name} is not valid TOML ({_first_line(error)}): its extras were not read")
        return None


def _installable(pyproject: dict[str, Any] | None, files: Mapping[str, bytes]) -> bool:
    """Whether `pip install -e .` can build the project (a pyproject.toml that only
    configures tools cannot)."""
    if "setup.py" in files:
        return True
    if pyproject is None:
        return False
    poetry = _table(_table(pyproject, "tool"), "poetry")
    return "project" in pyproject or "build-system" in pyproject or bool(poetry)


def _extras(pyproject: dict[str, Any] | None, files: Mapping[str, bytes]) -> list[str]:
    names = list(_table(_table(pyproject, "project"), "optional-dependencies"))
    names += list(_table(_table(_table(pyproject, "tool"), "poetry"), "extras"))
    if "setup.cfg" in files:
        config = configparser.ConfigParser(interpolation=None)
        try:
            config.read_string(files["setup.cfg"].decode())
            names += (
                list(config["options.extras_require"])
                if config.has_section("options.extras_require")
                else []
            )
        except (UnicodeDecodeError, configparser.Error):
            pass
    if "setup.py" in files:
        # setup.py is code: only a literal `extras_require={"test": ...}` is seen.
        source = files["setup.py"].decode(errors="replace")
        for block in re.finditer(r"extras_require\s*=\s*\{([^}]*)", source):
            names += re.findall(r"""['"]([\w.-]+)['"]\s*:""", block.group(1))
        for block in re.finditer(r"extras_require\s*=\s*dict\s*\(([^)]*)", source):
            names += re.findall(r"""(?:^|[(,\s])(\w+)\s*=(?!=)""", block.group(1))
    return names


def _groups(pyproject: dict[str, Any] | None) -> list[str]:
    return list(_table(pyproject, "dependency-groups"))


def _test_name(names: Sequence[str]) -> str | None:
    """The first of `_TEST_EXTRAS` among `names`, spelled as the project spells it."""
    normal = {re.sub(r"[-_.]+", "-", name).lower(): name for name in names}
    for wanted in _TEST_EXTRAS:
        if wanted in normal:
            return normal[wanted]
    return None


def _table(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _node(files: Mapping[str, bytes], notes: list[str]) -> list[SetupStep]:
    manager = _package_manager(files, notes)
    locks = {
        "pnpm": ("pnpm-lock.yaml",),
        "yarn": ("yarn.lock",),
        "npm": ("package-lock.json", "npm-shrinkwrap.json"),
    }
    order = ["pnpm", "yarn", "npm"]
    if manager in locks:
        order.remove(manager)
        order.insert(0, manager)
    for name in order:
        found = _present(files, *locks[name])
        if not found:
            continue
        if name == "pnpm":
            command = "pnpm install --frozen-lockfile"
        elif name == "yarn":
            # Yarn 2+ (a `__metadata:` block) and Yarn 1 spell "frozen" apart.
            berry = b"__metadata:" in files["yarn.lock"][:4096]
            command = (
                "yarn install --immutable"
                if berry
                else "yarn install --frozen-lockfile --non-interactive"
            )
        else:
            command = "npm ci"
        reads = (*found, *_present(files, "package.json", *_NODE_CONFIG))
        return [SetupStep(command, "node", reads, node_modules=True)]
    return []


def _package_manager(files: Mapping[str, bytes], notes: list[str]) -> str | None:
    """The manager package.json's `packageManager` names (`pnpm@9.1.0` -> pnpm)."""
    if "package.json" not in files:
        return None
    try:
        manifest = json.loads(files["package.json"])
    except (UnicodeDecodeError, ValueError) as error:
        notes.append(f"package.json is not valid JSON ({_first_line(error)})")
        return None
    value = manifest.get("packageManager") if isinstance(manifest, dict) else None
    return value.partition("@")[0] if isinstance(value, str) else None


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0][:120] if str(error).strip() else type(error).__name__
