"""bot.config.docs: where the links in Neo's comments lead."""

from __future__ import annotations

import pytest

from bot.config.docs import DEFAULT_DOCS_URL, action_docs_url, docs_page, docs_url_problem
from runner.errors import ConfigError


def test_a_page_is_an_absolute_url_under_the_base() -> None:
    assert docs_page("https://h.example/o/neo/blob/main/docs/", "configuration.md") == (
        "https://h.example/o/neo/blob/main/docs/configuration.md"
    )
    assert docs_url_problem(DEFAULT_DOCS_URL) is None


@pytest.mark.parametrize(
    "url",
    ["docs", "/docs", "ftp://h.example/docs", "https://", "https://h.example/a)b", "https://h/a b"],
)
def test_a_base_no_markdown_link_can_use_is_refused(url: str) -> None:
    assert docs_url_problem(url) is not None


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, DEFAULT_DOCS_URL),
        # `uses: acme/neo-fork@v2`: the fork's own docs at the ref the workflow runs.
        (
            {"GITHUB_ACTION_PATH": "/home/runner/work/_actions/acme/neo-fork/v2"},
            "https://github.com/acme/neo-fork/blob/v2/docs",
        ),
        (
            {"GITHUB_ACTION_PATH": "/home/runner/work/_actions/acme/neo/release/v2/"},
            "https://github.com/acme/neo/blob/release/v2/docs",
        ),
        # `uses: ./`: a checkout, whose ref is not known.
        ({"GITHUB_ACTION_PATH": "/home/runner/work/app/app"}, DEFAULT_DOCS_URL),
        (
            {
                "NEO_DOCS_URL": "https://docs.corp.example/neo",
                "GITHUB_ACTION_PATH": "/home/runner/work/_actions/acme/neo/v2",
            },
            "https://docs.corp.example/neo",
        ),
    ],
)
def test_an_action_links_neo_docs_or_its_forks(environ: dict[str, str], expected: str) -> None:
    assert action_docs_url(environ, "https://github.com") == expected


def test_an_action_on_ghes_links_the_servers_copy() -> None:
    path = {"GITHUB_ACTION_PATH": "/runner/_work/_actions/tools/neo/v1"}
    assert action_docs_url(path, "https://ghe.corp.example") == (
        "https://ghe.corp.example/tools/neo/blob/v1/docs"
    )


def test_an_action_with_a_bad_neo_docs_url_fails_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^NEO_DOCS_URL: must be an absolute http"):
        action_docs_url({"NEO_DOCS_URL": "docs/"}, "https://github.com")
