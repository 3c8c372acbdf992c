from __future__ import annotations

from pathlib import Path

import pytest

from bot.config.docs import DEFAULT_DOCS_URL
from bot.config.settings import load_settings
from runner.errors import ConfigError

BASE = {
    "NEO_GITHUB_APP_ID": "12345",
    "NEO_WEBHOOK_SECRET": "s3cret",
    "NEO_GITHUB_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----...",
}


def test_defaults_follow_the_contract(tmp_path: Path) -> None:
    settings = load_settings({**BASE, "NEO_DATA_DIR": str(tmp_path)})

    assert settings.github_app_id == 12345
    assert settings.github_api_url == "https://api.github.com"
    assert settings.queue == f"sqlite:///{tmp_path / 'neo.db'}"
    assert settings.handle == "@neo"
    assert settings.sandbox == "docker"
    assert settings.sandbox_image == "neo-sandbox:local"
    assert settings.workers == 2
    assert settings.worker_lease == 60
    assert settings.network_ceiling is None  # no bound
    assert settings.docs_url == DEFAULT_DOCS_URL
    assert settings.webhook_secret.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


def test_values_are_read_and_normalised() -> None:
    settings = load_settings(
        {
            **BASE,
            "NEO_GITHUB_API_URL": "https://ghe.example.com/api/v3/",
            "NEO_QUEUE_URL": "sqlite:////srv/neo/queue.db",
            "NEO_ALLOWED_BOTS": "renovate[bot], dependabot[bot]",
            "NEO_HANDLE": "@helper",
            "NEO_WORKERS": "0",
            "NEO_WORKER_LEASE": "2",
            "NEO_NETWORK": "python, artifactory.corp.example:8443",
            "NEO_DOCS_URL": "https://git.corp.example/tools/neo/blob/v2/docs/",
            "UNRELATED": "ignored",
        }
    )

    assert settings.github_api_url == "https://ghe.example.com/api/v3"
    assert settings.queue == "sqlite:////srv/neo/queue.db"
    assert settings.allowed_bots == frozenset({"renovate[bot]", "dependabot[bot]"})
    assert settings.handle == "@helper"
    assert settings.workers == 0  # receive and queue only
    assert settings.worker_lease == 2
    assert settings.docs_url == "https://git.corp.example/tools/neo/blob/v2/docs"
    ceiling = settings.network_ceiling
    assert ceiling is not None
    assert [str(item) for item in ceiling.items] == ["python", "artifactory.corp.example:8443"]
    # The operator's hosts may be private addresses.
    assert all(host.trusted for host in ceiling.hosts)
    off = load_settings({**BASE, "NEO_NETWORK": "off"}).network_ceiling
    assert off is not None
    assert off.off


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"NEO_GITHUB_APP_ID": None}, "NEO_GITHUB_APP_ID is not set"),
        ({"NEO_GITHUB_APP_ID": "abc"}, "NEO_GITHUB_APP_ID: Input should be a valid integer"),
        ({"NEO_WEBHOOK_SECRET": None}, "NEO_WEBHOOK_SECRET is not set"),
        ({"NEO_WEBHOOK_SECRET": ""}, "NEO_WEBHOOK_SECRET: Value should have at least 1"),
        (
            {"NEO_GITHUB_PRIVATE_KEY": None},
            "NEO_GITHUB_PRIVATE_KEY or NEO_GITHUB_PRIVATE_KEY_PATH must be set",
        ),
        ({"NEO_HANDLE": "neo"}, "NEO_HANDLE: must be @ followed by a GitHub login"),
        ({"NEO_SANDBOX": "vm"}, "NEO_SANDBOX: Input should be 'docker' or 'local'"),
        ({"NEO_GITHUB_API_URL": "ftp://x"}, "NEO_GITHUB_API_URL: must be an http(s) URL"),
        ({"NEO_DOCS_URL": "docs/"}, "NEO_DOCS_URL: must be an absolute http(s) URL"),
        ({"NEO_DOCS_URL": "https://x.example/a b"}, "NEO_DOCS_URL: must not contain spaces"),
        ({"NEO_WORKERS": "-1"}, "NEO_WORKERS: Input should be greater than or equal to 0"),
        ({"NEO_WORKER_LEASE": "0"}, "NEO_WORKER_LEASE: Input should be greater than or equal to 1"),
        (
            {"NEO_WORKER_LEASE": "3601"},
            "NEO_WORKER_LEASE: Input should be less than or equal to 3600",
        ),
        ({"NEO_WORKER_LEASE": "1.5"}, "NEO_WORKER_LEASE: Input should be a valid integer"),
        ({"NEO_HANDLE": "@neo.bot"}, "NEO_HANDLE: must be @ followed by a GitHub login"),
        (
            {"NEO_BUDGET_REPO_DAILY_USD": "0"},
            "NEO_BUDGET_REPO_DAILY_USD: Input should be greater than 0",
        ),
        (
            {"NEO_BUDGET_INSTALLATION_DAILY_CEILING_USD": "lots"},
            "NEO_BUDGET_INSTALLATION_DAILY_CEILING_USD: Input should be a valid number",
        ),
        (
            {"NEO_NETWORK": "python,pyhton"},
            "NEO_NETWORK: unknown ecosystem 'pyhton' (one of: python, node, go, rust, ruby,",
        ),
        ({"NEO_NETWORK": ","}, "NEO_NETWORK: an empty list (write `off` for no network)"),
        ({"NEO_NETWORK": "127.0.0.1:8080"}, "NEO_NETWORK: '127.0.0.1:8080' is never reachable"),
        ({"NEO_PRICES": "{x"}, 'NEO_PRICES: expected a JSON list, e.g. [{"model": '),
        ({"NEO_PRICES": '[{"model": "m", "input": 1}]'}, "NEO_PRICES: output is missing"),
        (
            {"NEO_PRICES": '[{"model": "m", "input": -1, "output": 1}]'},
            "NEO_PRICES: input: Input should be greater than or equal to 0",
        ),
        ({"NEO_ALLOWED_BOTS": "[1]"}, "NEO_ALLOWED_BOTS: Input should be a valid string"),
        ({"NEO_ALLOWED_BOTS": "[a[bot]"}, "NEO_ALLOWED_BOTS: expected bot logins separated by"),
        ({"NEO_SANDBOX": "local"}, "NEO_SANDBOX: local runs the model's commands on this host"),
        (
            {"NEO_SANDBOX": "local", "NEO_ALLOW_LOCAL_SANDBOX": "0"},
            "NEO_SANDBOX: local runs the model's commands on this host",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(change: dict[str, str | None], message: str) -> None:
    environ = {**BASE, **change}
    values = {key: value for key, value in environ.items() if value is not None}

    with pytest.raises(ConfigError) as caught:
        load_settings(values)

    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_the_local_sandbox_starts_once_its_risk_is_acknowledged() -> None:
    settings = load_settings({**BASE, "NEO_SANDBOX": "local", "NEO_ALLOW_LOCAL_SANDBOX": "1"})

    assert settings.sandbox == "local"


def test_the_operators_mcp_settings_are_read_and_checked_at_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NEO_MCP_SENTRY_TOKEN", "s3cr3t")
    settings = load_settings(
        {**BASE, "NEO_MCP_COMMANDS": "mcp-server-time", "NEO_MCP_URLS": "http://127.0.0.1:8931/"}
    )

    operator = settings.mcp_operator
    assert operator.commands == ("mcp-server-time",)
    assert operator.urls == ("http://127.0.0.1:8931/",)
    assert operator.secret("SENTRY_TOKEN") == "s3cr3t"
    with pytest.raises(ConfigError) as caught:
        load_settings({**BASE, "NEO_MCP_URLS": "127.0.0.1:8931"})
    assert str(caught.value) == "NEO_MCP_URLS: '127.0.0.1:8931' is not an http or https URL"
