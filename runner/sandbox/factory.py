"""Opening the sandbox a run asks for, by name."""

from __future__ import annotations

import ipaddress
import os
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner.errors import ConfigError
from runner.network import EgressReport, Plan
from runner.sandbox.base import Sandbox, SandboxError
from runner.sandbox.isolation import SandboxUnavailable, refusal
from runner.sandbox.local import LocalSandbox
from runner.sandbox.requests import EnvironmentRequest, Opened
from runner.sandbox.setup_plan import SetupOutcome, SetupPlan, StepOutcome, explicit_plan
from runner.sandbox.setup_run import SetupFailed, output_tail
from runner.text import one_line

if TYPE_CHECKING:
    from runner.sandbox.launch import Launch

SANDBOXES = ("local", "docker")
DEFAULT_IMAGE = "neo-sandbox:local"
# How old another host's sandbox container must be before a start removes it
# as left over from a crash; containers of this host's runners are removed as
# soon as their runner is gone.
MAX_JOB_SECONDS = 6 * 3600.0
SETUP_TIMEOUT = 600.0
LOCAL_NO_SETUP = "the local sandbox runs no automatic setup"
# Where a job's image comes from, for the error that says it is wrong; `neo run`
# passes its own flag instead.
JOB_IMAGE_SETTINGS = "sandbox_image in .github/neo.yml or NEO_SANDBOX_IMAGE"
# The Docker networks a job's egress proxy reaches the outside from, comma
# separated; unset: Neo's own `neo-egress`, created on first use.
EGRESS_NETWORKS_VARIABLE = "NEO_EGRESS_NETWORK"
# The DNS servers a job's egress proxy resolves names with, comma separated
# addresses; unset: the engine's (Docker forwards to the host's resolvers).
EGRESS_DNS_VARIABLE = "NEO_EGRESS_DNS"


@dataclass(frozen=True, slots=True)
class SandboxChoice:
    """The sandbox a run asked for, and the settings its errors name to change it."""

    kind: str  # one of SANDBOXES
    image: str | None = None  # docker only; None: DEFAULT_IMAGE
    # Where the image came from: a job's configuration, or `neo run`'s flag.
    image_setting: str = JOB_IMAGE_SETTINGS
    # How to choose the docker sandbox instead of a local one that cannot start.
    local_instead: str = "--sandbox docker"


@asynccontextmanager
async def open_sandbox(
    choice: SandboxChoice,
    tree: Path,
    *,
    job_id: str,
    setup: Sequence[str] = (),
    network: Plan | None = None,
    report: EgressReport | None = None,
    setup_timeout: float = SETUP_TIMEOUT,
) -> AsyncIterator[Sandbox]:
    """The sandbox `choice` names on `tree`, cleaned up when the block ends.

    `setup` commands (the repository's, e.g. installing dependencies) run
    first; a failing one raises SandboxError. `open_environment` says the
    rest: the network, the report, the errors.
    """
    request = EnvironmentRequest(explicit_plan(setup, {}, timeout=setup_timeout))
    async with open_environment(
        choice, tree, job_id=job_id, environment=request, network=network, report=report
    ) as opened:
        yield opened.box


@asynccontextmanager
async def launch_sandbox(
    choice: SandboxChoice, *, job_id: str, network: bool
) -> AsyncIterator[Launch | None]:
    """Begin the start of the sandbox `choice` names before its tree is there,
    for `open_environment(launch=...)` to finish: a docker sandbox's engine
    checked and swept and, when the job has a network (`network`), its egress
    proxy's container started (`runner.sandbox.launch`), while the job clones.
    None for the local sandbox, which has nothing to begin. What is left is
    removed when the block ends; errors are raised by `open_environment`."""
    if choice.kind != "docker":
        yield None
        return
    from runner.sandbox.launch import Launch

    image = choice.image or DEFAULT_IMAGE
    launch = Launch(image, choice.image_setting, job_id=job_id, network=network)
    try:
        yield launch
    finally:
        await launch.aclose()


@asynccontextmanager
async def open_environment(
    choice: SandboxChoice,
    tree: Path,
    *,
    job_id: str,
    environment: EnvironmentRequest | None = None,
    network: Plan | None = None,
    report: EgressReport | None = None,
    give_tree: bool = False,
    launch: Launch | None = None,
) -> AsyncIterator[Opened]:
    """The sandbox `choice` names on `tree` with its setup done, cleaned up when the block ends.

    In a docker sandbox the environment is the one `environment` asks for
    (`runner.sandbox.preparing`): reused, or set up now. It reaches the
    network only through an egress proxy started for `network` (None or
    off: no network at all), with `network.setup` during setup and
    `network.agent` after; when the block ends, `report` gets the requests
    the proxy refused. The local sandbox runs only the repository's own
    commands, never detected ones, and cannot enforce a network policy:
    its commands have the host's network, whatever `network` says.

    Raises ConfigError for what the caller can fix (an unknown kind, no
    Docker engine, an invalid or missing image, a system that cannot
    isolate the local sandbox: each naming the setting of `choice` that
    changes it), SetupFailed when a repository setup command fails, and
    SandboxError when starting fails. `launch`: the start `launch_sandbox`
    began for this sandbox.
    """
    request = environment or EnvironmentRequest(SetupPlan("off"))
    if choice.kind == "local":
        async with _open_local(choice, tree, request) as opened:
            yield opened
        return
    if choice.kind != "docker":
        raise ConfigError(f"unknown sandbox {choice.kind!r} (--sandbox: {', '.join(SANDBOXES)})")
    async with _open_docker(
        choice, tree, job_id, request, network, report, give_tree=give_tree, launch=launch
    ) as opened:
        yield opened


@asynccontextmanager
async def _open_docker(
    choice: SandboxChoice,
    tree: Path,
    job_id: str,
    request: EnvironmentRequest,
    network: Plan | None,
    report: EgressReport | None,
    *,
    give_tree: bool,
    launch: Launch | None,
) -> AsyncIterator[Opened]:
    """The docker sandbox on `tree`, behind its egress proxy: `open_environment` says it."""
    # The docker SDK loads only for runs that use it.
    from docker.errors import DockerException

    from runner.network.proxy import EgressProxy
    from runner.sandbox.launch import Launch
    from runner.sandbox.preparing import open_prepared

    wanted = network is not None and not network.off
    async with AsyncExitStack() as stack:
        if launch is None:
            name = choice.image or DEFAULT_IMAGE
            launch = Launch(name, choice.image_setting, job_id=job_id, network=wanted)
            stack.push_async_callback(launch.aclose)
        started = await launch.engine()
        proxy = started.proxy if wanted else None
        if wanted and proxy is None:
            # Launched as a job without a network: not one `launch_sandbox` is given.
            proxy = await EgressProxy.launch(
                started.client, job_id=job_id, networks=egress_networks(), dns=egress_dns()
            )
            stack.push_async_callback(proxy.aclose)
        if proxy is not None and network is not None:
            proxy.configure(network)
        try:
            opened = await stack.enter_async_context(
                open_prepared(
                    started.client,
                    tree,
                    image=choice.image or DEFAULT_IMAGE,
                    image_id=started.image_id,
                    job_id=job_id,
                    request=request,
                    egress=proxy,
                    give_tree=give_tree,
                )
            )
        except DockerException as error:
            raise SandboxError(f"the sandbox's environment failed: {one_line(error)}") from None
        try:
            yield opened
        finally:
            if proxy is not None:
                # Gone with the sandbox, whoever launched it; its last requests
                # are in the log then.
                await stack.aclose()
                await proxy.aclose()
                if report is not None:
                    report.blocked = proxy.blocked(opened.command_text)


@asynccontextmanager
async def _open_local(
    choice: SandboxChoice, tree: Path, request: EnvironmentRequest
) -> AsyncIterator[Opened]:
    """The local sandbox on `tree`, the repository's own setup commands run."""
    if choice.image is not None:
        raise ConfigError("--image applies to --sandbox docker only")
    box = LocalSandbox(tree)
    try:
        try:
            await box.start()
        except SandboxUnavailable as error:
            # The system's settings, which the operator can change or avoid.
            raise ConfigError(refusal(error.reason, choice.local_instead)) from None
        yield Opened(box, await _local_setup(box, request.plan))
    finally:
        await box.aclose()


async def _local_setup(box: LocalSandbox, plan: SetupPlan) -> SetupOutcome:
    """The repository's own commands, run in the tree as they are; none detected."""
    if plan.mode == "auto":
        return SetupOutcome("auto", notes=(LOCAL_NO_SETUP,))
    steps: list[StepOutcome] = []
    for step in plan.steps:
        started = time.monotonic()
        done = await box.run(["bash", "-c", step.command], timeout=step.timeout)
        seconds = time.monotonic() - started
        if done.timed_out or done.exit_code != 0:
            tail = output_tail(done.output)
            ended = StepOutcome(step.command, None, seconds, done.exit_code, done.timed_out, tail)
            how = "timed out" if done.timed_out else f"failed with exit code {done.exit_code}"
            raise SetupFailed(
                f"setup command {one_line(step.command)!r} {how}",
                done,
                SetupOutcome(plan.mode, (*steps, ended)),
            )
        steps.append(StepOutcome(step.command, None, seconds, 0))
    return SetupOutcome(plan.mode, tuple(steps))


def egress_networks() -> tuple[str, ...]:
    """The networks of NEO_EGRESS_NETWORK, else Neo's own."""
    from runner.network.proxy import EGRESS_NETWORK

    names = os.environ.get(EGRESS_NETWORKS_VARIABLE, "").split(",")
    return tuple(name.strip() for name in names if name.strip()) or (EGRESS_NETWORK,)


def egress_dns() -> tuple[str, ...]:
    """The addresses of NEO_EGRESS_DNS (none: the engine's resolvers).

    Raises ConfigError naming an entry that is not an IP address.
    """
    found: list[str] = []
    for entry in os.environ.get(EGRESS_DNS_VARIABLE, "").split(","):
        if not entry.strip():
            continue
        try:
            found.append(str(ipaddress.ip_address(entry.strip())))
        except ValueError:
            raise ConfigError(
                f"{EGRESS_DNS_VARIABLE}: {one_line(entry.strip(), 60)!r} is not an IP address"
            ) from None
    return tuple(found)


async def check_local_sandbox(instead: str) -> None:
    """Raise ConfigError when this host cannot isolate the local sandbox, so a
    service refuses to start rather than fail every job; `instead` says how to
    choose the docker sandbox."""
    with tempfile.TemporaryDirectory(prefix="neo-local-check-") as scratch:
        box = LocalSandbox(Path(scratch))
        try:
            await box.start()
        except SandboxUnavailable as error:
            raise ConfigError(refusal(error.reason, instead)) from None
        finally:
            await box.aclose()
