"""`neo setup-app`: the arguments of the App's manifest flow (`bot.setup.flow`)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bot.cli.argtypes import port
from bot.config.web import public_url_problem
from bot.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from bot.github.core import DEFAULT_API_URL
from bot.setup.flow import SetupOptions, run_setup, web_url
from bot.setup.manifest import DEFAULT_NAME, MAX_NAME_LENGTH, SIGN_IN_CALLBACK
from runner.errors import ConfigError, NeoError

__all__ = ["add_setup_app_parser", "setup_app_command"]

_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


def _http_url(text: str) -> str:
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected an http(s) URL, not {text!r}")
    return text.strip().rstrip("/")


def _public_url(text: str) -> str:
    problem = public_url_problem(text.strip())
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r} {problem}")
    return text.strip().rstrip("/")


def _org(text: str) -> str:
    if not _ORG.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not an organization login: {text!r}")
    return text


def _name(text: str) -> str:
    name = text.strip()
    if not name or len(name) > MAX_NAME_LENGTH:
        raise argparse.ArgumentTypeError(
            f"a GitHub App's name has 1 to {MAX_NAME_LENGTH} characters"
        )
    return name


def add_setup_app_parser(commands: Any) -> None:
    setup = commands.add_parser(
        "setup-app",
        help="create Neo's GitHub App in a browser and write its credentials to .env",
        description=(
            "Create Neo's GitHub App with GitHub's manifest flow: open the local page "
            "it prints, confirm on GitHub, and the App's id, private key and webhook "
            "secret are written to the env file (mode 0600) as NEO_* settings."
        ),
    )
    setup.add_argument(
        "--webhook-url",
        type=_http_url,
        required=True,
        metavar="URL",
        help="where GitHub sends the App's webhooks: neo serve's https://HOST/api/github/webhooks",
    )
    setup.add_argument(
        "--org", type=_org, metavar="ORG", help="create the App in this organization"
    )
    setup.add_argument(
        "--public-url",
        type=_public_url,
        metavar="URL",
        help=(
            "where people reach neo serve (default: NEO_PUBLIC_URL): the App's callback "
            f"for signing in to run pages is URL{SIGN_IN_CALLBACK}"
        ),
    )
    setup.add_argument(
        "--name",
        type=_name,
        default=DEFAULT_NAME,
        help=f"the App's name, unique on GitHub; editable there (default: {DEFAULT_NAME})",
    )
    setup.add_argument(
        "--port", type=port, default=0, help="local port of the flow (default: any free port)"
    )
    setup.add_argument(
        "--env-file", type=Path, default=Path(".env"), metavar="PATH", help="default: .env"
    )
    setup.add_argument("--force", action="store_true", help="replace an existing env file")
    setup.add_argument(
        "--api-url",
        type=_http_url,
        metavar="URL",
        help=f"GitHub's REST API (default: NEO_GITHUB_API_URL, else {DEFAULT_API_URL})",
    )
    setup.add_argument(
        "--github-url",
        type=_http_url,
        metavar="URL",
        help="GitHub's web address (default: the API URL's: https://github.com, https://HOST)",
    )


def setup_app_command(args: argparse.Namespace) -> int:
    try:
        api_url = args.api_url or _env_api_url()
        options = SetupOptions(
            webhook_url=args.webhook_url,
            env_file=args.env_file,
            api_url=api_url,
            github_url=args.github_url or web_url(api_url),
            org=args.org,
            public_url=args.public_url or _env_public_url(),
            name=args.name,
            port=args.port,
            force=args.force,
        )
        app = run_setup(options, sys.stdout)
    except ConfigError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except NeoError as error:
        print(f"neo: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("neo: setup-app stopped; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"Created the GitHub App {app.name} (id {app.app_id}): {app.html_url}")
    print(
        f"Wrote its id, private key, webhook secret and OAuth client to {options.env_file} "
        "(mode 0600)."
    )
    if not options.public_url:
        print(
            "To sign in to run pages of private repositories: set NEO_PUBLIC_URL and add "
            f"<NEO_PUBLIC_URL>{SIGN_IN_CALLBACK} as a callback URL in the App's settings."
        )
    if app.webhook_secret is None:
        print(
            "neo: warning: GitHub sent no webhook secret: set one in the App's settings "
            f"and add it to {options.env_file} as NEO_WEBHOOK_SECRET",
            file=sys.stderr,
        )
    print(f"Install it on your repositories: {app.install_url}")
    return EXIT_OK


def _env_public_url() -> str | None:
    value = os.environ.get("NEO_PUBLIC_URL", "").strip()
    if not value:
        return None
    try:
        return _public_url(value)
    except argparse.ArgumentTypeError:
        raise ConfigError(
            f"NEO_PUBLIC_URL {public_url_problem(value)} (or pass --public-url)"
        ) from None


def _env_api_url() -> str:
    value = os.environ.get("NEO_GITHUB_API_URL", "").strip()
    if not value:
        return DEFAULT_API_URL
    try:
        return _http_url(value)
    except argparse.ArgumentTypeError:
        raise ConfigError("NEO_GITHUB_API_URL must be an http(s) URL") from None
