"""Which bash command lines tested, built or linted the code. Pure.

A heuristic over text that errs towards leaving a command out
(docs/architecture.md, "The report").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator, Sequence
from typing import Final, Literal

__all__ = ["KINDS", "Kind", "kinds"]

Kind = Literal["test", "build", "lint"]
KINDS: Final[tuple[Kind, ...]] = ("test", "build", "lint")

_PUNCTUATION: Final = ";&|()<>\n"
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON: Final = re.compile(r"(?:python|pypy)[0-9.]*")
_TEST_SCRIPT: Final = re.compile(
    r"(?:(?:test|check)_.*|.*_(?:test|check)|tests?|checks?|runtests)\.py"
)
# Nested `bash -c` is followed this deep.
_MAX_DEPTH: Final = 3

# Prefixes that run the program after them.
_WRAPPERS: Final = frozenset(
    {"env", "time", "command", "exec", "nice", "nohup", "sudo", "timeout", "stdbuf", "xvfb-run"}
)
_KEYWORDS: Final = frozenset({"!", "{", "if", "then", "elif", "else", "do", "while", "until"})
# `TOOL SUBCOMMAND`s that run the program after them.
_RUNNERS: Final = {
    "uv": "run",
    "poetry": "run",
    "pipenv": "run",
    "pdm": "run",
    "hatch": "run",
    "rye": "run",
    "pixi": "run",
    "conda": "run",
    "bundle": "exec",
    "pnpm": "exec",
    "yarn": "exec",
}
_RUNNER_PROGRAMS: Final = frozenset({"uvx", "npx", "pnpx", "bunx", "pipx"})
# Wrapper and runner options that take a value, so the value is not the program.
_VALUE_OPTIONS: Final = frozenset(
    {
        "-n",
        "-p",
        "-u",
        "-e",
        "-k",
        "-s",
        "--with",
        "--with-editable",
        "--with-requirements",
        "--python",
        "--extra",
        "--group",
        "--only-group",
        "--no-group",
        "--package",
        "--directory",
        "--project",
        "--env-file",
        "--index",
        "--index-url",
        "--name",
        "--signal",
        "--kill-after",
        "--unset",
    }
)

_PROGRAMS: Final[dict[str, Kind]] = {
    **dict.fromkeys(
        [
            "pytest",
            "py.test",
            "tox",
            "nox",
            "jest",
            "vitest",
            "mocha",
            "ava",
            "karma",
            "rspec",
            "phpunit",
            "ctest",
            "bats",
        ],
        "test",
    ),
    **dict.fromkeys(["tsc", "ninja"], "build"),
    **dict.fromkeys(
        [
            "ruff",
            "mypy",
            "flake8",
            "pylint",
            "pyright",
            "pyflakes",
            "pycodestyle",
            "black",
            "isort",
            "eslint",
            "prettier",
            "biome",
            "stylelint",
            "shellcheck",
            "golangci-lint",
            "rubocop",
            "hadolint",
            "yamllint",
            "clang-tidy",
        ],
        "lint",
    ),
}

_SUBCOMMANDS: Final[dict[str, dict[str, Kind]]] = {
    "cargo": {
        **dict.fromkeys(["test", "t", "nextest", "bench"], "test"),
        **dict.fromkeys(["build", "b", "check", "c"], "build"),
        **dict.fromkeys(["clippy", "fmt"], "lint"),
    },
    "go": {"test": "test", "build": "build", "vet": "lint"},
    "dotnet": {"test": "test", "build": "build", "format": "lint"},
    "swift": {"test": "test", "build": "build"},
    "mix": {"test": "test", "compile": "build", "format": "lint", "credo": "lint"},
    "deno": {"test": "test", "check": "lint", "lint": "lint"},
    "bazel": {"test": "test", "build": "build"},
    "bazelisk": {"test": "test", "build": "build"},
    "meson": {"test": "test", "compile": "build"},
    "rake": {"test": "test", "spec": "test"},
    "pre-commit": {"run": "lint"},
    "composer": {"test": "test"},
    "playwright": {"test": "test"},
    "cypress": {"run": "test"},
}

_PYTHON_MODULES: Final[dict[str, Kind]] = {
    **dict.fromkeys(["pytest", "unittest", "tox", "nox", "doctest"], "test"),
    **dict.fromkeys(["build", "compileall", "py_compile"], "build"),
    **dict.fromkeys(
        ["ruff", "mypy", "flake8", "pylint", "pyright", "black", "isort", "pyflakes"], "lint"
    ),
}

_MAVEN: Final[dict[str, Kind]] = {
    **dict.fromkeys(["test", "verify", "integration-test"], "test"),
    **dict.fromkeys(["compile", "test-compile", "package", "install"], "build"),
}
_GRADLE: Final[dict[str, Kind]] = {
    **dict.fromkeys(["test", "check", "connectedCheck", "integrationTest"], "test"),
    **dict.fromkeys(["build", "assemble", "compileJava", "compileKotlin"], "build"),
    **dict.fromkeys(["lint", "ktlintCheck", "detekt", "spotlessCheck"], "lint"),
}
# `python manage.py test`, `python setup.py build`.
_SETUP_COMMANDS: Final[dict[str, Kind]] = {"test": "test", "build": "build"}
_MAKE_OPTIONS_WITH_VALUE: Final = frozenset({"-C", "-f", "-j", "-l", "-o", "-W", "-I"})


def kinds(command: str) -> tuple[Kind, ...]:
    """What `command` (a bash command line) did among testing, building and linting.

    Empty when it did none of them; in the order of `KINDS` otherwise.
    """
    found = set(_kinds(command, 0))
    return tuple(kind for kind in KINDS if kind in found)


def _kinds(command: str, depth: int) -> Iterator[Kind]:
    for words in _simple_commands(command):
        yield from _classify(words, depth)


def _simple_commands(command: str) -> Iterator[list[str]]:
    """The words of each simple command of `command`, redirections left out."""
    line = command.replace("\\\n", " ")
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace = " \t\r"  # a newline separates commands
        lexer.whitespace_split = True
        lexer.commenters = ""  # a `#` would swallow the newline after it
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: judge the words as they stand
        spaced = re.sub(r"([;&|()<>\n])", r" \1 ", line)
        tokens = [token for token in re.split(r"[ \t\r]+", spaced) if token]
    words: list[str] = []
    redirect = False
    for token in tokens:
        if redirect:
            redirect = False
        elif token and all(char in _PUNCTUATION for char in token):
            if "<" in token or ">" in token:
                redirect = True  # the next word is its target
            elif words:
                yield words
                words = []
        else:
            words.append(token)
    if words:
        yield words


def _classify(words: Sequence[str], depth: int) -> Iterator[Kind]:
    words = _unwrap(words)
    if not words:
        return
    program, args = _name(words[0]), words[1:]
    if program in ("bash", "sh", "zsh", "dash") and "-c" in args[:-1]:
        if depth < _MAX_DEPTH:
            yield from _kinds(args[args.index("-c") + 1], depth + 1)
        return
    if _PYTHON.fullmatch(program):
        kind = _python(args)
    elif program in _PROGRAMS:
        kind = _PROGRAMS[program]
    elif program in _SUBCOMMANDS:
        kind = _SUBCOMMANDS[program].get(_first_word(args) or "")
    elif program in _SCRIPTS:
        kind = _SCRIPTS[program](args)
    elif program in ("make", "gmake"):
        yield from _make(args)
        return
    elif program in ("mvn", "mvnw"):
        yield from _goals(args, _MAVEN)
        return
    elif program in ("gradle", "gradlew"):
        yield from _goals([arg.rsplit(":", 1)[-1] for arg in args], _GRADLE)
        return
    elif program == "cmake":
        kind = "build" if "--build" in args else None
    else:
        kind = None
    if kind is not None:
        yield kind


def _unwrap(words: Sequence[str]) -> Sequence[str]:
    """`words` from the program that does the work: no assignments, wrappers or runners."""
    index = 0
    while index < len(words):
        word = words[index]
        name = _name(word)
        if _ASSIGNMENT.match(word) or word in _KEYWORDS:
            index += 1
        elif name in _WRAPPERS:
            index = _skip_options(words, index + 1)
            if name == "timeout" and index < len(words):
                index += 1  # its duration
        elif name in _RUNNER_PROGRAMS:
            index = _skip_options(words, index + 1)
        elif _RUNNERS.get(name) is not None and _first_word(words[index + 1 :]) == _RUNNERS[name]:
            index = _skip_options(words, words.index(_RUNNERS[name], index + 1) + 1)
        else:
            break
    return words[index:]


def _skip_options(words: Sequence[str], index: int) -> int:
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in _VALUE_OPTIONS else 1
    return index


def _name(word: str) -> str:
    """A program's name: `./node_modules/.bin/eslint` is `eslint`."""
    return word.rsplit("/", 1)[-1]


def _first_word(args: Sequence[str]) -> str | None:
    """The first argument that is not an option (`-q`, `+nightly`): a subcommand, a script."""
    return next((arg for arg in args if not arg.startswith(("-", "+"))), None)


def _python(args: Sequence[str]) -> Kind | None:
    if "-m" in args[:-1]:
        return _PYTHON_MODULES.get(args[args.index("-m") + 1])
    if "-c" in args:
        return None
    script = _first_word(args)
    if script is None:
        return None
    rest = args[args.index(script) + 1 :]
    name = _name(script)
    if name in ("manage.py", "setup.py"):
        return _SETUP_COMMANDS.get(_first_word(rest) or "")
    return "test" if _TEST_SCRIPT.fullmatch(name) else None


def _script(name: str, *, check: Kind) -> Kind | None:
    """The kind of a named script or target (`test:unit`, `lint`, `check-types`, `build`).

    Judged by its words, so `inspect` is no `spec` and `contest` no `test`.
    """
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    if words & {"lint", "typecheck", "type", "types", "tsc"} or any(
        word.endswith("lint") for word in words
    ):
        return "lint"
    if words & {"test", "tests", "spec", "specs", "e2e", "unit", "integration"} or any(
        word.startswith("test") for word in words
    ):
        return "test"
    if "check" in words:
        return check
    if words & {"build", "compile"}:
        return "build"
    return None


def _package_script(args: Sequence[str]) -> Kind | None:
    """`npm test`, `npm run build`, `yarn lint`, `pnpm run test:unit`, `bun test`."""
    words = [arg for arg in args if not arg.startswith("-")]
    if not words:
        return None
    if words[0] in ("run", "run-script") and len(words) > 1:
        return _script(words[1], check="lint")
    if words[0] in ("test", "t", "tst"):
        return "test"
    # Package managers' own subcommands are not scripts.
    if words[0] in ("install", "ci", "add", "remove", "i", "exec", "dlx", "create", "init"):
        return None
    return _script(words[0], check="lint")


_SCRIPTS: Final[dict[str, Callable[[Sequence[str]], Kind | None]]] = {
    "npm": _package_script,
    "yarn": _package_script,
    "pnpm": _package_script,
    "bun": _package_script,
}


def _make(args: Sequence[str]) -> Iterator[Kind]:
    targets: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _MAKE_OPTIONS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-") and not _ASSIGNMENT.match(arg):
            targets.append(arg)
    if not targets:
        yield "build"  # the default goal builds
        return
    for target in targets:
        kind = "build" if target == "all" else _script(target, check="test")
        if kind is not None:
            yield kind


def _goals(args: Sequence[str], goals: dict[str, Kind]) -> Iterator[Kind]:
    for arg in args:
        if arg in goals:
            yield goals[arg]
