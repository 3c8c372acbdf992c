"""examples/compose/compose.yaml says only what Neo understands.

Its services are the ones the README describes, each `neo` command in it (and
in its comments, and the image's own ENTRYPOINT for the services that keep it)
parses with Neo's real CLI parser, each NEO_* name is a real setting, and
every worker has a data directory of its own mounted at the same path inside
and out (the Docker sandbox's bind mounts are resolved on the host).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli.main import build_parser
from bot.config.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "examples" / "compose" / "compose.yaml"
SETTINGS = {f"NEO_{name.upper()}" for name in Settings.model_fields}
WORKERS = ("worker-1", "worker-2", "worker-3")


def services() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    found = loaded["services"]
    assert isinstance(found, dict)
    return found


def image_entrypoint() -> list[str]:
    """The service image's ENTRYPOINT: the Dockerfile's last one."""
    lines = re.findall(r"^ENTRYPOINT (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.M)
    entrypoint = json.loads(lines[-1])
    assert isinstance(entrypoint, list)
    return entrypoint


def neo_argv(entrypoint: list[str]) -> list[str]:
    """What follows `neo` in an entrypoint run under tini."""
    assert entrypoint[:3] == ["/usr/bin/tini", "--", "neo"], entrypoint
    return entrypoint[3:]


def parses(argv: list[str]) -> str:
    """The command `argv` names, once Neo's parser accepts it."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit:
        pytest.fail(f"neo {shlex.join(argv)} does not parse ({exit.code})")
    return str(args.command)


def test_the_services_are_postgres_a_migration_two_receivers_and_three_workers() -> None:
    found = services()
    assert set(found) == {"postgres", "migrate", "serve-1", "serve-2", *WORKERS}
    for name in ("serve-1", "serve-2", *WORKERS):
        after = found[name]["depends_on"]["migrate"]["condition"]
        assert after == "service_completed_successfully", name
    assert found["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_every_neo_command_parses_with_neos_own_parser() -> None:
    commands = {}
    for name, service in services().items():
        if service.get("image") != "neo-service:local":
            continue
        entrypoint = service.get("entrypoint") or image_entrypoint()
        commands[name] = parses(neo_argv(entrypoint))
    assert commands == {
        "migrate": "db",
        "serve-1": "serve",
        "serve-2": "serve",
        **dict.fromkeys(WORKERS, "worker"),
    }
    shown = re.findall(r"^#\s+(neo .*?)\s*(?:#.*)?$", COMPOSE.read_text(), re.M)
    assert shown, "the instructions name a neo command"
    for line in shown:
        parses(shlex.split(line)[1:])


def test_every_neo_variable_is_a_setting() -> None:
    text = COMPOSE.read_text()
    named = set(re.findall(r"\bNEO_[A-Z0-9_]+", text))
    for service in services().values():
        named |= {key for key in service.get("environment", {}) if key.startswith("NEO_")}
    assert named, "the example sets NEO_* variables"
    assert named <= SETTINGS, sorted(named - SETTINGS)
    # `neo db migrate` reads NEO_QUEUE_URL itself, not through the settings.
    assert "NEO_QUEUE_URL" in services()["migrate"]["environment"]


def test_receivers_run_no_workers_and_workers_answer_no_webhooks() -> None:
    found = services()
    for name in ("serve-1", "serve-2"):
        assert found[name]["environment"]["NEO_WORKERS"] == "0", name
    for name in WORKERS:
        assert found[name]["healthcheck"] == {"disable": True}, name
        assert "ports" not in found[name], name


def test_each_worker_has_its_own_data_dir_mounted_at_the_same_path() -> None:
    found = services()
    dirs = []
    for name in WORKERS:
        data_dir = found[name]["environment"]["NEO_DATA_DIR"]
        mounts = [volume.split(":") for volume in found[name]["volumes"]]
        assert [data_dir, data_dir] in [mount[:2] for mount in mounts], name
        assert ["/var/run/docker.sock", "/var/run/docker.sock"] in mounts, name
        dirs.append(data_dir)
    assert len(set(dirs)) == len(WORKERS)
    # Neither inside the other: no worker's clones are another's.
    for one in dirs:
        for other in dirs:
            assert one == other or not Path(one).is_relative_to(other)
