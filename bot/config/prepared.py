"""How many prepared environments a host keeps, and for how long: `NEO_PREPARED_*`.

Read by the service (`Settings` has these fields) and by `neo env prune`,
which needs none of the service's other settings.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from runner.sandbox.requests import Bounds

__all__ = ["PreparedSettings"]

GB = 1_000_000_000


class PreparedSettings(BaseSettings):
    """The bounds of the prepared environments kept on this host (docs/setup.md)."""

    model_config = SettingsConfigDict(env_prefix="NEO_", extra="ignore", frozen=True)

    # Hours an environment is kept unused before it expires.
    prepared_max_age: float = Field(default=24.0, gt=0, le=24 * 365, allow_inf_nan=False)
    # Environments kept at most; 0 keeps none (every job sets up afresh).
    prepared_max_count: int = Field(default=20, ge=0, le=10_000)
    # Gigabytes (10^9 bytes) they may take together, beyond their base images.
    prepared_max_gb: float = Field(default=20.0, ge=0, le=100_000, allow_inf_nan=False)

    def prepared_bounds(self) -> Bounds:
        return Bounds(
            max_age=self.prepared_max_age * 3600,
            max_entries=self.prepared_max_count,
            max_bytes=int(self.prepared_max_gb * GB),
        )
