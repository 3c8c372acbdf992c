"""ChatGPT sign-in: the device-code login, token refresh and stored credentials."""

from runner.auth.credentials import Credentials
from runner.auth.device_flow import DeviceCode
from runner.auth.endpoints import Endpoints, endpoints
from runner.auth.errors import AuthError, CredentialsFileError, NotSignedIn
from runner.auth.lock import sign_in_lock
from runner.auth.oauth import sign_in
from runner.auth.sign_out import SignedOut, sign_out
from runner.auth.storage import (
    credentials_path,
    delete_credentials,
    load_credentials,
    save_credentials,
)
from runner.auth.tokens import ChatGPTTokens

__all__ = [
    "AuthError",
    "ChatGPTTokens",
    "Credentials",
    "CredentialsFileError",
    "DeviceCode",
    "Endpoints",
    "NotSignedIn",
    "SignedOut",
    "credentials_path",
    "delete_credentials",
    "endpoints",
    "load_credentials",
    "save_credentials",
    "sign_in",
    "sign_in_lock",
    "sign_out",
]
