"""Opening the sandbox a run asks for, by name."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from runner.errors import ConfigError
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.image import image_problem
from runner.sandbox.local import LocalSandbox
from runner.text import one_line

SANDBOXES = ("local", "docker")
DEFAULT_IMAGE = "neo-sandbox:local"
# How old another host's sandbox container must be before a start removes it
# as left over from a crash; containers of this host's runners are removed as
# soon as their runner is gone.
MAX_JOB_SECONDS = 6 * 3600.0
SETUP_TIMEOUT = 600.0
# Where a job's image comes from, for the error that says it is wrong; `neo run`
# passes its own flag instead.
JOB_IMAGE_SETTINGS = "sandbox_image in .github/neo.yml or NEO_SANDBOX_IMAGE"


@asynccontextmanager
async def open_sandbox(
    kind: str,
    tree: Path,
    *,
    job_id: str,
    image: str | None = None,
    setup: Sequence[str] = (),
    network: bool = False,
    setup_timeout: float = SETUP_TIMEOUT,
    max_job_seconds: float = MAX_JOB_SECONDS,
    image_setting: str = JOB_IMAGE_SETTINGS,
) -> AsyncIterator[Sandbox]:
    """The sandbox named `kind` on `tree`, cleaned up when the block ends.

    `setup` commands (the repository's, e.g. installing dependencies) run in
    it first; in a docker sandbox they get the network when `network` is
    set, which is taken away before the sandbox is handed out. A failing one
    raises SandboxError.

    Raises ConfigError for what the caller can fix (an unknown kind, no
    Docker engine, an invalid or missing image, named by `image_setting`) and
    SandboxError when starting fails.
    """
    if kind == "local":
        if image is not None:
            raise ConfigError("--image applies to --sandbox docker only")
        box = LocalSandbox(tree)
        try:
            for command in setup:
                done = await box.run(["bash", "-c", command], timeout=setup_timeout)
                if done.timed_out:
                    raise SandboxError(f"setup command {one_line(command)!r} timed out")
                if done.exit_code != 0:
                    raise SandboxError(
                        f"setup command {one_line(command)!r} failed"
                        f" with exit code {done.exit_code}"
                    )
            yield box
        finally:
            await box.aclose()
        return
    if kind != "docker":
        raise ConfigError(f"unknown sandbox {kind!r} (--sandbox: {', '.join(SANDBOXES)})")
    name = image or DEFAULT_IMAGE
    # Before the engine: it answers a malformed name with an HTTP 400, not a reason.
    problem = image_problem(name)
    if problem is not None:
        raise ConfigError(f"{image_setting}: {problem}")

    # The docker SDK loads only for runs that use it.
    from docker.errors import DockerException, ImageNotFound

    from runner.sandbox import docker as engine

    try:
        client = await asyncio.to_thread(engine.docker_client)
        await asyncio.to_thread(client.ping)
    except (SandboxError, DockerException) as error:
        raise ConfigError(
            f"docker is not reachable ({one_line(error)}); start dockerd or use --sandbox local"
        ) from None
    try:
        await asyncio.to_thread(client.images.get, name)
    except ImageNotFound:
        # Never pulled: jobs run only images built or loaded on this host.
        raise ConfigError(
            f"sandbox image {name} not found locally (build it with scripts/build-images, "
            f"or choose another with {image_setting})"
        ) from None
    except DockerException as error:
        raise SandboxError(f"cannot inspect sandbox image {name}: {one_line(error)}") from None
    await asyncio.to_thread(engine.sweep_orphans, client, max_age=max_job_seconds)
    async with engine.DockerSandbox.start(
        tree,
        image=name,
        job_id=job_id,
        client=client,
        network=network,
        setup=setup,
        setup_timeout=setup_timeout,
    ) as docker_box:
        yield docker_box
