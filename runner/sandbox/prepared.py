"""Prepared environments: a sandbox's state after setup, kept as a local image for the next job.

    key = environment_key(repository=..., plan=plan, files=files, base_image=base_id)
    entry = find_entry(client, key, bounds)        # None: set up, then `commit_environment`
    prune(client, bounds)                          # `neo env prune`, and after each new entry

An entry is the image `neo-env:<key>`, labelled as Neo's, keyed by the
repository, the hashes of the files setup read and the base image. It
expires once unused for `Bounds.max_age` (each use re-tags it, which Docker
records as its LastTagTime), and the entries of a host are bounded in number
and bytes, least recently used removed first. A job that may not share its
environment (a fork's pull request) commits a private image instead, removed
when the job ends, or by a later prune once its runner is gone.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from docker import DockerClient
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from runner.sandbox.requests import Bounds
from runner.sandbox.setup_plan import SetupOutcome, SetupPlan, StepOutcome

__all__ = [
    "ENV_REPOSITORY",
    "LABEL_ENV",
    "Bounds",
    "Entry",
    "JobImage",
    "commit_environment",
    "environment_key",
    "find_entry",
    "list_entries",
    "prune",
    "remove_entry",
    "to_remove",
]

ENV_REPOSITORY = "neo-env"
LABEL_ENV = "neo.env"
LABEL_KEY = "neo.env.key"
LABEL_REPOSITORY = "neo.env.repository"
LABEL_BASE = "neo.env.base"
LABEL_CREATED = "neo.env.created"
LABEL_SETUP = "neo.env.setup"
# On a job's private image only: the job, and its runner as `neo.owner` and
# `neo.owner.process` name it (`runner.sandbox.owners`).
LABEL_JOB = "neo.env.job"
LABEL_OWNER = "neo.env.owner"
LABEL_OWNER_PROCESS = "neo.env.owner.process"
_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?")
# Bump when the environment's layout changes, so that no older entry is reused.
LAYOUT = 1


@dataclass(frozen=True, slots=True)
class Entry:
    image_id: str
    # `neo-env:<key>`, `neo-env:job-<container>` for a job's own, "" once untagged.
    reference: str
    repository: str
    created: float
    last_used: float
    # Bytes of its own, beyond its base image's.
    size: int
    setup: SetupOutcome | None = None
    # A job's private image: the job, and the runner that made it (its
    # process identity too, when it had one: a pid alone may be reused).
    job: str | None = None
    owner: str = ""
    owner_process: str | None = None

    @property
    def private(self) -> bool:
        return self.job is not None


@dataclass(frozen=True, slots=True)
class JobImage:
    """A job's private environment, which no other job reuses: the job, and
    its runner as `neo.owner` and `neo.owner.process` name it (a later prune
    removes the image once that runner is gone, even if a new process has
    its pid)."""

    job: str
    owner: str
    process: str | None = None


def environment_key(
    *, repository: str, plan: SetupPlan, files: Mapping[str, bytes], base_image: str
) -> str:
    """The key of the environment `plan` prepares for `repository` on `base_image` (its id)."""
    data = {
        "layout": LAYOUT,
        "repository": repository,
        "base": base_image,
        "mode": plan.mode,
        "steps": [[step.command, step.ecosystem, step.node_modules] for step in plan.steps],
        "files": {
            name: hashlib.sha256(files[name]).hexdigest() for name in plan.reads if name in files
        },
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def find_entry(
    client: DockerClient, key: str, bounds: Bounds, *, now: float | None = None
) -> Entry | None:
    """The entry `key` names, marked as used now; None when there is none or it expired."""
    now = time.time() if now is None else now
    reference = f"{ENV_REPOSITORY}:{key}"
    try:
        attrs = client.images.get(reference).attrs
    except (ImageNotFound, NotFound):
        return None
    entry = _entry(attrs, reference)
    if entry is None or (attrs.get("Config") or {}).get("Labels", {}).get(LABEL_KEY) != key:
        return None
    if now - entry.last_used > bounds.max_age:
        remove_entry(client, entry)
        return None
    # The tag's time is the entry's last use.
    client.api.tag(entry.image_id, ENV_REPOSITORY, key, force=True)
    return entry


def commit_environment(
    client: DockerClient,
    container: str,
    *,
    key: str | JobImage,
    repository: str,
    base_image: str,
    setup: SetupOutcome,
) -> str:
    """Commit the stopped setup `container`: the entry `key` names, or a job's private image.

    Its id. Only the container's own layer is kept: the tree (a bind mount),
    home and /tmp (tmpfs) are not in it.
    """
    labels = {
        LABEL_ENV: "1",
        LABEL_REPOSITORY: repository,
        LABEL_BASE: base_image,
        LABEL_CREATED: str(int(time.time())),
        LABEL_SETUP: _setup_label(setup),
    }
    if isinstance(key, JobImage):
        labels |= {LABEL_JOB: key.job, LABEL_OWNER: key.owner}
        if key.process is not None:
            labels[LABEL_OWNER_PROCESS] = key.process
        tag = f"job-{container}"
    else:
        labels[LABEL_KEY] = tag = key
    done = client.api.commit(container, repository=ENV_REPOSITORY, tag=tag, conf={"Labels": labels})
    return str(done["Id"])


def remove_entry(client: DockerClient, entry: Entry) -> bool:
    """Remove `entry`'s image; False when a container still uses it or it is gone."""
    try:
        client.api.remove_image(entry.reference or entry.image_id, noprune=False)
    except (ImageNotFound, NotFound):
        return False
    except APIError as error:
        if error.status_code == 409:  # a running job's container uses it
            return False
        raise
    return True


def list_entries(client: DockerClient) -> list[Entry]:
    """Every image of Neo's environments on the engine, tagged or not."""
    found = []
    sizes: dict[str, int] = {}
    for summary in client.api.images(filters={"label": f"{LABEL_ENV}=1"}):
        with contextlib.suppress(ImageNotFound, NotFound):
            attrs = client.images.get(summary["Id"]).attrs
            tags = [tag for tag in attrs.get("RepoTags") or () if tag.startswith(ENV_REPOSITORY)]
            entry = _entry(
                attrs, tags[0] if tags else "", base_size=_base_size(client, attrs, sizes)
            )
            if entry is not None:
                found.append(entry)
    return found


def to_remove(
    entries: Sequence[Entry],
    bounds: Bounds,
    *,
    now: float,
    orphan: Callable[[Entry], bool],
    everything: bool = False,
) -> list[Entry]:
    """Which entries a prune removes (pure).

    Everything with `everything`, bar a live job's private image; else the
    private images whose job is gone (`orphan`), untagged images, entries
    unused past `max_age`, and then the least recently used beyond
    `max_entries` or `max_bytes`.
    """
    removed: list[Entry] = []
    kept: list[Entry] = []
    for entry in entries:
        if entry.private:
            if orphan(entry):
                removed.append(entry)
        elif everything or not entry.reference or now - entry.last_used > bounds.max_age:
            removed.append(entry)
        else:
            kept.append(entry)
    total = 0
    for number, entry in enumerate(sorted(kept, key=lambda e: e.last_used, reverse=True)):
        total += entry.size
        if number >= bounds.max_entries or total > bounds.max_bytes:
            removed.append(entry)
            total -= entry.size
    return removed


def prune(
    client: DockerClient,
    bounds: Bounds,
    *,
    everything: bool = False,
    orphan: Callable[[Entry], bool],
    repository: str | None = None,
    now: float | None = None,
) -> list[Entry]:
    """Remove what `to_remove` picks; the entries removed (one a container uses stays).

    With `repository`, only that repository's entries are looked at (the
    bounds then hold for it alone).
    """
    now = time.time() if now is None else now
    entries = [
        entry
        for entry in list_entries(client)
        if repository is None or entry.repository == repository
    ]
    chosen = to_remove(entries, bounds, now=now, orphan=orphan, everything=everything)
    return [entry for entry in chosen if remove_entry(client, entry)]


def _setup_label(setup: SetupOutcome) -> str:
    # Output tails stay out: a label is no place for a failure's log, and only
    # a setup that succeeded is shared.
    steps = [{**step.to_json(), "tail": ""} for step in setup.steps]
    return json.dumps({"mode": setup.mode, "steps": steps, "notes": list(setup.notes)})


def _read_setup(text: str | None) -> SetupOutcome | None:
    try:
        data = json.loads(text or "")
        steps = tuple(StepOutcome.from_json(step) for step in data["steps"])
        notes = tuple(str(note) for note in data.get("notes", ()))
        mode = data["mode"]
        if mode not in ("auto", "explicit", "off"):
            return None
        return SetupOutcome(mode, steps, notes)
    except (ValueError, KeyError, TypeError):
        return None


def _entry(attrs: Mapping[str, Any], reference: str, *, base_size: int = 0) -> Entry | None:
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    if labels.get(LABEL_ENV) != "1":
        return None
    try:
        created = float(labels.get(LABEL_CREATED, ""))
    except ValueError:
        created = 0.0
    last_used = _timestamp((attrs.get("Metadata") or {}).get("LastTagTime")) or created
    size = int(attrs.get("Size") or 0)
    return Entry(
        image_id=str(attrs["Id"]),
        reference=reference,
        repository=labels.get(LABEL_REPOSITORY, ""),
        created=created,
        last_used=max(last_used, created),
        size=max(size - base_size, 0),
        setup=_read_setup(labels.get(LABEL_SETUP)),
        job=labels.get(LABEL_JOB),
        owner=labels.get(LABEL_OWNER, ""),
        owner_process=labels.get(LABEL_OWNER_PROCESS),
    )


def _base_size(client: DockerClient, attrs: Mapping[str, Any], sizes: dict[str, int]) -> int:
    base = ((attrs.get("Config") or {}).get("Labels") or {}).get(LABEL_BASE, "")
    if base and base not in sizes:
        try:
            sizes[base] = int(client.images.get(base).attrs.get("Size") or 0)
        except (DockerException, ValueError):
            sizes[base] = 0
    return sizes.get(base, 0)


def _timestamp(text: object) -> float | None:
    """Docker's RFC 3339 time (to the nanosecond) as Unix seconds; None for its zero time."""
    match = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if match is None or match[1].startswith("0001-"):
        return None
    zone = "+00:00" if match[3] in (None, "Z") else match[3]
    fraction = f".{match[2][:6]}" if match[2] else ""
    return datetime.datetime.fromisoformat(f"{match[1]}{fraction}{zone}").timestamp()
