"""Where a docker sandbox's installs live, and the environment its commands see.

Setup installs into the environment root, a directory of the container's own
file system (the working tree is a bind mount and home and /tmp are tmpfs,
so `docker commit` keeps none of them): a Python virtual environment, the
project's node_modules, npm's global prefix, Go's module cache, Cargo's
registry, Ruby's bundle. The variables below point every tool there, so the
agent's python3, pip, pytest, node and go see what setup installed and
nothing of it is in the tree. docs/setup.md has the layout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from runner.sandbox.base import COMMAND_ENV

__all__ = [
    "CACHE",
    "DEFAULT_PATH",
    "ENV_ROOT",
    "HOME",
    "NODE_MODULES",
    "NODE_MODULES_LINK",
    "VENV",
    "container_environment",
    "image_variables",
]

HOME = "/home/neo"
ENV_ROOT = "/opt/neo-env"
VENV = f"{ENV_ROOT}/venv"
# A project's node_modules, moved out of the tree after setup; `/node_modules`
# leads to it, and Node looks in every ancestor's node_modules.
NODE_MODULES = f"{ENV_ROOT}/node_modules"
NODE_MODULES_LINK = "/node_modules"
# Downloads and build caches: emptied before the environment is kept.
CACHE = f"{ENV_ROOT}/cache"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Before the image's PATH: a project's python3 and pytest are the virtual
# environment's, not the system's.
_PATH_FIRST = (f"{VENV}/bin",)
# After it: what a project's packages add, which must not shadow the image's tools.
_PATH_AFTER = (
    f"{ENV_ROOT}/npm/bin",
    f"{NODE_MODULES_LINK}/.bin",
    f"{ENV_ROOT}/go/bin",
    f"{ENV_ROOT}/cargo/bin",
    f"{ENV_ROOT}/gems/bin",
)

# Neo's own variables, besides PATH: they win over an image's.
_NEO = {
    "HOME": HOME,
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    **COMMAND_ENV,
    "VIRTUAL_ENV": VENV,
    # uv sync and uv run use the virtual environment, not a .venv in the tree.
    "UV_PROJECT_ENVIRONMENT": VENV,
    # A Python uv downloads lives in the environment, not in tmpfs home.
    "UV_PYTHON_INSTALL_DIR": f"{ENV_ROOT}/python",
    "XDG_CACHE_HOME": CACHE,
    "npm_config_cache": f"{CACHE}/npm",
    "npm_config_prefix": f"{ENV_ROOT}/npm",
    "npm_config_store_dir": f"{CACHE}/pnpm-store",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "YARN_CACHE_FOLDER": f"{CACHE}/yarn",
    "GOPATH": f"{ENV_ROOT}/go",
    "GOCACHE": f"{CACHE}/go-build",
    "CARGO_HOME": f"{ENV_ROOT}/cargo",
    "GEM_HOME": f"{ENV_ROOT}/gems",
    "BUNDLE_PATH": f"{ENV_ROOT}/bundle",
}


def image_variables(config_env: Sequence[str] | None) -> dict[str, str]:
    """An image's `Config.Env` (`["KEY=value", ...]`) as a mapping, malformed entries dropped."""
    found: dict[str, str] = {}
    for entry in config_env or ():
        key, equals, value = entry.partition("=")
        if equals and key:
            found[key] = value
    return found


def container_environment(
    image_env: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every variable a sandbox container starts with, from its image's.

    The image's variables are kept unless Neo sets them; PATH is the
    environment's Python, then the image's PATH, then the environment's
    other tools and the default directories, each directory once. `extra`
    (the network's, say) is added last and wins.
    """
    path = _join(
        _PATH_FIRST, image_env.get("PATH", "").split(":"), _PATH_AFTER, DEFAULT_PATH.split(":")
    )
    return {**image_env, **_NEO, "PATH": path, **(extra or {})}


def _join(*parts: Iterable[str]) -> str:
    seen: dict[str, None] = {}
    for part in parts:
        for directory in part:
            if directory:
                seen.setdefault(directory, None)
    return ":".join(seen)
