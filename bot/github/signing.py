"""The App's private key, read and checked once per process, and the JWTs signed with it.

githubkit hands PyJWT the key's PEM text, and PyJWT reads it again for every
JWT it signs: about 60 ms of CPU, as long as the signature itself takes
fifty times over. Reading it checks the key too (an RSA key's numbers are
verified, the costly part), which is why it happens once per key here, when
the App is built, and never again for that key in the process.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from githubkit import AppAuthStrategy, GitHubCore
from githubkit.auth.app import AppAuth, AppInstallationAuthStrategy

from runner.errors import ConfigError

__all__ = ["KEY_SETTINGS", "AppJWTAuth", "AppKeyStrategy", "InstallationKeyStrategy", "signing_key"]

KEY_SETTINGS = "NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH"


@functools.lru_cache(maxsize=8)
def signing_key(pem: str) -> rsa.RSAPrivateKey:
    """`pem`, an unencrypted PEM RSA private key, read; ConfigError if it is not one."""
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except TypeError:
        raise ConfigError(
            f"{KEY_SETTINGS}: the private key is encrypted; give the PEM GitHub issued"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise ConfigError(f"{KEY_SETTINGS}: not a PEM RSA private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError(f"{KEY_SETTINGS}: not an RSA key; GitHub Apps sign with RSA")
    return key


class AppJWTAuth(AppAuth):
    """githubkit's App and installation auth, signing with the key read once.

    The JWT's claims are githubkit's own: issued a minute back (clock drift),
    valid ten minutes. The repr leaves the key out.
    """

    def __repr__(self) -> str:
        return f"AppAuth(issuer={self.issuer!r})"

    def _create_jwt(self) -> str:
        issued = datetime.now(UTC) - timedelta(minutes=1)
        claims = {"iss": self.issuer, "iat": issued, "exp": issued + timedelta(minutes=10)}
        return jwt.encode(claims, signing_key(self.private_key), algorithm="RS256")


class AppKeyStrategy(AppAuthStrategy):
    """githubkit's App strategy, whose dataclass repr would print the private key."""

    def __repr__(self) -> str:
        return f"AppAuthStrategy(app_id={self.app_id!r})"

    def get_auth_flow(self, github: GitHubCore[Any]) -> httpx.Auth:
        return AppJWTAuth(github, self.app_id, self.private_key, self.client_id, self.client_secret)


class InstallationKeyStrategy(AppInstallationAuthStrategy):
    """githubkit's installation strategy, whose dataclass repr would print the App's key."""

    def __repr__(self) -> str:
        return f"InstallationAuth(installation_id={self.installation_id})"

    def get_auth_flow(self, github: GitHubCore[Any]) -> httpx.Auth:
        return AppJWTAuth(
            github,
            self.app_id,
            self.private_key,
            self.client_id,
            self.client_secret,
            self.installation_id,
            self.repositories,
            self.repository_ids,
            self.permissions,
        )
