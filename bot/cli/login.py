"""`neo login chatgpt` and `neo logout`: the ChatGPT sign-in from a terminal.

Only the verification page and the one-time code are printed; tokens go
straight to `$NEO_HOME/auth/chatgpt.json` and never to the terminal. Storing
and deleting them hold the sign-in lock a refreshing process holds; signing
out also revokes the sign-in at OpenAI, best effort.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from bot.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from runner.auth import (
    AuthError,
    Credentials,
    DeviceCode,
    credentials_path,
    endpoints,
    save_credentials,
    sign_in,
    sign_in_lock,
    sign_out,
)
from runner.errors import ConfigError
from runner.home import check_home, neo_home

__all__ = ["add_login_parser", "add_logout_parser", "login_command", "logout_command"]

SERVICES = ("chatgpt",)


def add_login_parser(commands: Any) -> None:
    login = commands.add_parser(
        "login",
        help="sign in to a model subscription (ChatGPT)",
        description=(
            "Sign in with a device code: open the page shown, enter the code, and Neo "
            "stores the credentials for `--openai-auth subscription`."
        ),
    )
    login.add_argument("service", choices=SERVICES, help="what to sign in to")


def add_logout_parser(commands: Any) -> None:
    logout = commands.add_parser(
        "logout",
        help="forget the stored ChatGPT sign-in",
        description=(
            "Delete the credentials `neo login chatgpt` stored and revoke the sign-in"
            " at OpenAI (best effort: the file goes even when OpenAI cannot be reached)."
        ),
    )
    logout.add_argument("service", nargs="?", choices=SERVICES, default="chatgpt")


def _show(code: DeviceCode) -> None:
    print(
        f"To sign in to ChatGPT, open {code.verification_url}\n"
        f"and enter the code {code.user_code} (it expires in 15 minutes; never share it).\n"
        "Waiting for approval...",
        flush=True,
    )


async def _login(home: Path) -> tuple[Credentials, Path]:
    credentials = await sign_in(endpoints(), _show)
    async with sign_in_lock(home):
        return credentials, save_credentials(home, credentials)


def login_command(args: argparse.Namespace) -> int:
    home = neo_home()
    try:
        check_home(home)
        if os.path.lexists(credentials_path(home)) and not credentials_path(home).is_file():
            # Found now, not after the user has gone through the sign-in.
            raise ConfigError(f"{credentials_path(home)} is not a regular file; remove it first")
        credentials, path = asyncio.run(_login(home))
    except KeyboardInterrupt:
        print("neo: sign-in cancelled", file=sys.stderr)
        return EXIT_INTERRUPTED
    except AuthError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"neo: error: cannot store the credentials: {error.strerror}", file=sys.stderr)
        return EXIT_FAILED
    print(f"Signed in to ChatGPT (account {credentials.account_id}); credentials in {path}")
    return EXIT_OK


def logout_command(args: argparse.Namespace) -> int:
    home = neo_home()
    path = credentials_path(home)
    try:
        check_home(home)
        done = asyncio.run(sign_out(home, endpoints()))
    except ConfigError as error:  # the home, or the credentials' path, holds something else
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except AuthError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as error:
        print(f"neo: error: cannot delete the credentials: {error.strerror}", file=sys.stderr)
        return EXIT_FAILED
    if not done.deleted:
        print("Not signed in to ChatGPT: there were no stored credentials")
    elif done.revoked:
        print(f"Signed out of ChatGPT: revoked the sign-in and deleted {path}")
    else:
        print(f"Signed out of ChatGPT: deleted {path}")
        print(
            f"neo: warning: the sign-in was not revoked ({done.problem}); "
            "its tokens stay valid until they lapse",
            file=sys.stderr,
        )
    return EXIT_OK
