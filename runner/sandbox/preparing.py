"""A docker sandbox on its prepared environment: reused, set up now, or none at all.

    async with open_prepared(client, tree, image=..., job_id=..., request=request) as opened:
        opened.box, opened.setup          # the agent's sandbox; what setup did (or did before)

Setup runs in a container of its own, under setup's network policy. Once
its commands are done that container is stopped, which ends every process
setup started, and committed; the agent's sandbox then starts from that
image, under the agent's policy (the job's one egress proxy serves both).
The image is kept as the repository's prepared environment
(`runner.sandbox.prepared`) when the request may share it and every command
succeeded, so that the next job whose key matches starts from it and skips
setup; otherwise it is the job's alone and removed when the job ends.
docs/setup.md says it for users.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from docker import DockerClient
from docker.errors import DockerException

from runner.network.relay import proxy_environment
from runner.sandbox.docker import (
    AGENT,
    LABEL_OWNER,
    LABEL_STARTED,
    DockerSandbox,
    Egress,
    Limits,
    Role,
    is_orphan,
    process_alive,
)
from runner.sandbox.owners import LABEL_PROCESS, owner_labels
from runner.sandbox.prepared import (
    Entry,
    JobImage,
    commit_environment,
    environment_key,
    find_entry,
    prune,
    remove_entry,
)
from runner.sandbox.requests import EnvironmentRequest, Opened
from runner.sandbox.setup_plan import SetupOutcome
from runner.sandbox.setup_run import run_setup

__all__ = ["Phased", "open_prepared", "orphaned"]

log = logging.getLogger("neo.sandbox")
_LIMITS = Limits()
# A setup container's request ids start here, so that the egress proxy's log
# (which names commands by id) never takes one for the agent's.
SETUP_FIRST_ID = 1 << 23
# A setup container: under setup's policy, its commands given the proxy's
# variables one by one so that the committed image keeps none.
_SETUP = Role("setup", env_root=True, first_id=SETUP_FIRST_ID, proxy_env=False)


class Phased(Egress, Protocol):
    """An egress proxy told which policy it serves first (`EgressProxy.begin`)."""

    def begin(self, phase: Literal["setup", "agent"]) -> None: ...


@dataclass(frozen=True, slots=True)
class _Starts:
    """How this job's containers start: the setup one and the agent's differ
    only in their image and role."""

    client: DockerClient
    tree: Path
    job_id: str
    egress: Phased | None
    limits: Limits
    give_tree: bool

    def start(
        self, image: str, role: Role = AGENT
    ) -> contextlib.AbstractAsyncContextManager[DockerSandbox]:
        job_id = f"{self.job_id}-setup" if role.phase == "setup" else self.job_id
        return DockerSandbox.start(
            self.tree,
            image=image,
            job_id=job_id,
            egress=self.egress,
            role=role,
            limits=self.limits,
            client=self.client,
            give_tree=self.give_tree,
        )

    def begin(self, phase: Literal["setup", "agent"]) -> None:
        """Tell the proxy, as soon as it is known, which policy it serves first."""
        if self.egress is not None:
            self.egress.begin(phase)


@contextlib.asynccontextmanager
async def open_prepared(
    client: DockerClient,
    tree: Path,
    *,
    image: str,
    job_id: str,
    request: EnvironmentRequest,
    image_id: str | None = None,
    egress: Phased | None = None,
    limits: Limits = _LIMITS,
    give_tree: bool = False,
) -> AsyncIterator[Opened]:
    """The agent's sandbox on `tree`, on the environment `request` asks for.

    With `egress`, setup reaches the network through it under setup's
    policy, and the agent under the agent's; when no setup runs, the proxy
    serves the agent's from the start. A repository command that fails
    raises SetupFailed; a detected one that fails is in the outcome, and
    the job goes on. `give_tree`: as `DockerSandbox.start` takes it, for
    each container. `image_id`: `image`'s, when the caller has it.
    """
    plan = request.plan
    starts = _Starts(client, tree, job_id, egress, limits, give_tree)
    start = starts.start
    if not plan.steps:
        starts.begin("agent")
        async with start(image) as box:
            yield Opened(box, SetupOutcome(plan.mode, notes=plan.notes), box.command_text)
        return
    base = image_id or str((await asyncio.to_thread(client.images.get, image)).id)
    key = None
    if request.repository is not None:
        key = environment_key(
            repository=request.repository, plan=plan, files=request.files, base_image=base
        )
        try:
            entry = await asyncio.to_thread(find_entry, client, key, request.bounds)
        except DockerException as error:
            # The engine is shared: a failed look-up costs a setup, not the job.
            log.warning("looking up a prepared environment failed: %s", error)
            entry = None
        if entry is not None:
            starts.begin("agent")
            reused = entry.setup or SetupOutcome(plan.mode)
            outcome = replace(reused, notes=plan.notes, reused_from=entry.created)
            async with start(entry.reference) as box:
                yield Opened(box, outcome, box.command_text)
            return
    setup_box, outcome, prepared = await _set_up(starts, base, request, key)
    try:
        async with start(prepared) as box:

            def command_text(ident: int) -> str | None:
                owner = setup_box if ident >= SETUP_FIRST_ID else box
                return owner.command_text(ident)

            yield Opened(box, outcome, command_text)
    finally:
        if not outcome.kept:
            with contextlib.suppress(DockerException, OSError):
                await asyncio.to_thread(
                    remove_entry, client, Entry(prepared, "", "", 0.0, 0.0, 0, job=job_id)
                )


async def _set_up(
    starts: _Starts, base: str, request: EnvironmentRequest, key: str | None
) -> tuple[DockerSandbox, SetupOutcome, str]:
    """Run the plan in a setup container and commit it; the container (stopped
    and removed, its commands still named), the outcome and the image's id."""
    client = starts.client
    starts.begin("setup")
    async with starts.start(base, _SETUP) as box:
        env = proxy_environment() if starts.egress is not None else None
        outcome = await run_setup(box, request.plan, env=env)
        # Every process setup started ends with the container.
        await box.stop()
        share = key is not None and request.share and outcome.ok
        outcome = replace(outcome, kept=share)
        image = await asyncio.to_thread(
            commit_environment,
            client,
            box.container,
            key=key if share and key is not None else _private(starts.job_id),
            repository=request.repository or "",
            base_image=base,
            setup=outcome,
        )
    if share:
        # Bounds hold after each new entry; the engine is shared, so a prune
        # that fails is logged and the job goes on.
        try:
            await asyncio.to_thread(prune, client, request.bounds, orphan=orphaned)
        except (DockerException, OSError) as error:
            log.warning("pruning prepared environments failed: %s", error)
    return box, outcome, image


def _private(job_id: str) -> JobImage:
    """The key of job `job_id`'s private image, made by this runner."""
    owner = owner_labels()
    return JobImage(job_id, owner[LABEL_OWNER], owner.get(LABEL_PROCESS))


def orphaned(entry: Entry, *, max_age: float = 6 * 3600.0) -> bool:
    """Whether a job's private image outlived its job (its runner is gone)."""
    labels = {LABEL_OWNER: entry.owner, LABEL_STARTED: str(entry.created)}
    if entry.owner_process is not None:
        labels[LABEL_PROCESS] = entry.owner_process
    return is_orphan(
        labels, host=socket.gethostname(), now=time.time(), max_age=max_age, alive=process_alive
    )
