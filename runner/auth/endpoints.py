"""Where the ChatGPT sign-in and the subscription backend live.

`NEO_CHATGPT_AUTH_URL` and `NEO_CHATGPT_BASE_URL` move them, for tests and
proxies; the defaults are OpenAI's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DEFAULT_AUTH_URL", "DEFAULT_BASE_URL", "Endpoints", "endpoints"]

DEFAULT_AUTH_URL = "https://auth.openai.com"
DEFAULT_BASE_URL = "https://chatgpt.com/backend-api/codex"


@dataclass(frozen=True, slots=True)
class Endpoints:
    auth_url: str
    base_url: str

    @property
    def user_code(self) -> str:
        return f"{self.auth_url}/api/accounts/deviceauth/usercode"

    @property
    def device_token(self) -> str:
        return f"{self.auth_url}/api/accounts/deviceauth/token"

    @property
    def verification(self) -> str:
        return f"{self.auth_url}/codex/device"

    @property
    def redirect_uri(self) -> str:
        return f"{self.auth_url}/deviceauth/callback"

    @property
    def oauth_token(self) -> str:
        return f"{self.auth_url}/oauth/token"

    @property
    def oauth_revoke(self) -> str:
        return f"{self.auth_url}/oauth/revoke"


def endpoints(env: Mapping[str, str] | None = None) -> Endpoints:
    values = os.environ if env is None else env
    auth = values.get("NEO_CHATGPT_AUTH_URL") or DEFAULT_AUTH_URL
    base = values.get("NEO_CHATGPT_BASE_URL") or DEFAULT_BASE_URL
    return Endpoints(auth.rstrip("/"), base.rstrip("/"))
