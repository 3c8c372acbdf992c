"""A container force-removed, however many remove it at once.

A job's sandbox, its egress proxy and its MCP servers are removed when the
job ends, and sweeps remove what crashed runs left; two of these may meet on
one container. The engine answers the second with 409 while the first runs:
`remove_container` then waits for the container to be gone, so that a caller
that returns has left nothing behind.
"""

from __future__ import annotations

import contextlib

from docker import DockerClient
from docker.errors import APIError, DockerException, NotFound

__all__ = ["remove_container"]

# How long a removal waits for another one already under way (the engine's
# removal of a large container under load takes seconds).
REMOVAL_WAIT = 60


def remove_container(client: DockerClient, container: str) -> bool:
    """Force-remove `container` and its anonymous volumes; False when it was
    already gone or another removal took it."""
    try:
        client.api.remove_container(container, force=True, v=True)
    except NotFound:
        return False
    except APIError as error:
        if error.status_code != 409:
            raise
        with contextlib.suppress(DockerException, OSError):
            client.api.wait(container, timeout=REMOVAL_WAIT, condition="removed")
        return False
    return True
