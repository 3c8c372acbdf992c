"""The run page's settings: NEO_PUBLIC_URL, the App's OAuth client, GitHub's web host."""

from __future__ import annotations

import pytest

from bot.config.settings import load_settings
from runner.errors import ConfigError

BASE = {
    "NEO_GITHUB_APP_ID": "12345",
    "NEO_WEBHOOK_SECRET": "s3cret",
    "NEO_GITHUB_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----...",
}
CLIENT = {"NEO_GITHUB_CLIENT_ID": "Iv23liABCDEF", "NEO_GITHUB_CLIENT_SECRET": "c1ient-s3cret"}


def test_unset_there_are_no_links_and_no_sign_in() -> None:
    settings = load_settings(BASE)

    assert settings.public_url == ""
    assert not settings.sign_in
    assert settings.github_web == "https://github.com"


def test_sign_in_needs_the_public_url_and_the_client() -> None:
    settings = load_settings({**BASE, **CLIENT, "NEO_PUBLIC_URL": "https://neo.example.com/"})

    assert settings.public_url == "https://neo.example.com"
    assert settings.sign_in
    assert "c1ient-s3cret" not in repr(settings)
    # The client alone (an env file from neo setup-app, no public URL yet) starts, without sign-in.
    assert not load_settings({**BASE, **CLIENT}).sign_in


@pytest.mark.parametrize(
    ("environ", "web"),
    [
        ({}, "https://github.com"),
        ({"NEO_GITHUB_API_URL": "https://ghe.corp.example/api/v3"}, "https://ghe.corp.example"),
        ({"NEO_GITHUB_API_URL": "https://api.acme.ghe.com"}, "https://acme.ghe.com"),
        ({"NEO_GITHUB_WEB_URL": "https://gh.corp.example/"}, "https://gh.corp.example"),
    ],
)
def test_githubs_web_host_follows_the_api_url_unless_set(environ: dict[str, str], web: str) -> None:
    assert load_settings({**BASE, **environ}).github_web == web


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"NEO_PUBLIC_URL": "neo.example.com"}, "NEO_PUBLIC_URL: must be an http(s) URL"),
        ({"NEO_PUBLIC_URL": "ftp://neo.example.com"}, "NEO_PUBLIC_URL: must be an http(s) URL"),
        ({"NEO_PUBLIC_URL": "https://neo.example.com/neo"}, "NEO_PUBLIC_URL: must be the origin"),
        ({"NEO_PUBLIC_URL": "https://neo.example.com/?a=1"}, "NEO_PUBLIC_URL: must be the origin"),
        ({"NEO_PUBLIC_URL": "https://u:p@neo.example.com"}, "NEO_PUBLIC_URL: must not hold a user"),
        ({"NEO_PUBLIC_URL": "https://neo.example.com:x"}, "NEO_PUBLIC_URL: must be an http(s) URL"),
        ({"NEO_GITHUB_WEB_URL": "github.com"}, "NEO_GITHUB_WEB_URL: must be GitHub's web address"),
        (
            {"NEO_GITHUB_CLIENT_ID": "Iv23li"},
            "NEO_GITHUB_CLIENT_SECRET is not set, but NEO_GITHUB_",
        ),
        ({"NEO_GITHUB_CLIENT_SECRET": "x"}, "NEO_GITHUB_CLIENT_ID is not set, but NEO_GITHUB_CLIE"),
        (
            {**CLIENT, "NEO_GITHUB_CLIENT_ID": "Iv23li&x=1"},
            "NEO_GITHUB_CLIENT_ID: expected the App's client id",
        ),
        ({"NEO_SESSION_SECRET": "short"}, "NEO_SESSION_SECRET: must be at least 32 characters"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(change: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({**BASE, **change})

    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)
    assert "c1ient-s3cret" not in str(caught.value)
